"""The registry: every plugin berth knows, one line each, in kube's default-profile order.

Config validation (which names are filters, which score, which take args), the defaults (kube's
multiPoint order, score weights) and construction all derive from this list; nothing else names a plugin.
A plugin module exports NAME, Args and new(args, handle) (see berth.core.framework.interface.PluginModule).
"""

from __future__ import annotations

from dataclasses import dataclass

from berth.core import framework as fwk
from berth.core.plugins import (
    defaultpreemption,
    dynamicresources,
    imagelocality,
    interpodaffinity,
    loadawarescheduling,
    nodeaffinity,
    nodeports,
    nodeunschedulable,
    nodevolumelimits,
    podtopologyspread,
    schedulinggates,
    tainttoleration,
    volumebinding,
    volumerestrictions,
    volumezone,
)
from berth.core.plugins.noderesources import balancedallocation
from berth.core.plugins.noderesources import fit as noderesourcesfit


@dataclass(frozen=True)
class Registered:
    """A plugin module and its place in berth's default profile (kube's default multiPoint list):
    default=True enables it at every extension point it implements, in registry order; weight is
    its score weight there (None: 1, as kube's framework takes a missing weight)."""

    module: fwk.PluginModule
    default: bool = False
    weight: int | None = None


# kube's default profile (pkg/scheduler/apis/config/v1/default_plugins.go getDefaultPlugins, the
# MultiPoint list, with applyDynamicResources: DynamicResources before DefaultPreemption), in its order, with its weights, less the plugins berth does not implement
# (PrioritySort, NodeName, the in-tree EBS/GCEPD/AzureDisk limits,
# DefaultBinder); plus berth's VolumeBinding score (capacity priority) and
# LoadAwareScheduling (Koordinator's). docs/plugins.md has the table.
REGISTRY: tuple[Registered, ...] = (
    Registered(schedulinggates, default=True),
    Registered(nodeunschedulable, default=True),
    Registered(tainttoleration, default=True, weight=3),
    Registered(nodeaffinity, default=True, weight=2),
    Registered(nodeports, default=True),
    Registered(noderesourcesfit, default=True, weight=1),
    Registered(volumerestrictions, default=True),
    Registered(nodevolumelimits, default=True),
    Registered(volumebinding, default=True, weight=1),
    Registered(volumezone, default=True),
    Registered(podtopologyspread, default=True, weight=2),
    Registered(interpodaffinity, default=True, weight=2),
    Registered(dynamicresources, default=True, weight=2),  # kube 1.36: DRA is GA, its PostFilter first
    Registered(defaultpreemption, default=True),
    Registered(balancedallocation, default=True, weight=1),
    Registered(imagelocality, default=True, weight=1),
    Registered(loadawarescheduling, default=True, weight=1),
)
