"""Fixed resource vectors (upstream's vectorizer) and Go's rounding."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

import numpy as np
import numpy.typing as npt

from berth.core.plugins.loadawarescheduling.args import LoadAwareSchedulingArgs

Vec = npt.NDArray[np.int64]


class Resources:
    """The resources the plugin looks at, sorted by name; anything else is ignored."""

    def __init__(self, names: Iterable[str]) -> None:
        self.names: tuple[str, ...] = tuple(sorted(set(names)))
        self.index = {n: i for i, n in enumerate(self.names)}
        self.size = len(self.names)

    @classmethod
    def of(cls, args: LoadAwareSchedulingArgs) -> Resources:
        names = {"cpu", "memory", *args.usage_thresholds, *args.prod_usage_thresholds}
        names |= {*args.resource_weights, *args.estimated_scaling_factors, *args.supported_resources}
        if args.aggregated is not None:
            names |= set(args.aggregated.usage_thresholds)
        return cls(names)

    def vec(self, values: Mapping[str, int]) -> Vec:
        out = np.zeros(self.size, dtype=np.int64)
        for k, v in values.items():
            i = self.index.get(k)
            if i is not None:
                out[i] = v
        return out

    def zeros(self) -> Vec:
        return np.zeros(self.size, dtype=np.int64)


def round_half_away(x: float) -> int:
    """Go's math.Round: halves go away from zero (Python's round() goes to even)."""
    if not math.isfinite(x):
        raise OverflowError(f"cannot round {x}")
    whole = math.trunc(x)
    if abs(x - whole) >= 0.5:
        whole += 1 if x > 0 else -1
    return whole
