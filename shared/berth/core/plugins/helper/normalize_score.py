"""kube's DefaultNormalizeScore over the feasible slots, in place: score x 100 // the highest score;
`reverse` then takes each from 100. All zero: 0 each, or 100 each when reversed."""

from __future__ import annotations

import numpy as np

from berth.core import framework as fwk

_LOWEST = np.iinfo(np.int64).min


def default_normalize(scores: fwk.Scores, feasible: fwk.Mask, reverse: bool) -> None:
    n = len(feasible)
    # the highest feasible score (np.max's where= is several times slower than a where and a max)
    top = int(np.where(feasible, scores[:n], _LOWEST).max()) if np.count_nonzero(feasible) else 0
    if top == 0:
        if reverse:
            scores[:n][feasible] = fwk.MAX_NODE_SCORE
        return
    out = scores[:n] * fwk.MAX_NODE_SCORE // top
    if reverse:
        out = fwk.MAX_NODE_SCORE - out
    scores[:n] = np.where(feasible, out, scores[:n])
