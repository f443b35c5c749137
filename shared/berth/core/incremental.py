"""Incremental evaluation (issue 21): node-local plugins' Filter and Score answers kept per pod shape,
computed again only on the slots that changed since.

Per (plugin, point, shape key) the cache keeps, per slot, the answer (a Filter: one bit per reason
of the shape; a Score: the score) and the slot's version (ClusterState.slot_versions) and moving
value (the plugin's moving()) it was computed at. A cycle recomputes the slots whose version or
moving value differs (a Score only where feasible), or runs the plugin's own Filter or Score when
there is no entry yet or too many slots changed; both give the same answer on every slot read.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from berth.core.framework import Code, Cycle, Failure, Mask, NodeLocalFilter, NodeLocalScore, Scores, Shape

Ints = npt.NDArray[np.int64]
ENTRIES = 32  # shapes kept per plugin and point, the least recently used dropped first
REDO_SHARE = 0.25  # past this share of the slots to recompute, the plugin's own full pass runs
_BITS = 63  # reasons a Filter's shape may name (one bit each in an int64)


@dataclass
class _Kept:
    versions: Ints  # per slot, the version its answer was computed at (-1: never)
    moving: npt.NDArray[Any] | None
    answers: Ints  # Filter: a bit per reason of the shape; Score: the score


class Answers:
    """One scheduler's kept answers."""

    def __init__(self, redo_share: float = REDO_SHARE) -> None:
        self.redo_share = redo_share
        self._kept: OrderedDict[tuple[int, str, Hashable], _Kept] = OrderedDict()
        self._per_point: dict[tuple[int, str], int] = {}

    def filter(self, plugin: NodeLocalFilter, cycle: Cycle, run: Any) -> list[Failure]:
        """run: the plugin's own filter (called when nothing is kept or too much changed)."""
        shape = plugin.filter_shape(cycle)
        if shape is None or len(shape.reasons) > _BITS:
            out: list[Failure] = run(cycle)
            return out
        state = cycle.state
        versions = state.slot_versions()
        moving = plugin.moving(cycle)
        valid = state.nodes.valid
        key = (id(plugin), "Filter", shape.key)
        kept = self._get(key, len(versions))
        stale = None if kept is None else _stale(kept, versions, moving) & valid
        idx = None if stale is None else np.flatnonzero(stale)
        if kept is None or idx is None or len(idx) > self.redo_share * len(versions):
            out = run(cycle)
            bits = _bits(out, shape, len(versions))
            if bits is None:
                self._kept.pop(key, None)
            else:
                self._put(key, _Kept(versions.copy(), None if moving is None else moving.copy(), bits))
            return out
        if len(idx):
            found = plugin.filter_on(cycle, idx)
            fresh = np.zeros(len(idx), dtype=np.int64)
            where = {r: i for i, r in enumerate(shape.reasons)}
            for f in found:
                i = where.get((f.reason, f.code))
                if f.code is Code.ERROR or i is None:  # an Error ends the cycle whatever its mask
                    self._kept.pop(key, None)
                    return [Failure(valid, f.reason, f.code)] if f.code is Code.ERROR else run(cycle)
                fresh[f.mask] |= 1 << i
            kept.answers[idx] = fresh
            kept.versions[idx] = versions[idx]
            if moving is not None and kept.moving is not None:
                kept.moving[idx] = moving[idx]
        return _failures(kept.answers, shape, valid)

    def score(self, plugin: NodeLocalScore, cycle: Cycle, feasible: Mask, run: Any) -> Scores:
        """run: the plugin's own score. Only feasible slots are kept fresh (only they are read)."""
        shape = plugin.score_shape(cycle)
        if shape is None:
            out: Scores = run(cycle, feasible)
            return out
        versions = cycle.state.slot_versions()
        moving = plugin.moving(cycle)
        key = (id(plugin), "Score", shape.key)
        kept = self._get(key, len(versions))
        idx = None if kept is None else np.flatnonzero(_stale(kept, versions, moving) & feasible)
        if kept is None or idx is None or len(idx) > self.redo_share * len(versions):
            out = run(cycle, feasible)
            n = len(versions)
            if kept is None or (moving is None) != (kept.moving is None):
                fresh = None if moving is None else moving.copy()
                kept = _Kept(np.full(n, -1, dtype=np.int64), fresh, np.zeros(n, dtype=np.int64))
            kept.answers[:n][feasible] = out[feasible]
            kept.versions[:n][feasible] = versions[feasible]
            if moving is not None and kept.moving is not None:
                kept.moving[:n][feasible] = moving[feasible]
            self._put(key, kept)
            return out
        if len(idx):
            kept.answers[idx] = plugin.score_on(cycle, idx)
            kept.versions[idx] = versions[idx]
            if moving is not None and kept.moving is not None:
                kept.moving[idx] = moving[idx]
        return kept.answers.copy()  # NormalizeScore changes its array in place

    def _get(self, key: tuple[int, str, Hashable], n: int) -> _Kept | None:
        kept = self._kept.get(key)
        if kept is None:
            return None
        self._kept.move_to_end(key)
        if len(kept.versions) < n:  # new slots: never computed
            grow = n - len(kept.versions)
            kept.versions = np.concatenate([kept.versions, np.full(grow, -1, dtype=np.int64)])
            kept.answers = np.concatenate([kept.answers, np.zeros(grow, dtype=np.int64)])
            if kept.moving is not None:
                kept.moving = np.concatenate([kept.moving, np.zeros(grow, dtype=kept.moving.dtype)])
        return kept

    def _put(self, key: tuple[int, str, Hashable], kept: _Kept) -> None:
        point = key[:2]
        if key not in self._kept:
            count = self._per_point.get(point, 0)
            if count >= ENTRIES:  # drop this point's least recently used shape
                oldest = next(k for k in self._kept if k[:2] == point)
                del self._kept[oldest]
                count -= 1
            self._per_point[point] = count + 1
        self._kept[key] = kept
        self._kept.move_to_end(key)


def _stale(kept: _Kept, versions: Ints, moving: npt.NDArray[Any] | None) -> Mask:
    stale: Mask = kept.versions != versions
    if moving is not None:
        if kept.moving is None or len(kept.moving) != len(moving):
            stale[:] = True
        else:
            stale |= kept.moving != moving
    return stale


def _bits(failures: list[Failure], shape: Shape, n: int) -> Ints | None:
    """A full Filter's failures as one bit per reason per slot; None if one is not the shape's (or an Error)."""
    where = {r: i for i, r in enumerate(shape.reasons)}
    bits = np.zeros(n, dtype=np.int64)
    for f in failures:
        i = where.get((f.reason, f.code))
        if i is None or f.code is Code.ERROR:
            return None
        bits[f.mask[:n]] |= 1 << i
    return bits


def _failures(bits: Ints, shape: Shape, valid: Mask) -> list[Failure]:
    """The Failures a full Filter gives for these bits: the shape's reasons in order, empty ones left out."""
    n = len(valid)
    bits = bits[:n]
    present = int(np.bitwise_or.reduce(bits[valid])) if n else 0
    out = []
    for i, (reason, code) in enumerate(shape.reasons):
        if present >> i & 1:
            mask = (bits & (1 << i)) != 0
            mask &= valid
            out.append(Failure(mask, reason, code))
    return out
