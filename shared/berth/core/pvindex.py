"""The per-node PV index (seed 002, "Performance and Optimizations").

For each storage class, the available PVs (phase Available, no claimRef, not
being deleted) are kept sorted by (capacity, name). Each PV's node affinity is
evaluated once, when the PV or node labels change, into the node slots it fits:
one (slot, entry) pair per fitting node. Matching a claim on every node at once
is then a masked minimum over the pairs: the smallest fitting PV per node, with
ties broken by PV name (upstream's tie order is random; berth's is not).
"""

from __future__ import annotations

import bisect

import numpy as np
import numpy.typing as npt

from berth.core.model import PersistentVolume, PersistentVolumeClaim
from berth.core.nodes import NodeTable
from berth.core.quantity import NANO, ceil_units

Ints = npt.NDArray[np.int64]
MODE_BITS = {"ReadWriteOnce": 1, "ReadOnlyMany": 2, "ReadWriteMany": 4, "ReadWriteOncePod": 8}
_REBUILD_AT = 256
_NONE = np.iinfo(np.int64).max


def mode_bits(modes: tuple[str, ...]) -> int:
    bits = 0
    for m in modes:
        bits |= MODE_BITS.get(m, 16)
    return bits


def available(pv: PersistentVolume) -> bool:
    return pv.phase == "Available" and pv.claim_ref is None and not pv.deleting


class ClassIndex:
    """Available PVs of one storage class, and the node slots each one fits."""

    def __init__(self) -> None:
        self.pvs: dict[str, PersistentVolume] = {}
        self._pending: dict[str, PersistentVolume | None] = {}
        self._built_labels = -1
        self._slots: dict[str, Ints] = {}
        self.keys: list[tuple[int, str]] = []
        self._entry_cap: dict[str, int] = {}
        self.order: list[PersistentVolume] = []
        self.cap_floor = np.zeros(0, dtype=np.int64)
        self.cap_ceil = np.zeros(0, dtype=np.int64)
        self.modes = np.zeros(0, dtype=np.int64)
        self.block = np.zeros(0, dtype=bool)
        self.pair_slot = np.zeros(0, dtype=np.int64)
        self.pair_entry = np.zeros(0, dtype=np.int64)

    def put(self, pv: PersistentVolume) -> None:
        old = self.pvs.get(pv.name)
        if old is None or old.node_affinity != pv.node_affinity:
            self._slots.pop(pv.name, None)
        self.pvs[pv.name] = pv
        self._pending[pv.name] = pv

    def drop(self, name: str) -> None:
        if self.pvs.pop(name, None) is not None:
            self._pending[name] = None

    # ---- maintenance -------------------------------------------------------
    def ensure(self, nodes: NodeTable) -> None:
        """Bring the arrays up to date with PV and node-label changes."""
        if self._built_labels != nodes.label_version or len(self._pending) > _REBUILD_AT:
            self._rebuild(nodes)
            return
        pending, self._pending = self._pending, {}
        for name, pv in pending.items():
            self._remove_entry(name)
            if pv is not None:
                self._insert(pv, nodes)

    def _slots_of(self, pv: PersistentVolume, nodes: NodeTable) -> Ints:
        s = self._slots.get(pv.name)
        if s is None:
            s = nodes.selector_slots(pv.node_affinity)
            self._slots[pv.name] = s
        return s

    def _rebuild(self, nodes: NodeTable) -> None:
        if self._built_labels != nodes.label_version:
            self._slots = {}
        self._pending = {}
        self._built_labels = nodes.label_version
        self.order = sorted(self.pvs.values(), key=lambda p: (p.capacity, p.name))
        self.keys = [(p.capacity, p.name) for p in self.order]
        self._entry_cap = {p.name: p.capacity for p in self.order}
        n = len(self.order)
        self.cap_floor = np.array([p.capacity // NANO for p in self.order], dtype=np.int64)
        self.cap_ceil = np.array([ceil_units(p.capacity) for p in self.order], dtype=np.int64)
        self.modes = np.array([mode_bits(p.access_modes) for p in self.order], dtype=np.int64)
        self.block = np.array([p.volume_mode == "Block" for p in self.order], dtype=bool)
        slots = [self._slots_of(p, nodes) for p in self.order]
        counts = np.array([len(s) for s in slots], dtype=np.int64)
        self.pair_slot = np.concatenate(slots) if slots else np.zeros(0, dtype=np.int64)
        self.pair_entry = np.repeat(np.arange(n, dtype=np.int64), counts)

    def _find(self, name: str) -> int | None:
        cap = self._entry_cap.get(name)
        if cap is None:
            return None
        i = bisect.bisect_left(self.keys, (cap, name))
        return i if i < len(self.keys) and self.keys[i] == (cap, name) else None

    def _remove_entry(self, name: str) -> None:
        i = self._find(name)
        if i is None:
            return
        del self.keys[i]
        del self.order[i]
        del self._entry_cap[name]
        self.cap_floor = np.delete(self.cap_floor, i)
        self.cap_ceil = np.delete(self.cap_ceil, i)
        self.modes = np.delete(self.modes, i)
        self.block = np.delete(self.block, i)
        keep = self.pair_entry != i
        self.pair_slot = self.pair_slot[keep]
        self.pair_entry = self.pair_entry[keep]
        self.pair_entry[self.pair_entry > i] -= 1

    def _insert(self, pv: PersistentVolume, nodes: NodeTable) -> None:
        key = (pv.capacity, pv.name)
        i = bisect.bisect_left(self.keys, key)
        self.keys.insert(i, key)
        self.order.insert(i, pv)
        self._entry_cap[pv.name] = pv.capacity
        self.cap_floor = np.insert(self.cap_floor, i, pv.capacity // NANO)
        self.cap_ceil = np.insert(self.cap_ceil, i, ceil_units(pv.capacity))
        self.modes = np.insert(self.modes, i, mode_bits(pv.access_modes))
        self.block = np.insert(self.block, i, pv.volume_mode == "Block")
        self.pair_entry[self.pair_entry >= i] += 1
        slots = self._slots_of(pv, nodes)
        self.pair_slot = np.concatenate([self.pair_slot, slots])
        self.pair_entry = np.concatenate([self.pair_entry, np.full(len(slots), i, dtype=np.int64)])

    # ---- queries -----------------------------------------------------------
    def candidates(self, claim: PersistentVolumeClaim) -> npt.NDArray[np.bool_]:
        """Entries that satisfy the claim regardless of node: size, modes, volumeMode, selector, VAC."""
        request = claim.request or 0
        if request % NANO == 0:
            ok = self.cap_floor >= request // NANO
        else:
            ok = np.array([p.capacity >= request for p in self.order], dtype=bool)
        need = mode_bits(claim.access_modes)
        ok &= (self.modes & need) == need
        ok &= self.block == (claim.volume_mode == "Block")
        if claim.attributes_class or claim.selector is not None:
            extra = [
                p.attributes_class == claim.attributes_class
                and (claim.selector is None or (claim.selector.valid and claim.selector.matches(p.labels)))
                for p in self.order
            ]
            ok &= np.array(extra, dtype=bool)
        return ok

    def best(self, claim: PersistentVolumeClaim, nslots: int, exclude: list[Ints]) -> Ints:
        """Per slot, the entry of the smallest fitting PV, or -1. `exclude` holds, per slot,
        entries already chosen for this pod's earlier claims on that node (-1 for none)."""
        ok = self.candidates(claim)
        pm = ok[self.pair_entry]
        for ex in exclude:
            pm &= self.pair_entry != ex[self.pair_slot]
        best = np.full(nslots, _NONE, dtype=np.int64)
        np.minimum.at(best, self.pair_slot[pm], self.pair_entry[pm])
        best[best == _NONE] = -1
        return best

    def per_node(self, slot: int) -> list[PersistentVolume]:
        """The available PVs that fit one node, smallest first."""
        entries = np.unique(self.pair_entry[self.pair_slot == slot])
        return [self.order[i] for i in entries]
