"""The indexer's logic: cluster events in, idempotent store operations out.

What it maintains (key layout in docs/redis-layout.md):
- per node and storage class, the available PVs that fit only that node, scored by capacity;
- per storage class, the available PVs that fit several nodes (zonal, or no affinity);
- per node, allocatable resources and labels, and the summed requests of the pods bound there.

Every operation carries the object's resourceVersion; the store applies it only when that version
is newer than the one it holds, so a redelivered event changes nothing. The engine keeps the same
rule for its own view (what it last saw of each Node, PV and Pod).

It also keeps every object of every kind berth reads, as its wire Struct in msgpack (one key per
object, deleted with the object), so that the scorer and the buffer controller can start from Redis
instead of the topic's history. A rejected event gets the same reason as in every other service
(berth.core.api.watch).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import NamedTuple

import msgspec

from berth.core.api.core.model import Node, PersistentVolume, Pod
from berth.core.api.core.resources import PODS
from berth.core.api.kinds import storable
from berth.core.api.meta.quantity import ceil_units
from berth.core.api.meta.selectors import NodeSelector
from berth.core.api.watch import Event, UnreadableObject, parse_event
from berth.core.cache.nodes import NodeTable
from berth.core.cache.pvindex import available
from berth.core.cache.state import newer
from berth.core.errors import InputError

Action = list[str]


@dataclass(slots=True)
class Op:
    """Store commands applied together, once: `guard` is (key, resourceVersion) or None.
    `value`: the bytes of the object an OBJSET action writes."""

    guard: tuple[str, str] | None
    actions: list[Action] = field(default_factory=list)
    value: bytes | None = None


_pack = msgspec.msgpack.Encoder().encode


class PVFacts(NamedTuple):
    """What the index needs of a PersistentVolume (`pvindex.available` and where it fits)."""

    name: str
    rv: str
    available: bool
    storage_class: str
    capacity: int  # bytes, rounded up
    affinity: NodeSelector | None


class IndexerEngine:
    def __init__(self) -> None:
        self.nodes = NodeTable()
        self._rv: dict[tuple[str, str], str] = {}  # (kind, key) -> last resourceVersion applied
        self._pvs: dict[str, PVFacts] = {}
        self._pv_keys: dict[str, list[str]] = {}  # PV -> index keys it is in
        self._usage: dict[str, tuple[str, dict[str, int]]] = {}  # pod -> (node, requests) counted
        self._on_node: dict[str, set[str]] = {}  # node -> pods counted there
        self._touched: set[str] = set()  # nodes whose usage changed since take_touched()
        self._fits: dict[tuple[NodeSelector | None, str], list[str]] = {}  # (affinity, class) -> keys
        self._version = 0  # bumped when a node comes, goes or changes labels
        self._relabel = False  # ... and then, at the end of the batch, PVs may fit other nodes
        self.clock: datetime | None = None  # the newest event time seen

    # ---- events in -------------------------------------------------------------------------

    def handle_raw(self, value: bytes, position: int = 0) -> tuple[list[Op], tuple[str, int] | None]:
        """Operations for one message as it came off the bus, or why it was rejected and where:
        (reason, position), the position the message carries if it can be read, else `position`.
        Kinds berth does not read are skipped."""
        try:
            ev = parse_event(value, position)
        except UnreadableObject as e:
            return [], (e.line(), e.position or position)
        except InputError as e:
            return [], (e.line(), position)
        ops, _ = self.handle(ev)
        return ops, None

    def handle(self, ev: Event) -> tuple[list[Op], str | None]:
        """Operations for one decoded event (no reason: it was decoded, so it is not rejected)."""
        if ev.ts is not None and (self.clock is None or ev.ts > self.clock):
            self.clock = ev.ts
        obj = ev.model
        if obj is None:
            return [], None
        if isinstance(obj, Node):
            ops = self._node_event(obj, ev.deleted)
        elif isinstance(obj, PersistentVolume):
            ops = self._pv_event(_pv_facts(obj), ev.deleted)
        elif isinstance(obj, Pod):
            ops = self._pod_change(obj, ev.deleted)
        else:
            ops = []
        if ev.wire is not None:
            key, rv = ev.key.decode(), getattr(obj, "resource_version", "")
            if self._fresh("obj", key, rv):
                ops.append(_object_op(ev, key, rv))
        return ops, None

    def _fresh(self, kind: str, key: str, rv: str) -> bool:
        """Newer than what was applied (and remember it), as ClusterState.apply decides."""
        k = (kind, key)
        have = self._rv.get(k)
        if have is not None and not newer(rv, have):
            return False
        if rv:
            self._rv[k] = rv
        return True

    # ---- per kind ----------------------------------------------------------------------------

    def _node_event(self, node: Node, deleted: bool) -> list[Op]:
        if not self._fresh("Node", node.name, node.resource_version):
            return []
        old = self.nodes.get(node.name)
        if deleted:
            self.nodes.remove(node.name)
        else:
            self.nodes.upsert(node)
        if deleted or old is None or old.labels != node.labels:
            self._relabel = True
            self._version += 1
            self._fits.clear()
        op = Op(_guard("Node", node.name, node.resource_version))
        if deleted:
            op.actions += [["DEL", f"node:{node.name}"], ["DEL", f"alloc:{node.name}"]]
            return [op]
        alloc = [str(x) for kv in sorted(node.allocatable.items()) for x in kv]
        op.actions.append(["DEL", f"alloc:{node.name}"])
        if alloc:
            op.actions.append(["HSET", f"alloc:{node.name}", *alloc])
        labels = json.dumps(node.labels, sort_keys=True, separators=(",", ":"))
        op.actions.append(
            ["HSET", f"node:{node.name}", "labels", labels, "unschedulable", "1" if node.unschedulable else "0"]
        )
        return [op]

    def _pv_event(self, pv: PVFacts, deleted: bool) -> list[Op]:
        if not self._fresh("PersistentVolume", pv.name, pv.rv):
            return []
        if deleted:
            self._pvs.pop(pv.name, None)
        else:
            self._pvs[pv.name] = pv
        op = Op(_guard("PersistentVolume", pv.name, pv.rv))
        self._place(pv.name, op)
        return [op] if op.actions else []

    @staticmethod
    def _counts(pod: Pod, deleted: bool) -> bool:
        """Its requests count on its node: bound, not finished, not deleted."""
        return not (deleted or pod.terminated or not pod.node_name)

    def _pod_change(self, pod: Pod, deleted: bool) -> list[Op]:
        if not self._fresh("Pod", pod.key, pod.resource_version):
            return []
        before = self._usage.get(pod.key)
        if not self._counts(pod, deleted):
            if before is None:
                return []
            now = None
        else:
            now = (pod.node_name, {**pod.requests, PODS: 1})
            if before == now:
                return []
        op = Op(_guard("Pod", pod.key, pod.resource_version))
        if before is not None:
            del self._usage[pod.key]
            self._touched.add(before[0])
            self._on_node[before[0]].discard(pod.key)
            if not self._on_node[before[0]]:
                del self._on_node[before[0]]
            op.actions += [["HINCRBY", f"used:{before[0]}", k, str(-v)] for k, v in sorted(before[1].items())]
        if now is not None:
            self._usage[pod.key] = now
            self._touched.add(now[0])
            self._on_node.setdefault(now[0], set()).add(pod.key)
            op.actions += [["HINCRBY", f"used:{now[0]}", k, str(v)] for k, v in sorted(now[1].items())]
        return [op]

    # ---- PVs and where they fit ----------------------------------------------------------------

    def _keys(self, pv: PVFacts | None) -> list[str]:
        """The index keys an available PV belongs in now (none when it is not available)."""
        if pv is None or not pv.available:
            return []
        k = (pv.affinity, pv.storage_class)
        keys = self._fits.get(k)
        if keys is None:
            slots = self.nodes.selector_slots(pv.affinity)
            if len(slots) == 1:
                keys = [f"pvidx:{self.nodes.names[int(slots[0])]}:{pv.storage_class}"]
            elif len(slots) > 1:
                keys = [f"pvidx:*:{pv.storage_class}"]
            else:
                keys = []
            self._fits[k] = keys
        return keys

    def _place(self, name: str, op: Op, only_moved: bool = False) -> None:
        """Move a PV to the index keys it belongs in now."""
        pv = self._pvs.get(name)
        want = self._keys(pv)
        have = self._pv_keys.get(name, [])
        if only_moved and want == have:
            return
        for key in have:
            if key not in want:
                op.actions.append(["ZREM", key, name])
        for key in want:
            op.actions.append(["ZADD", key, str(pv.capacity if pv else 0), name])
        if want:
            self._pv_keys[name] = want
        else:
            self._pv_keys.pop(name, None)

    def end_batch(self) -> list[Op]:
        """After a batch: if nodes came, went or changed labels, move the PVs that fit elsewhere now
        (once per batch)."""
        if not self._relabel:
            return []
        self._relabel = False
        op = Op(None)
        for name in sorted(set(self._pv_keys) | set(self._pvs)):
            self._place(name, op, only_moved=True)
        return [op] if op.actions else []

    # ---- node usage ----------------------------------------------------------------------------

    def take_touched(self) -> set[str]:
        """The nodes whose usage changed since the last call."""
        touched, self._touched = self._touched, set()
        return touched

    def usage(self, nodes: set[str] | None = None) -> dict[str, dict[str, int]]:
        """Requests of bound pods per node (what the faust table keeps): of every node, or of
        `nodes` (a node without pods then has {})."""
        out: dict[str, dict[str, int]] = {}
        for node in self._on_node if nodes is None else nodes:
            acc = out.setdefault(node, {})
            for pod in self._on_node.get(node, ()):
                for k, v in self._usage[pod][1].items():
                    acc[k] = acc.get(k, 0) + v
        return out


def _object_op(ev: Event, key: str, rv: str) -> Op:
    """The object itself, under its bus key (kind/namespace/name); deleted with it. The guard stays
    after a deletion, so an older event redelivered cannot bring the object back."""
    guard = (f"rv:obj:{key}", rv) if rv else None
    if ev.deleted:
        return Op(guard, [["OBJDEL", key]])
    try:
        value = _pack(storable(ev.wire))
    except OverflowError as e:  # msgpack holds integers of 64 bits; JSON and the wire Struct allow more
        raise InputError(key, "", f"cannot be kept: {e}") from None
    return Op(guard, [["OBJSET", key]], value)


def _guard(kind: str, key: str, rv: str) -> tuple[str, str] | None:
    return (f"rv:{kind}:{key}", rv) if rv else None


def _pv_facts(pv: PersistentVolume) -> PVFacts:
    return PVFacts(
        pv.name, pv.resource_version, available(pv), pv.storage_class, ceil_units(pv.capacity), pv.node_affinity
    )
