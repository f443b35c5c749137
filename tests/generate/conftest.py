from __future__ import annotations

import pytest

from berth.core.api.watch import WatchEvent, encode_event
from berth.core.generate import PRESETS, generate


@pytest.fixture(scope="session")
def small() -> list[WatchEvent]:
    return list(generate(PRESETS["small"], 1))


@pytest.fixture(scope="session")
def cold_burst() -> list[WatchEvent]:
    return list(generate(PRESETS["cold-burst"], 1))


def encoded(events: list[WatchEvent]) -> bytes:
    return b"".join(encode_event(ev) + b"\n" for ev in events)
