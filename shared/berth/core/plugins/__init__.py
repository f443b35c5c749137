"""Every policy berth knows, registered in one place."""

from __future__ import annotations

from berth.core.plugins.basic import (
    NodeAffinity,
    NodeResourcesFit,
    NodeUnschedulable,
    TaintToleration,
)
from berth.core.plugins.volumebinding import VolumeBinding

# Filter plugins in the order they run; reasons are listed in this order too.
FILTERS: tuple[str, ...] = (
    NodeUnschedulable.name,
    NodeAffinity.name,
    TaintToleration.name,
    NodeResourcesFit.name,
    VolumeBinding.name,
)
# Score plugins enabled by default, with their default weights.
SCORES: dict[str, int] = {VolumeBinding.name: 1}

PLUGIN_TYPES: dict[str, type] = {
    p.name: p for p in (NodeUnschedulable, NodeAffinity, TaintToleration, NodeResourcesFit, VolumeBinding)
}
