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
    defaultpreemption,
    imagelocality,
    interpodaffinity,
    nodeaffinity,
    nodeports,
    nodeunschedulable,
    nodevolumelimits,
    podtopologyspread,
    tainttoleration,
    volumebinding,
    volumerestrictions,
    volumezone,
)
from berth.core.plugins.noderesources import balancedallocation
from berth.core.plugins.noderesources import fit as noderesourcesfit


@dataclass(frozen=True)
class Registered:
    """A plugin module and its place in the default profile: enabled as a filter (in registry
    order) and/or as a score with this weight (None: not scored by default)."""

    module: PluginModule
    filter: bool = False
    weight: int | None = None
    post_filter: bool = False  # enabled as a PostFilter by default


REGISTRY: tuple[Registered, ...] = (
    Registered(nodeunschedulable, filter=True),
    Registered(nodeaffinity, filter=True),  # kube: filter, score weight 2
    Registered(tainttoleration, filter=True),  # kube: filter, score weight 3
    Registered(noderesourcesfit, filter=True),  # kube: filter, score weight 1 (LeastAllocated)
    Registered(volumebinding, filter=True, weight=1),
    Registered(loadawarescheduling, filter=True, weight=1),
    Registered(defaultpreemption, post_filter=True),  # kube: PostFilter
    # kube's default-profile plugins berth does not enable by default yet (the lead flips berth's
    # default profile to kube's in one change: docs/plugins.md, "The flip")
    Registered(balancedallocation),  # kube: score weight 1
    Registered(imagelocality),  # kube: score weight 1
    Registered(nodeports),  # kube: filter, after NodeAffinity
    Registered(volumerestrictions),  # kube: filter, after NodeResourcesFit
    Registered(nodevolumelimits),  # kube: filter, before VolumeBinding
    Registered(volumezone),  # kube: filter, after VolumeBinding
    # kube's default profile: filters after VolumeBinding/VolumeZone, scores with weight 2 each
    # (filter=True, weight=2); off in berth's default profile until it switches to kube's
    Registered(podtopologyspread),
    Registered(interpodaffinity),
)
