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


def _conflict(a: tuple[str, str, int], b: tuple[str, str, int]) -> bool:
    """Two (address, protocol, port) host ports clash: same protocol and port, same address or either on 0.0.0.0."""
    return a[1:] == b[1:] and (a[0] == b[0] or ANY in (a[0], b[0]))


def _show(p: tuple[str, str, int]) -> str:
    return f"{p[1]}/{p[2]} on {p[0]}"


def _fact(p: tuple[str, str, int]) -> dict[str, Any]:
    return {"hostIP": p[0], "protocol": p[1], "hostPort": p[2]}


class UsedPorts(StateExtension):
    """Per (protocol, port), the addresses pods bound to each node use (a ClusterState extension)."""

    assigned_only = True

    def __init__(self) -> None:
        self.used: dict[tuple[str, int], dict[str, Counter[str]]] = {}
        self.placed: dict[str, tuple[str, tuple[tuple[str, str, int], ...]]] = {}  # pod key -> node, host ports

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
        prev = self.placed.pop(key, None)
        if prev is not None:
            self._count(prev[0], prev[1], -1)
        if new is not None and new.node_name and not new.terminated and new.host_ports:
            self.placed[key] = (new.node_name, new.host_ports)
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

    def explain_filter(self, cycle: fwk.Cycle, slots: fwk.Slots) -> dict[int, list[fwk.Why]]:
        """Per host port of the pod taken on the node: the pods there that hold it (protocol, port, address)."""
        names = cycle.state.nodes.names
        wanted = {names[s]: s for s in slots.tolist()}
        holders: dict[int, list[tuple[tuple[str, str, int], str, tuple[str, str, int]]]] = {}
        for key, (node, ports) in sorted(self.ports.placed.items()):
            slot = wanted.get(node)
            if slot is None:
                continue
            for mine in cycle.pod.host_ports:
                for theirs in ports:
                    if _conflict(mine, theirs):
                        holders.setdefault(slot, []).append((mine, key, theirs))
        out: dict[int, list[fwk.Why]] = {}
        for slot, held in holders.items():
            pods = tuple(dict.fromkeys(key for _, key, _ in held))
            text = "; ".join(
                f"host port {_show(mine)} is held by {key} ({_show(theirs)})" for mine, key, theirs in held
            )
            facts = {"ports": [{"port": _fact(mine), "pod": key, "held": _fact(theirs)} for mine, key, theirs in held]}
            out[slot] = [fwk.Why(REASON, text, facts, fwk.Change(leave=pods))]
        return out

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
