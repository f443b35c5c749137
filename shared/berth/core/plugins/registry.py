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


# A filter reason's plugin, by the reason's exact text or its start (the plugins' own constants), for
# showing reasons by plugin (berth evaluate -o wide, the replay report).
_REASONS: dict[str, str] = {
    interpodaffinity.REASON_AFFINITY: interpodaffinity.NAME,
    interpodaffinity.REASON_ANTI: interpodaffinity.NAME,
    interpodaffinity.REASON_EXISTING_ANTI: interpodaffinity.NAME,
    nodeaffinity.REASON: nodeaffinity.NAME,
    nodeaffinity.ENFORCED: nodeaffinity.NAME,
    nodeports.REASON: nodeports.NAME,
    tainttoleration.REASON: tainttoleration.NAME,
    nodeunschedulable.REASON: nodeunschedulable.NAME,
    nodevolumelimits.REASON: nodevolumelimits.NAME,
    podtopologyspread.REASON: podtopologyspread.NAME,
    podtopologyspread.REASON_MISSING: podtopologyspread.NAME,
    volumezone.REASON: volumezone.NAME,
    volumerestrictions.DISK_CONFLICT: volumerestrictions.NAME,
    volumerestrictions.RWOP_CONFLICT: volumerestrictions.NAME,
    volumebinding.NODE_CONFLICT: volumebinding.NAME,
    volumebinding.BIND_CONFLICT: volumebinding.NAME,
    volumebinding.NOT_ENOUGH_SPACE: volumebinding.NAME,
    volumebinding.PV_NOT_EXIST: volumebinding.NAME,
    volumebinding.UNBOUND_IMMEDIATE: volumebinding.NAME,
    loadawarescheduling.EXPIRED: loadawarescheduling.NAME,
}
_REASON_PREFIXES: tuple[tuple[str, str], ...] = (
    ("Insufficient ", noderesourcesfit.NAME),
    ("Too many pods", noderesourcesfit.NAME),
)


def plugin_of(reason: str) -> str | None:
    """The filter plugin that gives this reason, or None when berth does not know it."""
    got = _REASONS.get(reason)
    if got is not None:
        return got
    for prefix, name in _REASON_PREFIXES:
        if reason.startswith(prefix):
            return name
    if reason.endswith("usage exceed threshold"):
        return loadawarescheduling.NAME
    return None
