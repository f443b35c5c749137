"""Every Kubernetes kind berth reads, registered in one place: (API group, kind) -> converter."""

from __future__ import annotations

from berth.core import convert
from berth.core.buffers import convert as buffers
from berth.core.convert import Converter
from berth.core.loadaware import convert as loadaware

CONVERTERS: dict[tuple[str, str], Converter] = {
    **convert.CONVERTERS,
    **loadaware.CONVERTERS,
    **buffers.CONVERTERS,
}
