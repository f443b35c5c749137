"""NodeResourcesFit (Filter): the pod's requests against each node's allocatable less what is requested there."""

from __future__ import annotations

from typing import Any

from berth.core.framework import Action, ClusterEvent, ClusterEventWithHint, Cycle, Failure
from berth.core.resources import CPU, EPHEMERAL, MEMORY, PODS
from berth.core.state import ClusterState

NAME = "NodeResourcesFit"
Args = None


class NodeResourcesFit:
    name = NAME

    def filter(self, cycle: Cycle) -> list[Failure]:
        nodes = cycle.state.nodes
        out = []
        full = nodes.valid & (nodes.requested(PODS) + 1 > nodes.allocatable(PODS))
        if full.any():
            out.append(Failure(full, "Too many pods"))
        requests = cycle.pod.requests
        if not any(v for k, v in requests.items() if k != PODS):
            return out
        order = [
            CPU,
            MEMORY,
            EPHEMERAL,
            *sorted(k for k in requests if k not in (CPU, MEMORY, EPHEMERAL, PODS)),
        ]
        for name in order:
            want = requests.get(name, 0)
            if want <= 0:
                continue
            short = nodes.valid & (nodes.allocatable(name) - nodes.requested(name) < want)
            if short.any():
                out.append(Failure(short, f"Insufficient {name}"))
        return out

    def events_to_register(self) -> tuple[ClusterEventWithHint, ...]:
        # a pod leaving its node frees its requests there
        return (
            ClusterEventWithHint(ClusterEvent("Node", Action.ALL)),
            ClusterEventWithHint(ClusterEvent("Pod", Action.DELETE)),
        )


def new(args: Any, handle: ClusterState) -> NodeResourcesFit:
    return NodeResourcesFit()
