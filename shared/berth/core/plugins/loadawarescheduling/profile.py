"""Usage-threshold profiles: the global one from args, and per-node overrides.

The node annotation `scheduling.koordinator.sh/usage-thresholds` replaces each
part of the global profile it sets (usage, prod, aggregated), wholesale.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from berth.core.api.meta.durations import DurationError, parse_duration
from berth.core.plugins.loadawarescheduling.args import LoadAwareSchedulingArgs
from berth.core.plugins.loadawarescheduling.vectors import Resources, Vec


@dataclass(frozen=True)
class ThresholdProfile:
    usage: Vec
    prod: Vec | None  # None: no prod thresholds
    agg: Vec | None  # None: no aggregated thresholds
    agg_type: str = ""
    agg_duration: int = 0  # nanoseconds; 0 = longest reported

    @property
    def prod_on(self) -> bool:
        """Prod thresholds count only when some value is non-zero."""
        return self.prod is not None and bool(np.any(self.prod != 0))


def global_profile(args: LoadAwareSchedulingArgs, res: Resources) -> ThresholdProfile:
    prod = res.vec(args.prod_usage_thresholds) if args.prod_usage_thresholds else None
    a = args.aggregated
    if a is not None and a.usage_thresholds and a.usage_aggregation_type:
        return ThresholdProfile(
            res.vec(args.usage_thresholds),
            prod,
            res.vec(a.usage_thresholds),
            a.usage_aggregation_type,
            a.usage_aggregated_duration,
        )
    return ThresholdProfile(res.vec(args.usage_thresholds), prod, None)


class _Bad(Exception):
    pass


def _int_map(v: Any) -> dict[str, int]:
    if v is None:
        return {}
    if not isinstance(v, dict):
        raise _Bad
    out = {}
    for k, n in v.items():
        if n is None:
            continue
        if isinstance(n, bool) or not isinstance(n, int):
            raise _Bad
        out[k] = n
    return out


def _str(v: Any) -> str:
    if v is None:
        return ""
    if not isinstance(v, str):
        raise _Bad
    return v


def node_profile(annotations: Mapping[str, str], base: ThresholdProfile, res: Resources, ann: str) -> ThresholdProfile:
    """The profile for a node: `base`, with the parts the annotation sets replaced."""
    text = annotations.get(ann)
    if text is None:
        return base
    try:
        raw = json.loads(text)
        if raw is None:
            return base
        if not isinstance(raw, dict):
            raise _Bad
        usage = _int_map(raw.get("usageThresholds"))
        prod = _int_map(raw.get("prodUsageThresholds"))
        agg_raw = raw.get("aggregatedUsage")
        if agg_raw is not None and not isinstance(agg_raw, dict):
            raise _Bad
        agg_raw = agg_raw or {}
        agg = _int_map(agg_raw.get("usageThresholds"))
        agg_type = _str(agg_raw.get("usageAggregationType"))
        d = agg_raw.get("usageAggregatedDuration")
        duration = 0 if d is None else parse_duration(_str(d))
    except (ValueError, _Bad, DurationError):
        return base  # unparsable: upstream logs it and uses the global profile
    has_agg = bool(agg) and bool(agg_type)
    if not usage and not prod and not has_agg:
        return base
    return ThresholdProfile(
        res.vec(usage) if usage else base.usage,
        res.vec(prod) if prod else base.prod,
        res.vec(agg) if has_agg else base.agg,
        agg_type if has_agg else base.agg_type,
        duration if has_agg else base.agg_duration,
    )
