"""Incremental evaluation (issue 21): node-local plugins' Filter and Score answers kept per pod signature,
computed again only on the slots that changed since.

Per (plugin, point, signature key) the cache keeps every slot's answer (a Filter: a mask per reason of
the signature; a Score: the scores), the touch number of the state it is up to date with
(ClusterState.changes) and the plugin's moving() values it was computed at. A cycle computes again
the slots touched since (ClusterState.touched_since), those whose moving value differs, and a
Score's slots left stale while infeasible; it runs the plugin's own Filter or Score instead when
nothing is kept, every slot changed (ClusterState.generation) or too many did. Either way every slot
read gets the same answer.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from berth.core.framework.cycle import Cycle
from berth.core.framework.interface import NodeLocalFilter, NodeLocalScore, Signature
from berth.core.framework.status import Code, Failure
from berth.core.framework.types import Mask, Scores

ENTRIES = 32  # signatures kept per plugin and point, the least recently used dropped first
REDO_SHARE = 0.25  # past this share of the slots to compute again, the plugin's own full pass runs
# Filters are kept from this many slots up: below it a vectorised pass over every slot costs less
# than the bookkeeping (measured: NodeResourcesFit and LoadAwareScheduling break even at 10,000-20,000
# slots with 26 slots touched per cycle; 1.6x faster at 50,000). Scores win at 5,000 already.
FILTER_MIN_SLOTS = 16_384
FEW_TOUCHED = 64  # touches up to this many are read as a list of slots, more as a mask


@dataclass
class _Kept:
    change: int  # the state's touch number the answers are up to date with
    generation: int
    moving: npt.NDArray[Any] | None
    stale: Mask  # slots whose answer is not up to date (a Score's, left while infeasible; new slots)
    masks: list[Mask]  # a Filter's: per reason of the signature, the slots that fail with it
    scores: Scores  # a Score's


class Answers:
    """One scheduler's kept answers."""

    def __init__(self, redo_share: float = REDO_SHARE, filter_min_slots: int = FILTER_MIN_SLOTS) -> None:
        self.redo_share = redo_share
        self.filter_min_slots = filter_min_slots
        self._kept: OrderedDict[tuple[int, str, Hashable], _Kept] = OrderedDict()
        self._per_point: dict[tuple[int, str], int] = {}
        self._where: dict[tuple[tuple[str, Code], ...], dict[tuple[str, Code], int]] = {}

    def filter(self, plugin: NodeLocalFilter, cycle: Cycle, run: Callable[[Cycle], list[Failure]]) -> list[Failure]:
        """run: the plugin's own filter (called when nothing is kept or too much changed)."""
        state, valid = cycle.state, cycle.state.nodes.valid
        n = len(valid)
        sig = None if n < self.filter_min_slots else plugin.filter_signature(cycle)
        if sig is None:
            return run(cycle)
        moving = plugin.moving(cycle)
        key = (id(plugin), "Filter", sig.key)
        where = self._index(sig)
        kept = self._get(key, n, len(sig.reasons))
        idx = None if kept is None else self._stale(kept, cycle, moving, None)
        if kept is None or idx is None:
            out = run(cycle)
            masks = [np.zeros(n, dtype=bool) for _ in sig.reasons]
            for f in out:
                i = where.get((f.reason, f.code))
                if i is None or f.code is Code.ERROR:  # not the signature's: nothing is kept
                    self._kept.pop(key, None)
                    return out
                masks[i] |= f.mask[:n]
            empty = np.zeros(0, dtype=np.int64)
            self._put(key, _Kept(state.changes, state.generation, _copy(moving), np.zeros(n, dtype=bool), masks, empty))
            return out
        if len(idx):
            found = plugin.filter_on(cycle, idx)
            for mask in kept.masks:
                mask[idx] = False
            for f in found:
                i = where.get((f.reason, f.code))
                if i is None or f.code is Code.ERROR:  # an Error ends the cycle whatever its mask
                    self._kept.pop(key, None)
                    return [Failure(valid, f.reason, f.code)] if f.code is Code.ERROR else run(cycle)
                kept.masks[i][idx[f.mask]] = True
            kept.stale[idx] = False
            if moving is not None and kept.moving is not None:
                kept.moving[idx] = moving[idx]
        kept.change = state.changes
        return [
            Failure(mask.copy(), reason, code)
            for (reason, code), mask in zip(sig.reasons, kept.masks, strict=True)
            if np.count_nonzero(mask)  # faster than any() on a mask this long
        ]

    def score(
        self, plugin: NodeLocalScore, cycle: Cycle, feasible: Mask, run: Callable[[Cycle, Mask], Scores]
    ) -> Scores:
        """run: the plugin's own score. Only feasible slots are kept up to date (only they are read)."""
        sig = plugin.score_signature(cycle)
        if sig is None:
            return run(cycle, feasible)
        state = cycle.state
        n = len(feasible)
        moving = plugin.moving(cycle)
        key = (id(plugin), "Score", sig.key)
        kept = self._get(key, n, 0)
        idx = None if kept is None else self._stale(kept, cycle, moving, feasible)
        if kept is None or idx is None:
            out = run(cycle, feasible)
            self._put(key, _Kept(state.changes, state.generation, _copy(moving), ~feasible, [], out.copy()))
            return out
        if len(idx):
            kept.scores[idx] = plugin.score_on(cycle, idx)
            if moving is not None and kept.moving is not None:
                kept.moving[idx] = moving[idx]
        kept.change = state.changes
        return kept.scores.copy()  # NormalizeScore changes its array in place

    def _stale(
        self, kept: _Kept, cycle: Cycle, moving: npt.NDArray[Any] | None, feasible: Mask | None
    ) -> npt.NDArray[np.intp] | None:
        """The slots to compute again (only feasible ones, for a Score: the others stay stale), or
        None when a full pass is due."""
        state = cycle.state
        n = len(kept.stale)
        touched = state.touched_since(kept.change, n) if kept.generation == state.generation else None
        if touched is None:
            return None
        if moving is None and len(touched) <= FEW_TOUCHED and not _any_read(kept.stale, feasible):
            # the usual cycle: no slot read is stale but the touched ones, found without passes over every slot
            slots = sorted(set(touched))
            if feasible is not None:
                left = [s for s in slots if not feasible[s]]
                if left:
                    kept.stale[left] = True
                    slots = [s for s in slots if feasible[s]]
            return None if len(slots) > self.redo_share * n else np.array(slots, dtype=np.intp)
        stale = kept.stale.copy()
        stale[np.fromiter(touched, dtype=np.intp, count=len(touched))] = True
        if moving is not None:
            if kept.moving is None or len(kept.moving) != len(moving):
                return None
            stale |= kept.moving != moving
        if feasible is not None:
            kept.stale = stale & ~feasible
            stale &= feasible
        idx = np.flatnonzero(stale)
        if len(idx) > self.redo_share * n:
            return None
        return idx

    def _index(self, sig: Signature) -> dict[tuple[str, Code], int]:
        where = self._where.get(sig.reasons)
        if where is None:
            if len(self._where) >= 4 * ENTRIES:
                self._where.clear()
            where = self._where[sig.reasons] = {r: i for i, r in enumerate(sig.reasons)}
        return where

    def _get(self, key: tuple[int, str, Hashable], n: int, reasons: int) -> _Kept | None:
        kept = self._kept.get(key)
        if kept is None:
            return None
        self._kept.move_to_end(key)
        grow = n - len(kept.stale)
        if grow > 0:  # new slots: never computed
            kept.stale = np.concatenate([kept.stale, np.ones(grow, dtype=bool)])
            kept.masks = [np.concatenate([m, np.zeros(grow, dtype=bool)]) for m in kept.masks]
            if len(kept.scores):
                kept.scores = np.concatenate([kept.scores, np.zeros(grow, dtype=np.int64)])
            if kept.moving is not None:
                kept.moving = np.concatenate([kept.moving, np.zeros(grow, dtype=kept.moving.dtype)])
        return kept

    def _put(self, key: tuple[int, str, Hashable], kept: _Kept) -> None:
        point = key[:2]
        if key not in self._kept:
            count = self._per_point.get(point, 0)
            if count >= ENTRIES:  # drop this point's least recently used signature
                oldest = next(k for k in self._kept if k[:2] == point)
                del self._kept[oldest]
                count -= 1
            self._per_point[point] = count + 1
        self._kept[key] = kept
        self._kept.move_to_end(key)


def _any_read(stale: Mask, feasible: Mask | None) -> bool:
    """Whether a slot read (a feasible one, for a Score; any, for a Filter) is stale."""
    return bool(np.count_nonzero(stale if feasible is None else stale & feasible))


def _copy(a: npt.NDArray[Any] | None) -> npt.NDArray[Any] | None:
    return None if a is None else a.copy()
