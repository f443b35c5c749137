"""NodePorts (PreFilter, Filter): the pod's host ports against those the pods on each node use. A
port on 0.0.0.0 (either side) conflicts with the same protocol and port on any address."""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from berth.core import framework as fwk
from berth.core.api.core.model import Pod
from berth.core.cache.extension import StateExtension
from berth.core.cache.state import ClusterState

NAME = "NodePorts"
Args = None
REASON = "node(s) didn't have free ports for the requested pod ports"
ANY = "0.0.0.0"


class UsedPorts(StateExtension):
    """Per (protocol, port), the addresses pods bound to each node use (a ClusterState extension)."""

    assigned_only = True

    def __init__(self) -> None:
        self.used: dict[tuple[str, int], dict[str, Counter[str]]] = {}
        self._placed: dict[str, tuple[str, tuple[tuple[str, str, int], ...]]] = {}

    def _count(self, node: str, ports: tuple[tuple[str, str, int], ...], sign: int) -> None:
        for ip, proto, port in ports:
            on = self.used.setdefault((proto, port), {})
            ips = on.setdefault(node, Counter())
            ips[ip] += sign
            if ips[ip] <= 0:
                del ips[ip]
                if not ips:
                    del on[node]

    def pod_changed(self, state: ClusterState, old: Pod | None, new: Pod | None) -> None:
        key = (new or old).key  # type: ignore[union-attr]
        prev = self._placed.pop(key, None)
        if prev is not None:
            self._count(prev[0], prev[1], -1)
        if new is not None and new.node_name and not new.terminated and new.host_ports:
            self._placed[key] = (new.node_name, new.host_ports)
            self._count(new.node_name, new.host_ports, 1)


class NodePorts:
    name = NAME

    def __init__(self) -> None:
        self.ports = UsedPorts()

    def extension(self) -> UsedPorts:
        return self.ports

    def pre_filter(self, cycle: fwk.Cycle) -> fwk.Status:
        return fwk.OK if cycle.pod.host_ports else fwk.SKIP

    def filter(self, cycle: fwk.Cycle) -> list[fwk.Failure]:
        nodes = cycle.state.nodes
        bad = np.zeros(len(nodes.valid), dtype=bool)
        for ip, proto, port in cycle.pod.host_ports:
            for node, ips in self.ports.used.get((proto, port), {}).items():
                if ip == ANY or ip in ips or ANY in ips:
                    slot = nodes.slot.get(node)
                    if slot is not None:
                        bad[slot] = True
        bad &= nodes.valid
        return [fwk.Failure(bad, REASON)] if bad.any() else []

    def events_to_register(self) -> tuple[fwk.ClusterEventWithHint, ...]:
        # kube: Pod Delete with a hint, Node Add (and Update) without
        return (
            fwk.ClusterEventWithHint(fwk.ClusterEvent("Pod", fwk.Action.DELETE), self.pod_hint),
            fwk.ClusterEventWithHint(fwk.ClusterEvent("Node", fwk.Action.ADD)),
        )

    def pod_hint(self, state: ClusterState, obj: Any, now: Any) -> fwk.Hint:
        """kube: a pod left its node; retry a pod wanting one of the host ports it held there."""
        assert isinstance(obj, Pod)
        held = obj.host_ports

        def helps(p: Pod) -> bool:
            return any(
                proto == o_proto and port == o_port and (ip == o_ip or ANY in (ip, o_ip))
                for ip, proto, port in p.host_ports
                for o_ip, o_proto, o_port in held
            )

        return lambda pods, version: fwk.each_pod(pods, helps)


def new(args: Any, handle: ClusterState) -> NodePorts:
    return NodePorts()
