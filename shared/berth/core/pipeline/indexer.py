"""The indexer's logic: cluster events in, idempotent store operations out.

What it maintains (key layout in docs/redis-layout.md):
- per node and storage class, the available PVs that fit only that node, scored by capacity;
- per storage class, the available PVs that fit several nodes (zonal, or no affinity);
- per node, allocatable resources and labels, and the summed requests of the pods bound there.

Every operation carries the object's resourceVersion; the store applies it only when that version
is newer than the one it holds, so a redelivered event changes nothing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from berth.core.events import Event
from berth.core.model import Node, PersistentVolume, Pod
from berth.core.pipeline.applier import Applier
from berth.core.pvindex import available
from berth.core.quantity import ceil_units
from berth.core.resources import PODS
from berth.core.state import ClusterState

Action = list[str]


@dataclass
class Op:
    """Store commands applied together, once: `guard` is (key, resourceVersion) or None."""

    guard: tuple[str, str] | None
    actions: list[Action] = field(default_factory=list)


class IndexerEngine:
    def __init__(self) -> None:
        self.state = ClusterState()
        self.applier = Applier(self.state)
        self._pv_keys: dict[str, list[str]] = {}  # PV -> index keys it is in
        self._usage: dict[str, tuple[str, dict[str, int]]] = {}  # pod -> (node, requests) counted
        self._relabel = False  # a node came, went or changed labels: PVs may fit other nodes now

    def handle(self, ev: Event) -> tuple[list[Op], str | None]:
        """Operations for one event, or the reason it was rejected."""
        applied = self.applier.apply(ev)
        if applied.reject is not None:
            return [], applied.reject.reason
        obj = applied.obj
        if obj is None:
            return [], None
        guard = (f"rv:{type(obj).__name__}:{_key(obj)}", obj.resource_version) if obj.resource_version else None
        op = Op(guard)
        if isinstance(obj, Node):
            self._node(obj, ev.deleted, op)
            old = applied.old
            self._relabel |= ev.deleted or not isinstance(old, Node) or old.labels != obj.labels
        elif isinstance(obj, PersistentVolume):
            self._pv(obj.name, op)
        elif isinstance(obj, Pod):
            self._pod(obj, ev.deleted, op)
        return ([op] if op.actions else []), None

    def end_batch(self) -> list[Op]:
        """After a batch: if node labels changed, put every PV where it fits now (once per batch)."""
        if not self._relabel:
            return []
        self._relabel = False
        op = Op(None)
        for name in sorted(set(self._pv_keys) | set(self.state.pvs)):
            self._pv(name, op)
        return [op] if op.actions else []

    def _node(self, node: Node, deleted: bool, op: Op) -> None:
        if deleted:
            op.actions += [["DEL", f"node:{node.name}"], ["DEL", f"alloc:{node.name}"]]
            return
        alloc = [str(x) for kv in sorted(node.allocatable.items()) for x in kv]
        op.actions.append(["DEL", f"alloc:{node.name}"])
        if alloc:
            op.actions.append(["HSET", f"alloc:{node.name}", *alloc])
        labels = json.dumps(node.labels, sort_keys=True, separators=(",", ":"))
        op.actions.append(
            ["HSET", f"node:{node.name}", "labels", labels, "unschedulable", "1" if node.unschedulable else "0"]
        )

    def _pv(self, name: str, op: Op) -> None:
        """Move a PV to the index keys it belongs in now (none when it is not available)."""
        pv = self.state.pvs.get(name)
        want: list[str] = []
        if pv is not None and available(pv):
            nodes = self.state.nodes
            slots = nodes.selector_slots(pv.node_affinity)
            if len(slots) == 1:
                want = [f"pvidx:{nodes.names[int(slots[0])]}:{pv.storage_class}"]
            elif len(slots) > 1:
                want = [f"pvidx:*:{pv.storage_class}"]
        have = self._pv_keys.get(name, [])
        for key in have:
            if key not in want:
                op.actions.append(["ZREM", key, name])
        for key in want:
            op.actions.append(["ZADD", key, str(ceil_units(pv.capacity) if pv else 0), name])
        if want:
            self._pv_keys[name] = want
        else:
            self._pv_keys.pop(name, None)

    def _pod(self, pod: Pod, deleted: bool, op: Op) -> None:
        before = self._usage.pop(pod.key, None)
        now = None if deleted or pod.terminated or not pod.node_name else (pod.node_name, {**pod.requests, PODS: 1})
        if before == now:
            if now is not None:
                self._usage[pod.key] = now
            return
        if before is not None:
            op.actions += [["HINCRBY", f"used:{before[0]}", k, str(-v)] for k, v in sorted(before[1].items())]
        if now is not None:
            self._usage[pod.key] = now
            op.actions += [["HINCRBY", f"used:{now[0]}", k, str(v)] for k, v in sorted(now[1].items())]

    def usage(self) -> dict[str, dict[str, int]]:
        """Requests of bound pods per node (what the faust table keeps)."""
        out: dict[str, dict[str, int]] = {}
        for node, requests in self._usage.values():
            acc = out.setdefault(node, {})
            for k, v in requests.items():
                acc[k] = acc.get(k, 0) + v
        return out


def _key(obj: Any) -> str:
    ns = getattr(obj, "namespace", None)
    return f"{ns}/{obj.name}" if ns is not None else str(obj.name)
