"""NodeUnschedulable: nodes marked spec.unschedulable reject pods that do not tolerate it."""

from __future__ import annotations

from typing import Any

from berth.core.framework import Action, ClusterEvent, ClusterEventWithHint, Code, Cycle, Failure
from berth.core.model import Taint
from berth.core.state import ClusterState

NAME = "NodeUnschedulable"
Args = None
REASON = "node(s) were unschedulable"


class NodeUnschedulable:
    name = NAME
    _taint = Taint(key="node.kubernetes.io/unschedulable", effect="NoSchedule")

    def filter(self, cycle: Cycle) -> list[Failure]:
        if any(t.tolerates(self._taint) for t in cycle.pod.tolerations):
            return []
        return [Failure(cycle.state.nodes.unschedulable & cycle.state.nodes.valid, REASON, Code.UNRESOLVABLE)]

    def events_to_register(self) -> tuple[ClusterEventWithHint, ...]:
        return (ClusterEventWithHint(ClusterEvent("Node", Action.ALL)),)


def new(args: Any, handle: ClusterState) -> NodeUnschedulable:
    return NodeUnschedulable()
