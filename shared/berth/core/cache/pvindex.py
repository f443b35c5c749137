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
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from berth.core.api.core.model import PersistentVolume, PersistentVolumeClaim
from berth.core.api.meta.quantity import NANO, SIZE_CAP, bytes_capped, ceil_units
from berth.core.cache.nodes import NodeTable

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


@dataclass
class _Query:
    """A kept answer of best() for one claim shape, without exclusions."""

    claim: PersistentVolumeClaim  # one claim of the shape
    start: int
    nslots: int
    ok: npt.NDArray[np.bool_]  # candidates() from start
    best: Ints  # the one-node part, _NONE where none
    seen: int  # changes applied so far


class ClassIndex:
    """Available PVs of one storage class, and the node slots each one fits.

    Entries are sorted by (capacity, name); pairs (slot, entry) are sorted by entry, so the PVs big
    enough for a claim are a suffix of both. A PV that stops being available is only marked dead;
    dead entries are dropped when the index is rebuilt (many changes, or node labels changed). A PV
    that comes back as it was (a reservation released) brings its dead entry back to life.
    """

    def __init__(self) -> None:
        self.pvs: dict[str, PersistentVolume] = {}
        self._pending: dict[str, PersistentVolume | None] = {}
        self._built_labels = -1
        self._slots: dict[str, Ints] = {}
        self.keys: list[tuple[int, str]] = []
        self.order: list[PersistentVolume] = []
        self._alive_cap: dict[str, int] = {}
        self._dead = 0
        self.alive = np.zeros(0, dtype=bool)
        self.cap_floor = np.zeros(0, dtype=np.int64)
        self.cap_ceil = np.zeros(0, dtype=np.int64)
        self.modes = np.zeros(0, dtype=np.int64)
        self.block = np.zeros(0, dtype=bool)
        self.vac = np.zeros(0, dtype=bool)
        self.pair_slot = np.zeros(0, dtype=np.int64)
        self.pair_entry = np.zeros(0, dtype=np.int64)
        # PVs that fit several nodes (zonal, or no affinity) are grouped by their affinity instead
        self.group = np.zeros(0, dtype=np.int64)  # per entry: its group, or -1 for a one-node PV
        self._groups: dict[object, int] = {}  # affinity -> group
        self._group_slots: list[Ints] = []
        self.group_slot = np.zeros(0, dtype=np.int64)  # (slot, group) pairs of the groups
        self.group_id = np.zeros(0, dtype=np.int64)
        # answers kept per claim shape, patched on kills and revivals; an insert forgets them (see best)
        self._queries: dict[tuple[object, ...], _Query] = {}
        self._changed: list[int] = []  # entries killed or revived since the arrays last moved
        self._by_slot: tuple[Ints, Ints] | None = None  # (start per slot, entries in slot order)

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
        crowded = self._dead > max(_REBUILD_AT, len(self.keys) // 4)
        if self._built_labels != nodes.label_version or len(self._pending) > _REBUILD_AT or crowded:
            self._rebuild(nodes)
            return
        pending, self._pending = self._pending, {}
        for name, pv in pending.items():
            self._kill(name)
            if pv is not None and not self._revive(pv):
                self._insert(pv, nodes)

    def _slots_of(self, pv: PersistentVolume, nodes: NodeTable) -> Ints:
        s = self._slots.get(pv.name)
        if s is None:
            s = nodes.selector_slots(pv.node_affinity)
            self._slots[pv.name] = s
        return s

    def _moved(self) -> None:
        """Entries were renumbered or pairs changed: kept answers no longer apply."""
        self._queries.clear()
        self._changed.clear()
        self._by_slot = None

    def _rebuild(self, nodes: NodeTable) -> None:
        self._moved()
        if self._built_labels != nodes.label_version:
            self._slots = {}
        self._pending = {}
        self._dead = 0
        self._built_labels = nodes.label_version
        self.order = sorted(self.pvs.values(), key=lambda p: (p.capacity, p.name))
        self.keys = [(p.capacity, p.name) for p in self.order]
        self._alive_cap = {p.name: p.capacity for p in self.order}
        n = len(self.order)
        self.alive = np.ones(n, dtype=bool)
        self.cap_floor = np.array([bytes_capped(p.capacity // NANO) for p in self.order], dtype=np.int64)
        self.cap_ceil = np.array([bytes_capped(ceil_units(p.capacity)) for p in self.order], dtype=np.int64)
        self.modes = np.array([mode_bits(p.access_modes) for p in self.order], dtype=np.int64)
        self.block = np.array([p.volume_mode == "Block" for p in self.order], dtype=bool)
        self.vac = np.array([bool(p.attributes_class) for p in self.order], dtype=bool)
        self._groups, self._group_slots = {}, []
        one_node: list[Ints] = []
        groups = []
        for p in self.order:
            slots = self._slots_of(p, nodes)
            if len(slots) > 1:
                groups.append(self._group_of(p, slots)[0])
                one_node.append(slots[:0])
            else:
                groups.append(-1)
                one_node.append(slots)
        self.group = np.array(groups, dtype=np.int64)
        counts = np.array([len(s) for s in one_node], dtype=np.int64)
        self.pair_slot = np.concatenate(one_node) if one_node else np.zeros(0, dtype=np.int64)
        self.pair_entry = np.repeat(np.arange(n, dtype=np.int64), counts)
        counts = np.array([len(s) for s in self._group_slots], dtype=np.int64)
        self.group_slot = np.concatenate(self._group_slots) if self._group_slots else np.zeros(0, dtype=np.int64)
        self.group_id = np.repeat(np.arange(len(self._group_slots), dtype=np.int64), counts)

    def _group_of(self, pv: PersistentVolume, slots: Ints) -> tuple[int, bool]:
        """The group of PVs sharing this PV's affinity, and whether it is new."""
        g = self._groups.get(pv.node_affinity)
        if g is not None:
            return g, False
        g = self._groups[pv.node_affinity] = len(self._group_slots)
        self._group_slots.append(slots)
        return g, True

    def _kill(self, name: str) -> None:
        """Mark a PV's live entry dead (it stays in place until the next rebuild)."""
        cap = self._alive_cap.pop(name, None)
        if cap is None:
            return
        i = bisect.bisect_left(self.keys, (cap, name))
        while not self.alive[i]:  # dead twins of the same key sit before the live one
            i += 1
        self.alive[i] = False
        self._dead += 1
        self._changed.append(i)

    def _revive(self, pv: PersistentVolume) -> bool:
        """Bring back a dead entry of this PV if everything the index reads of it is unchanged."""
        key = (pv.capacity, pv.name)
        i = bisect.bisect_left(self.keys, key)
        while i < len(self.keys) and self.keys[i] == key:
            old = self.order[i]
            if not self.alive[i] and _same_entry(old, pv):
                self.order[i] = pv
                self.alive[i] = True
                self._alive_cap[pv.name] = pv.capacity
                self._dead -= 1
                self._changed.append(i)
                return True
            i += 1
        return False

    def _insert(self, pv: PersistentVolume, nodes: NodeTable) -> None:
        self._moved()
        key = (pv.capacity, pv.name)
        i = bisect.bisect_right(self.keys, key)
        self.keys.insert(i, key)
        self.order.insert(i, pv)
        self._alive_cap[pv.name] = pv.capacity
        self.alive = np.insert(self.alive, i, True)
        self.cap_floor = np.insert(self.cap_floor, i, bytes_capped(pv.capacity // NANO))
        self.cap_ceil = np.insert(self.cap_ceil, i, bytes_capped(ceil_units(pv.capacity)))
        self.modes = np.insert(self.modes, i, mode_bits(pv.access_modes))
        self.block = np.insert(self.block, i, pv.volume_mode == "Block")
        self.vac = np.insert(self.vac, i, bool(pv.attributes_class))
        at = int(np.searchsorted(self.pair_entry, i, side="left"))
        self.pair_entry[at:] += 1
        slots = self._slots_of(pv, nodes)
        if len(slots) > 1:
            g, new = self._group_of(pv, slots)
            if new:
                self.group_slot = np.concatenate([self.group_slot, slots])
                self.group_id = np.concatenate([self.group_id, np.full(len(slots), g, dtype=np.int64)])
            self.group = np.insert(self.group, i, g)
            return
        self.group = np.insert(self.group, i, -1)
        self.pair_slot = np.insert(self.pair_slot, at, slots)
        self.pair_entry = np.insert(self.pair_entry, at, np.full(len(slots), i, dtype=np.int64))

    # ---- queries -----------------------------------------------------------
    def _first_fitting(self, request: int) -> int:
        """The first entry whose capacity may cover the request (entries are sorted by capacity)."""
        return int(np.searchsorted(self.cap_floor, bytes_capped(request // NANO), side="left"))

    def candidates(
        self, claim: PersistentVolumeClaim, start: int = 0, stop: int | None = None
    ) -> npt.NDArray[np.bool_]:
        """Entries from `start` on (to `stop`) that satisfy the claim regardless of node: size, modes,
        volumeMode, selector, VAC, and still available."""
        request = claim.request or 0
        part = slice(start, stop)
        ok = self.alive[part].copy()
        if request % NANO or request // NANO >= SIZE_CAP:  # a fractional or capped byte count: compare exactly
            ok &= np.array([p.capacity >= request for p in self.order[part]], dtype=bool)
        need = mode_bits(claim.access_modes)
        if need:
            ok &= (self.modes[part] & need) == need
        ok &= self.block[part] == (claim.volume_mode == "Block")
        if not claim.attributes_class:
            ok &= ~self.vac[part]  # a claim without a VolumeAttributesClass takes only PVs without one
        if claim.attributes_class or claim.selector is not None:
            extra = [
                p.attributes_class == claim.attributes_class
                and (claim.selector is None or (claim.selector.valid and claim.selector.matches(p.labels)))
                for p in self.order[part]
            ]
            ok &= np.array(extra, dtype=bool)
        return ok

    def best(self, claim: PersistentVolumeClaim, nslots: int, exclude: list[Ints]) -> Ints:
        """Per slot, the entry of the smallest fitting PV, or -1. `exclude` holds, per slot,
        entries already chosen for this pod's earlier claims on that node (-1 for none).

        Without `exclude`, the one-node part is kept per claim shape and patched when PVs are
        taken or come back: only the slots whose answer was taken, and those of a PV back, are
        looked up again."""
        start = self._first_fitting(claim.request or 0)
        shape = (claim.request, claim.access_modes, claim.volume_mode, claim.attributes_class, claim.selector)
        q = None if exclude else self._queries.get(shape)
        if q is not None and q.nslots == nslots:
            self._catch_up(q)
            ok, best = q.ok, q.best.copy()
        else:
            ok = self.candidates(claim, start)
            best = self._pairs_best(ok, start, nslots, exclude)
            if not exclude:
                if len(self._queries) >= 64:
                    self._queries.clear()
                self._queries[shape] = _Query(claim, start, nslots, ok, best.copy(), len(self._changed))
        if len(self.group_id):
            np.minimum(best, self._best_in_groups(ok, start, nslots, exclude), out=best)
        best[best == _NONE] = -1
        return best

    def _pairs_best(self, ok: npt.NDArray[np.bool_], start: int, nslots: int, exclude: list[Ints]) -> Ints:
        first_pair = int(np.searchsorted(self.pair_entry, start, side="left"))
        entries = self.pair_entry[first_pair:]
        slots = self.pair_slot[first_pair:]
        pm = ok[entries - start]
        for ex in exclude:
            pm &= entries != ex[slots]
        best = np.full(nslots, _NONE, dtype=np.int64)
        np.minimum.at(best, slots[pm], entries[pm])
        return best

    def _catch_up(self, q: _Query) -> None:
        """Apply the kills and revivals since the answer was kept: a slot whose PV was taken gets
        its next one; a PV back is a candidate again where it fits the shape."""
        if q.seen == len(self._changed):
            return
        # sorted and unique; a set costs less than np.unique on the usual few entries
        changed = np.array(sorted(set(self._changed[q.seen :])), dtype=np.int64)
        q.seen = len(self._changed)
        changed = changed[changed >= q.start]
        if not len(changed):
            return
        # Only the entries' final state matters: an entry now dead is no candidate; one alive again
        # is one if it fits the shape (its fields are those it had when it died, see _revive).
        back = changed[self.alive[changed]]
        kills = changed[~self.alive[changed]]
        q.ok[kills - q.start] = False
        for e in back.tolist():
            q.ok[e - q.start] = self.candidates(q.claim, e, e + 1)[0]
        if len(kills):
            self._retake(q, kills)
        for e in back.tolist():
            if q.ok[e - q.start] and self.group[e] < 0:
                lo, hi = np.searchsorted(self.pair_entry, [e, e + 1])
                slots = self.pair_slot[lo:hi]
                q.best[slots] = np.minimum(q.best[slots], e)

    def _retake(self, q: _Query, kills: Ints) -> None:
        """Each slot whose answer was killed gets the smallest entry still fitting there."""
        if len(kills) <= 16:  # the usual few: cheaper than np.isin's sort
            hit = q.best == kills[0]
            for e in kills[1:].tolist():
                hit |= q.best == e
        else:
            hit = np.isin(q.best, kills)
        lost = np.flatnonzero(hit)
        if not len(lost):
            return
        ptr, by_slot = self._slot_lists()
        for s in lost.tolist():
            mine = by_slot[ptr[s] : ptr[s + 1]]
            mine = mine[mine >= q.start]
            fits = mine[q.ok[mine - q.start]]
            q.best[s] = fits[0] if len(fits) else _NONE

    def _slot_lists(self) -> tuple[Ints, Ints]:
        """The one-node pairs grouped by slot, entries ascending within each slot."""
        if self._by_slot is None:
            narrow = len(self.pair_slot) and int(self.pair_slot.max()) < 1 << 16
            by = self.pair_slot.astype(np.uint16) if narrow else self.pair_slot  # 16 bits: a radix sort
            order = np.argsort(by, kind="stable")
            slots = self.pair_slot[order]
            top = int(slots[-1]) + 2 if len(slots) else 1
            self._by_slot = (np.searchsorted(slots, np.arange(top)), self.pair_entry[order])
        return self._by_slot

    def _best_in_groups(self, ok: npt.NDArray[np.bool_], start: int, nslots: int, exclude: list[Ints]) -> Ints:
        """Per slot, the smallest fitting multi-node PV not excluded there: each group's k+1
        smallest candidates (k = earlier claims), then the first one not excluded per slot."""
        idx = np.flatnonzero(ok & (self.group[start:] >= 0)) + start
        grp = self.group[idx]
        ngroups = len(self._groups)
        choice = np.full(len(self.group_id), _NONE, dtype=np.int64)
        for _ in range(len(exclude) + 1):
            top = np.full(ngroups, _NONE, dtype=np.int64)
            np.minimum.at(top, grp, idx)
            cand = top[self.group_id]
            fine = (choice == _NONE) & (cand != _NONE)
            for ex in exclude:
                fine &= cand != ex[self.group_slot]
            choice[fine] = cand[fine]
            keep = idx != top[grp]
            idx, grp = idx[keep], grp[keep]
        best = np.full(nslots, _NONE, dtype=np.int64)
        np.minimum.at(best, self.group_slot, choice)
        return best


def _same_entry(a: PersistentVolume, b: PersistentVolume) -> bool:
    """Whether the index reads the same of both PVs (capacity and name aside)."""
    return (
        a.node_affinity == b.node_affinity
        and a.access_modes == b.access_modes
        and a.volume_mode == b.volume_mode
        and a.attributes_class == b.attributes_class
        and a.labels == b.labels
    )
