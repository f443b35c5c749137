"""The registry: every plugin berth knows, one line each, in filter order.

Config validation (which names are filters, which score, which take args), the defaults (filter
order, score weights) and construction all derive from this list; nothing else names a plugin.
A plugin module exports NAME, Args and new(args, handle) (see berth.core.framework.PluginModule).
"""

from __future__ import annotations

from dataclasses import dataclass

from berth.core.framework import PluginModule
from berth.core.loadaware import plugin as loadawarescheduling
from berth.core.plugins import (
    interpodaffinity,
    nodeaffinity,
    noderesourcesfit,
    nodeunschedulable,
    podtopologyspread,
    tainttoleration,
    volumebinding,
)


@dataclass(frozen=True)
class Registered:
    """A plugin module and its place in the default profile: enabled as a filter (in registry
    order) and/or as a score with this weight (None: not scored by default)."""

    module: PluginModule
    filter: bool = False
    weight: int | None = None


REGISTRY: tuple[Registered, ...] = (
    Registered(nodeunschedulable, filter=True),
    Registered(nodeaffinity, filter=True),
    Registered(tainttoleration, filter=True),
    Registered(noderesourcesfit, filter=True),
    Registered(volumebinding, filter=True, weight=1),
    Registered(loadawarescheduling, filter=True, weight=1),
    # kube's default profile: filters after VolumeBinding/VolumeZone, scores with weight 2 each
    # (filter=True, weight=2); off in berth's default profile until it switches to kube's
    Registered(podtopologyspread),
    Registered(interpodaffinity),
)
