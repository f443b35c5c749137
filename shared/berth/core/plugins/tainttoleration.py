"""TaintToleration: NoSchedule and NoExecute taints the pod does not tolerate."""

from __future__ import annotations

from typing import Any

from berth.core.framework import Action, ClusterEvent, ClusterEventWithHint, Code, Cycle, Failure
from berth.core.model import Taint, Toleration
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

    def events_to_register(self) -> tuple[ClusterEventWithHint, ...]:
        return (ClusterEventWithHint(ClusterEvent("Node", Action.ALL)),)


def new(args: Any, handle: ClusterState) -> TaintToleration:
    return TaintToleration()
