"""NodeUnschedulable: nodes marked spec.unschedulable reject pods that do not tolerate it."""

from __future__ import annotations

from typing import Any

from berth.core import framework as fwk
from berth.core.api.core.model import Node, Pod, Taint
from berth.core.cache.state import ClusterState

NAME = "NodeUnschedulable"
Args = None
REASON = "node(s) were unschedulable"


class NodeUnschedulable:
    name = NAME
    ignores_pods = True  # its verdict never reads the pods on a node (framework.IgnoresPods)
    _taint = Taint(key="node.kubernetes.io/unschedulable", effect="NoSchedule")

    def _tolerates(self, pod: Pod) -> bool:
        return any(t.tolerates(self._taint) for t in pod.tolerations)

    def filter(self, cycle: fwk.Cycle) -> list[fwk.Failure]:
        if self._tolerates(cycle.pod):
            return []
        return [fwk.Failure(cycle.state.nodes.unschedulable & cycle.state.nodes.valid, REASON, fwk.Code.UNRESOLVABLE)]

    def explain_filter(self, cycle: fwk.Cycle, slots: fwk.Slots) -> dict[int, list[fwk.Why]]:
        """The node is cordoned and the pod lacks the toleration (uncordoning is not a change berth tries)."""
        text = (
            "the node is cordoned (spec.unschedulable) and the pod does not tolerate "
            f"{self._taint.key}:{self._taint.effect}"
        )
        why = fwk.Why(REASON, text, {"unschedulable": True, "taint": {"key": self._taint.key, "effect": "NoSchedule"}})
        return {s: [why] for s in slots.tolist()}

    def events_to_register(self) -> tuple[fwk.ClusterEventWithHint, ...]:
        # kube: Node Add|UpdateNodeTaint with a hint. berth keeps Delete, without a hint, as it always had.
        return (
            fwk.ClusterEventWithHint(fwk.ClusterEvent("Node", fwk.Action.ADD | fwk.Action.UPDATE), self.node_hint),
            fwk.ClusterEventWithHint(fwk.ClusterEvent("Node", fwk.Action.DELETE)),
        )

    def node_hint(self, state: ClusterState, obj: Any, now: Any) -> fwk.Hint:
        """kube: a node added or updated; retry a pod when the node is schedulable now, or the pod tolerates
        it (kube compares the old node too: berth retries on any update leaving it schedulable)."""
        assert isinstance(obj, Node)
        if not obj.unschedulable:
            return lambda pods, version: fwk.each_pod(pods, lambda p: True)
        return lambda pods, version: fwk.each_pod(pods, self._tolerates)


def new(args: Any, handle: ClusterState) -> NodeUnschedulable:
    return NodeUnschedulable()
