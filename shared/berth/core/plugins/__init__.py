"""Every policy berth knows, registered in one place."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from berth.core.loadaware import LoadAwareScheduling, parse_into
from berth.core.plugins.basic import NodeAffinity, NodeResourcesFit, NodeUnschedulable, TaintToleration
from berth.core.plugins.vbargs import parse_volume_binding_args
from berth.core.plugins.volumebinding import VolumeBinding
from berth.core.validation import Problems

ArgsParser = Callable[[Mapping[str, Any], str, Problems], Any]


@dataclass(frozen=True)
class Spec:
    """A plugin: how to make it (from parsed args or None), how to parse its args, where it runs."""

    make: Callable[[Any], Any]
    parse_args: ArgsParser | None = None
    filter: bool = True
    score_weight: int | None = None  # default weight when enabled for scoring by default
    # Kinds whose change can make this plugin accept a pod it rejected (kube's EventsToRegister).
    # "PodGone" is a pod deleted, finished or moved away.
    requeue_on: tuple[str, ...] = ("Node",)


REGISTRY: dict[str, Spec] = {
    NodeUnschedulable.name: Spec(lambda _: NodeUnschedulable()),
    NodeAffinity.name: Spec(lambda _: NodeAffinity()),
    TaintToleration.name: Spec(lambda _: TaintToleration()),
    NodeResourcesFit.name: Spec(lambda _: NodeResourcesFit(), requeue_on=("Node", "PodGone")),
    VolumeBinding.name: Spec(
        VolumeBinding,
        parse_volume_binding_args,
        score_weight=1,
        # PodGone too: a pod berth placed releases its reserved PVs when it goes
        requeue_on=(
            "Node",
            "PodGone",
            "PersistentVolume",
            "PersistentVolumeClaim",
            "StorageClass",
            "CSIDriver",
            "CSIStorageCapacity",
        ),
    ),
    LoadAwareScheduling.name: Spec(
        LoadAwareScheduling, parse_into, score_weight=1, requeue_on=("Node", "NodeMetric", "PodGone")
    ),
}

# Filter plugins in the order they run; reasons are listed in this order too.
FILTERS: tuple[str, ...] = tuple(n for n, s in REGISTRY.items() if s.filter)
# Which plugins' rejections a change of each kind can undo.
REQUEUE: dict[str, frozenset[str]] = {}
for _name, _spec in REGISTRY.items():
    for _kind in _spec.requeue_on:
        REQUEUE[_kind] = REQUEUE.get(_kind, frozenset()) | {_name}

# Score plugins enabled by default, with their default weights.
SCORES: dict[str, int] = {n: s.score_weight for n, s in REGISTRY.items() if s.score_weight is not None}
