"""Capacity priority (KEP-1845): utilization through a piecewise-linear shape, in kube's integer math."""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import numpy.typing as npt

Ints = npt.NDArray[np.int64]
Shape = tuple[tuple[int, int], ...]

DEFAULT_SHAPE: Shape = ((0, 0), (100, 10))  # the seed's: the tightest fit wins
MAX_CUSTOM_SCORE = 10


def go_div(num: Ints, den: Ints | int) -> Ints:
    """Integer division truncating toward zero, as Go does (Python's // floors)."""
    q: Ints = (np.sign(num) * (np.abs(num) // den)).astype(np.int64)
    return q


def shape_score(shape: Shape, utilization: Ints) -> Ints:
    """f(p) for integer utilizations 0..100; shape scores are scaled x10 to 0..100."""
    table = _table(shape)
    out: Ints = table[np.minimum(np.maximum(utilization, 0), 100)]  # np.clip, without its wrappers' cost
    return out


@lru_cache(maxsize=64)
def _table(shape: Shape) -> Ints:
    """f(0..100): kube's piecewise-linear interpolation in integer math, once per shape."""
    u = np.array([p[0] for p in shape], dtype=np.int64)
    s = np.array([p[1] * (100 // MAX_CUSTOM_SCORE) for p in shape], dtype=np.int64)
    util = np.arange(101, dtype=np.int64)
    i = np.searchsorted(u, util, side="left")
    out = np.full(util.shape, s[-1], dtype=np.int64)
    out[i == 0] = s[0]
    mid = (i > 0) & (i < len(u))
    if mid.any():
        j = i[mid]
        num = (s[j] - s[j - 1]) * (util[mid] - u[j - 1])
        out[mid] = s[j - 1] + go_div(num, u[j] - u[j - 1])
    out.flags.writeable = False
    return out


def class_score(shape: Shape, requested: Ints, capacity: Ints) -> Ints:
    """Per-class score from requested and capacity bytes (over-full or zero capacity scores as 100%)."""
    full = (capacity == 0) | (requested > capacity)
    util = np.where(full, 100, (requested * 100) // np.where(capacity == 0, 1, capacity))
    return shape_score(shape, util.astype(np.int64))


def weighted_node_score(scores: list[Ints], weights: list[int], present: list[npt.NDArray[np.bool_]]) -> Ints:
    """Σ(score × weight) / Σ weight over the classes present on each node, rounded half away.
    Integer math: for non-negative n and d, Go's Round(n / d) is (2n + d) // 2d."""
    if not scores:
        return np.zeros(0, dtype=np.int64)
    if len(scores) == 1:  # one class: the weighted mean is the score itself
        return np.where(present[0], scores[0], 0).astype(np.int64)
    num = np.zeros(scores[0].shape, dtype=np.int64)
    den = np.zeros(scores[0].shape, dtype=np.int64)
    for sc, w, p in zip(scores, weights, present, strict=True):
        pw = p * np.int64(w)  # w where the class is present, else 0
        num += sc * pw
        den += pw
    out: Ints = (2 * num + den) // np.maximum(2 * den, 1)
    out[den <= 0] = 0
    return out
