"""NodeAffinity: the pod's nodeSelector and required node affinity."""

from __future__ import annotations

from typing import Any

from berth.core.framework import Action, ClusterEvent, ClusterEventWithHint, Code, Cycle, Failure
from berth.core.state import ClusterState

NAME = "NodeAffinity"
Args = None
REASON = "node(s) didn't match Pod's node affinity/selector"


class NodeAffinity:
    name = NAME

    def filter(self, cycle: Cycle) -> list[Failure]:
        pod, nodes = cycle.pod, cycle.state.nodes
        if not pod.node_selector and pod.affinity is None:
            return []
        ok = nodes.valid.copy()
        if pod.node_selector:
            ok &= nodes.match_labels_mask(pod.node_selector)
        if pod.affinity is not None:
            ok &= nodes.selector_mask(pod.affinity)
        return [Failure(nodes.valid & ~ok, REASON, Code.UNRESOLVABLE)]

    def events_to_register(self) -> tuple[ClusterEventWithHint, ...]:
        return (ClusterEventWithHint(ClusterEvent("Node", Action.ALL)),)


def new(args: Any, handle: ClusterState) -> NodeAffinity:
    return NodeAffinity()
