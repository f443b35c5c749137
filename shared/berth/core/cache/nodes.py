"""Nodes in slots, with the per-node arrays the plugins read in one pass.

A node keeps its slot for its lifetime; a removed node frees its slot. Label
selectors are evaluated to boolean masks over slots through an inverted label
index, and the masks are cached until some node's labels change.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from berth.core.api.core.model import Node, Taint
from berth.core.api.meta.selectors import (
    LabelSelector,
    NodeSelector,
    NodeSelectorTerm,
    Requirement,
    TopologyTerm,
    _parse_int64,
)

Mask = npt.NDArray[np.bool_]
Ints = npt.NDArray[np.int64]


class NodeTable:
    def __init__(self) -> None:
        self.size = 0
        self.names: list[str | None] = []
        self.slot: dict[str, int] = {}
        self._nodes: list[Node | None] = []
        self._free: list[int] = []
        self.valid: Mask = np.zeros(0, dtype=bool)
        self.unschedulable: Mask = np.zeros(0, dtype=bool)
        self.taint_set: npt.NDArray[np.int32] = np.zeros(0, dtype=np.int32)
        self.taint_sets: list[tuple[Taint, ...]] = [()]
        self._taint_ids: dict[tuple[Taint, ...], int] = {(): 0}
        self._columns: dict[str, int] = {}
        self._alloc: Ints = np.zeros((0, 0), dtype=np.int64)  # resource x slot
        self._used: Ints = np.zeros((0, 0), dtype=np.int64)
        self._used_by_name: dict[str, dict[str, int]] = {}
        self._labels: dict[str, dict[str, set[int]]] = {}
        self._masks: dict[Hashable, Mask] = {}
        self._slot_lists: dict[NodeSelector | None, npt.NDArray[np.int64]] = {}  # selector_slots' answers
        self._rank: Ints | None = None
        self._by_name: tuple[Ints, Ints, list[str]] | None = None  # (rank, slots, their names): by_name
        self.label_version = 0

    # ---- nodes -------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.slot)

    def node(self, slot: int) -> Node | None:
        return self._nodes[slot]

    def get(self, name: str) -> Node | None:
        s = self.slot.get(name)
        return None if s is None else self._nodes[s]

    def all(self) -> list[Node]:
        return [n for n in self._nodes if n is not None]

    def upsert(self, node: Node) -> int:
        """Add or replace a node; returns its slot."""
        s = self.slot.get(node.name)
        if s is None:
            s = self._new_slot()
            self.slot[node.name] = s
            self.names[s] = node.name
            self.valid[s] = True
            self._index_labels(s, node.labels)
            self._set_usage_row(s, self._used_by_name.get(node.name, {}))
        else:
            old = self._nodes[s]
            if old is not None and old.labels != node.labels:
                self._unindex_labels(s, old.labels)
                self._index_labels(s, node.labels)
        self._nodes[s] = node
        self.unschedulable[s] = node.unschedulable
        self.taint_set[s] = self._taint_id(node.taints)
        self._alloc[:, s] = 0
        for name, v in node.allocatable.items():
            c = self._column(name)  # may grow the arrays: resolve before indexing
            self._alloc[c, s] = v
        return s

    def remove(self, name: str) -> int | None:
        s = self.slot.pop(name, None)
        if s is None:
            return None
        old = self._nodes[s]
        if old is not None:
            self._unindex_labels(s, old.labels)
        self._nodes[s] = None
        self.names[s] = None
        self.valid[s] = False
        self.unschedulable[s] = False
        self.taint_set[s] = 0
        self._alloc[:, s] = 0
        self._used[:, s] = 0
        self._free.append(s)
        return s

    def _new_slot(self) -> int:
        if self._free:
            return self._free.pop()
        if self.size == len(self.valid):
            self._grow(self.size + max(16, self.size // 8))  # small steps: every pass is over all slots
        self.size += 1
        self.names.append(None)
        self._nodes.append(None)
        return self.size - 1

    def _grow(self, cap: int) -> None:
        def grow(a: Any, fill: Any = 0) -> Any:
            out = np.full((cap, *a.shape[1:]), fill, dtype=a.dtype)
            out[: len(a)] = a
            return out

        self.valid = grow(self.valid, False)
        self.unschedulable = grow(self.unschedulable, False)
        self.taint_set = grow(self.taint_set)
        self._alloc = grow(self._alloc.T).T.copy()  # resource by slot: one resource is contiguous
        self._used = grow(self._used.T).T.copy()
        self._masks.clear()
        self._slot_lists.clear()

    def _taint_id(self, taints: tuple[Taint, ...]) -> int:
        key = tuple(t for t in taints if t.effect in ("NoSchedule", "NoExecute"))
        tid = self._taint_ids.get(key)
        if tid is None:
            tid = len(self.taint_sets)
            self._taint_ids[key] = tid
            self.taint_sets.append(key)
        return tid

    # ---- resources ---------------------------------------------------------
    def _column(self, name: str) -> int:
        c = self._columns.get(name)
        if c is None:
            c = len(self._columns)
            self._columns[name] = c
            self._alloc = np.vstack([self._alloc, np.zeros((1, len(self.valid)), dtype=np.int64)])
            self._used = np.vstack([self._used, np.zeros((1, len(self.valid)), dtype=np.int64)])
        return c

    def allocatable(self, resource: str) -> Ints:
        c = self._columns.get(resource)
        return np.zeros(len(self.valid), dtype=np.int64) if c is None else self._alloc[c]

    def requested(self, resource: str) -> Ints:
        c = self._columns.get(resource)
        return np.zeros(len(self.valid), dtype=np.int64) if c is None else self._used[c]

    def add_usage(self, node_name: str, amounts: Mapping[str, int], sign: int = 1) -> None:
        """Add (sign=1) or take away (sign=-1) a pod's requests on a node, known or not yet."""
        used = self._used_by_name.setdefault(node_name, {})
        s = self.slot.get(node_name)
        columns = self._columns
        for k, v in amounts.items():
            used[k] = used.get(k, 0) + sign * v
            if s is not None:
                c = columns.get(k)
                if c is None:
                    c = self._column(k)  # a new row: self._used is made anew
                self._used[c, s] += sign * v

    def _set_usage_row(self, s: int, used: Mapping[str, int]) -> None:
        self._used[:, s] = 0
        for k, v in used.items():
            c = self._column(k)
            self._used[c, s] = v

    # ---- labels and selectors ----------------------------------------------
    def _index_labels(self, s: int, labels: Mapping[str, str]) -> None:
        for k, v in labels.items():
            self._labels.setdefault(k, {}).setdefault(v, set()).add(s)
        self._labels_changed()

    def _unindex_labels(self, s: int, labels: Mapping[str, str]) -> None:
        for k, v in labels.items():
            values = self._labels.get(k, {})
            values.get(v, set()).discard(s)
            if not values.get(v, True):
                del values[v]
            if not values:
                self._labels.pop(k, None)
        self._labels_changed()

    def _labels_changed(self) -> None:
        self.label_version += 1
        self._masks.clear()
        self._slot_lists.clear()
        self._rank = None

    def _slots_mask(self, slots: set[int] | list[int]) -> Mask:
        m = np.zeros(len(self.valid), dtype=bool)
        if slots:
            m[np.fromiter(slots, dtype=np.int64, count=len(slots))] = True
        return m

    def label_mask(self, key: str, values: tuple[str, ...]) -> Mask:
        """Slots whose label `key` has one of `values`."""
        index = self._labels.get(key, {})
        slots: set[int] = set()
        for v in values:
            slots |= index.get(v, set())
        return self._slots_mask(slots)

    def key_mask(self, key: str) -> Mask:
        slots: set[int] = set()
        for members in self._labels.get(key, {}).values():
            slots |= members
        return self._slots_mask(slots)

    def _requirement(self, r: Requirement) -> Mask:
        op = r.operator
        if op == "In":
            return self.label_mask(r.key, r.values)
        if op == "NotIn":
            return ~self.label_mask(r.key, r.values) & self.valid
        if op == "Exists":
            return self.key_mask(r.key)
        if op == "DoesNotExist":
            return ~self.key_mask(r.key) & self.valid
        want = _parse_int64(r.values[0])
        slots: set[int] = set()
        for value, members in self._labels.get(r.key, {}).items():
            have = _parse_int64(value)
            if have is not None and want is not None and (have > want if op == "Gt" else have < want):
                slots |= members
        return self._slots_mask(slots)

    def _field(self, r: Requirement) -> Mask:
        s = self.slot.get(r.values[0])
        m = self._slots_mask([] if s is None else [s])
        return m if r.operator == "In" else ~m & self.valid

    def _term(self, t: NodeSelectorTerm) -> Mask:
        m = self.valid.copy()
        if t.empty or not t.valid:
            return m & False
        for r in t.match_expressions:
            m &= self._requirement(r)
        for r in t.match_fields:
            m &= self._field(r)
        return m

    def selector_mask(self, sel: NodeSelector | None) -> Mask:
        """Slots a NodeSelector matches (None matches every node). Cached; do not mutate."""
        if sel is None:
            return self.valid
        return self._cached(("ns", sel), lambda: self._or_terms([self._term(t) for t in sel.terms]))

    def _or_terms(self, masks: list[Mask]) -> Mask:
        out = np.zeros(len(self.valid), dtype=bool)
        for m in masks:
            out |= m
        return out

    def match_labels_mask(self, labels: Mapping[str, str]) -> Mask:
        """Slots with all these labels (a pod's nodeSelector)."""
        key = ("ml", tuple(sorted(labels.items())))

        def build() -> Mask:
            m = self.valid.copy()
            for k, v in labels.items():
                m &= self.label_mask(k, (v,))
            return m

        return self._cached(key, build)

    def label_selector_mask(self, sel: LabelSelector | None) -> Mask:
        """Slots whose labels a LabelSelector matches; None matches nothing."""
        if sel is None:
            return np.zeros(len(self.valid), dtype=bool)

        def build() -> Mask:
            if not sel.valid:
                return np.zeros(len(self.valid), dtype=bool)
            m = self.match_labels_mask(dict(sel.match_labels)).copy()
            for r in sel.match_expressions:
                m &= self._requirement(r)
            return m

        return self._cached(("ls", sel), build)

    def topology_mask(self, terms: tuple[TopologyTerm, ...]) -> Mask:
        """Slots a StorageClass's allowedTopologies admits (empty admits all)."""
        if not terms:
            return self.valid

        def term(t: TopologyTerm) -> Mask:
            m = self.valid.copy()
            if not t.expressions:
                return m & False
            for k, values in t.expressions:
                m &= self.label_mask(k, values)
            return m

        return self._cached(("topo", terms), lambda: self._or_terms([term(t) for t in terms]))

    def _cached(self, key: Hashable, build: Any) -> Mask:
        m = self._masks.get(key)
        if m is None:
            m = build()
            m.setflags(write=False)
            self._masks[key] = m
        return m

    def name_rank(self) -> Ints:
        """Each slot's position in node-name order (free slots last); cached until nodes change."""
        if self._rank is None or len(self._rank) != len(self.valid):
            names = self.names + [None] * (len(self.valid) - len(self.names))
            order = sorted(range(len(names)), key=lambda s: (names[s] is None, names[s] or ""))
            rank = np.empty(len(names), dtype=np.int64)
            rank[np.array(order, dtype=np.int64)] = np.arange(len(names), dtype=np.int64)
            self._rank = rank
        return self._rank

    def by_name(self) -> tuple[Ints, list[str]]:
        """The nodes' slots in node-name order and their names; cached with name_rank."""
        rank = self.name_rank()
        if self._by_name is None or self._by_name[0] is not rank:
            names = self.names
            slots = np.flatnonzero(self.valid[: len(names)])
            slots = slots[np.argsort(rank[slots])]
            self._by_name = (rank, slots, [names[s] or "" for s in slots.tolist()])
        return self._by_name[1], self._by_name[2]

    def selector_slots(self, sel: NodeSelector | None) -> npt.NDArray[np.int64]:
        """Slot numbers a NodeSelector matches (read-only; one answer per selector until labels
        change or slots grow: a node's local PVs share theirs)."""
        out = self._slot_lists.get(sel)
        if out is None:
            out = self._selector_slots(sel)
            out.setflags(write=False)
            self._slot_lists[sel] = out
        return out

    def _selector_slots(self, sel: NodeSelector | None) -> npt.NDArray[np.int64]:
        """Fast for the local-PV shape (one term of In)."""
        if sel is not None and len(sel.terms) == 1:
            t = sel.terms[0]
            if (
                t.valid
                and t.match_expressions
                and not t.match_fields
                and all(r.operator == "In" for r in t.match_expressions)
            ):
                slots: set[int] | None = None
                for r in t.match_expressions:
                    index = self._labels.get(r.key, {})
                    got: set[int] = set()
                    for v in r.values:
                        got |= index.get(v, set())
                    slots = got if slots is None else slots & got
                return np.array(sorted(slots or ()), dtype=np.int64)
        return np.flatnonzero(self.selector_mask(sel)).astype(np.int64)
