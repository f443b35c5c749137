"""TaintToleration: the Filter rejects NoSchedule and NoExecute taints the pod does not tolerate; the
Score counts the node's PreferNoSchedule taints the pod's PreferNoSchedule (or effect-less)
tolerations do not tolerate, and NormalizeScore reverses the counts (fewest: 100)."""

from __future__ import annotations

from typing import Any

import numpy as np

from berth.core.framework import (
    OK,
    Action,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    Cycle,
    Failure,
    Mask,
    Scores,
    Status,
)
from berth.core.model import Taint, Toleration
from berth.core.plugins.normalize import default_normalize
from berth.core.state import ClusterState

NAME = "TaintToleration"
Args = None
REASON_PREFIX = "node(s) had untolerated taint"


def untolerated(taints: tuple[Taint, ...], tolerations: tuple[Toleration, ...]) -> Taint | None:
    return next((t for t in taints if not any(tol.tolerates(t) for tol in tolerations)), None)


class TaintToleration:
    name = NAME

    def filter(self, cycle: Cycle) -> list[Failure]:
        nodes = cycle.state.nodes
        out = []
        for tid, taints in enumerate(nodes.taint_sets):
            bad = untolerated(taints, cycle.pod.tolerations) if taints else None
            if bad is not None:
                mask = (nodes.taint_set == tid) & nodes.valid
                if mask.any():
                    out.append(Failure(mask, f"{REASON_PREFIX} {{{bad.key}: {bad.value}}}", Code.UNRESOLVABLE))
        return out

    def pre_score(self, cycle: Cycle, feasible: Mask) -> Status:
        cycle.data[self.name] = tuple(t for t in cycle.pod.tolerations if t.effect in ("", "PreferNoSchedule"))
        return OK

    def score(self, cycle: Cycle, feasible: Mask) -> Scores:
        tolerations: tuple[Toleration, ...] = cycle.data[self.name]
        nodes = cycle.state.nodes
        out = np.zeros(len(feasible), dtype=np.int64)
        counts: dict[tuple[Taint, ...], int] = {}
        for slot in np.flatnonzero(feasible):
            node = nodes.node(int(slot))
            if node is None or not node.taints:
                continue
            n = counts.get(node.taints)
            if n is None:
                n = counts[node.taints] = sum(
                    1
                    for t in node.taints
                    if t.effect == "PreferNoSchedule" and not any(tol.tolerates(t) for tol in tolerations)
                )
            out[slot] = n
        return out

    def normalize_score(self, cycle: Cycle, scores: Scores, feasible: Mask) -> None:
        default_normalize(scores, feasible, reverse=True)

    def events_to_register(self) -> tuple[ClusterEventWithHint, ...]:
        return (ClusterEventWithHint(ClusterEvent("Node", Action.ALL)),)


def new(args: Any, handle: ClusterState) -> TaintToleration:
    return TaintToleration()
