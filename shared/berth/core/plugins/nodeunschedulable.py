"""NodeUnschedulable: nodes marked spec.unschedulable reject pods that do not tolerate it."""

from __future__ import annotations

from typing import Any

from berth.core.api.core.model import Node, Pod, Taint
from berth.core.cache.state import ClusterState
from berth.core.framework.cycle import Cycle
from berth.core.framework.events import Action, ClusterEvent, ClusterEventWithHint, Hint, each_pod
from berth.core.framework.status import Code, Failure

NAME = "NodeUnschedulable"
Args = None
REASON = "node(s) were unschedulable"


class NodeUnschedulable:
    name = NAME
    _taint = Taint(key="node.kubernetes.io/unschedulable", effect="NoSchedule")

    def _tolerates(self, pod: Pod) -> bool:
        return any(t.tolerates(self._taint) for t in pod.tolerations)

    def filter(self, cycle: Cycle) -> list[Failure]:
        if self._tolerates(cycle.pod):
            return []
        return [Failure(cycle.state.nodes.unschedulable & cycle.state.nodes.valid, REASON, Code.UNRESOLVABLE)]

    def events_to_register(self) -> tuple[ClusterEventWithHint, ...]:
        # kube: Node Add|UpdateNodeTaint with a hint. berth keeps Delete, without a hint, as it always had.
        return (
            ClusterEventWithHint(ClusterEvent("Node", Action.ADD | Action.UPDATE), self.node_hint),
            ClusterEventWithHint(ClusterEvent("Node", Action.DELETE)),
        )

    def node_hint(self, state: ClusterState, obj: Any, now: Any) -> Hint:
        """kube: a node added or updated; retry a pod when the node is schedulable now, or the pod tolerates
        it (kube compares the old node too: berth retries on any update leaving it schedulable)."""
        assert isinstance(obj, Node)
        if not obj.unschedulable:
            return lambda pods, version: each_pod(pods, lambda p: True)
        return lambda pods, version: each_pod(pods, self._tolerates)


def new(args: Any, handle: ClusterState) -> NodeUnschedulable:
    return NodeUnschedulable()
