"""LoadAwareSchedulingArgs: decode (upstream JSON names), default, validate.

`parse_args` runs all three and raises ConfigError with every problem at once.
Defaulting mirrors upstream, quirks included: a given threshold map replaces
the default map (never merged), and resourceWeights default only when
dominantResourceWeight is 0.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from berth.core.api.koordinator.model import AGGREGATION_TYPES
from berth.core.api.meta.durations import DurationError, parse_duration
from berth.core.errors import ConfigError

PLUGIN = "LoadAwareScheduling"
AT = f"pluginConfig[{PLUGIN}].args"
_INT64 = (-(2**63), 2**63 - 1)

DEFAULT_WEIGHTS = {"cpu": 1, "memory": 1}
DEFAULT_THRESHOLDS = {"cpu": 65, "memory": 95}
DEFAULT_FACTORS = {"cpu": 85, "memory": 70}


class AggregatedArgs(msgspec.Struct, frozen=True, kw_only=True):
    usage_thresholds: dict[str, int] = {}
    usage_aggregation_type: str = ""
    usage_aggregated_duration: int = 0  # nanoseconds; 0 = longest reported
    score_aggregation_type: str = ""
    score_aggregated_duration: int = 0


class LoadAwareSchedulingArgs(msgspec.Struct, frozen=True, kw_only=True):
    """Defaulted args. Build from JSON with `parse_args` to get upstream's defaulting."""

    filter_expired_node_metrics: bool = True
    node_metric_expiration_seconds: int = 180
    enable_schedule_when_node_metrics_expired: bool = False
    resource_weights: dict[str, int] = msgspec.field(default_factory=lambda: dict(DEFAULT_WEIGHTS))
    dominant_resource_weight: int = 0
    usage_thresholds: dict[str, int] = msgspec.field(default_factory=lambda: dict(DEFAULT_THRESHOLDS))
    prod_usage_thresholds: dict[str, int] = {}
    prod_usage_include_sys: bool = False
    score_according_prod_usage: bool = False
    estimator: str = ""
    estimated_scaling_factors: dict[str, int] = msgspec.field(default_factory=lambda: dict(DEFAULT_FACTORS))
    estimated_seconds_after_pod_scheduled: int | None = None
    estimated_seconds_after_initialized: int | None = None
    allow_customize_estimation: bool = False
    aggregated: AggregatedArgs | None = None
    supported_resources: tuple[str, ...] = ()

    @classmethod
    def parse(cls, raw: Any, path: str, problems: list[str]) -> LoadAwareSchedulingArgs:
        """The config loader's shape: every problem appended (paths under `path`), defaults on error."""
        fields, found = decode(raw, path)
        args = defaults(fields)
        found += validate(args, path)
        problems += found
        return args


# JSON name -> (kind, attribute). Kinds: bool, int, str, map, list, agg, dur.
_FIELDS: dict[str, tuple[str, str]] = {
    "filterExpiredNodeMetrics": ("bool", "filter_expired_node_metrics"),
    "nodeMetricExpirationSeconds": ("int", "node_metric_expiration_seconds"),
    "enableScheduleWhenNodeMetricsExpired": ("bool", "enable_schedule_when_node_metrics_expired"),
    "resourceWeights": ("map", "resource_weights"),
    "dominantResourceWeight": ("int", "dominant_resource_weight"),
    "usageThresholds": ("map", "usage_thresholds"),
    "prodUsageThresholds": ("map", "prod_usage_thresholds"),
    "prodUsageIncludeSys": ("bool", "prod_usage_include_sys"),
    "scoreAccordingProdUsage": ("bool", "score_according_prod_usage"),
    "estimator": ("str", "estimator"),
    "estimatedScalingFactors": ("map", "estimated_scaling_factors"),
    "estimatedSecondsAfterPodScheduled": ("int", "estimated_seconds_after_pod_scheduled"),
    "estimatedSecondsAfterInitialized": ("int", "estimated_seconds_after_initialized"),
    "allowCustomizeEstimation": ("bool", "allow_customize_estimation"),
    "aggregated": ("agg", "aggregated"),
    "supportedResources": ("list", "supported_resources"),
    "apiVersion": ("str", ""),
    "kind": ("str", ""),
}
_AGG_FIELDS: dict[str, tuple[str, str]] = {
    "usageThresholds": ("map", "usage_thresholds"),
    "usageAggregationType": ("str", "usage_aggregation_type"),
    "usageAggregatedDuration": ("dur", "usage_aggregated_duration"),
    "scoreAggregationType": ("str", "score_aggregation_type"),
    "scoreAggregatedDuration": ("dur", "score_aggregated_duration"),
}


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and _INT64[0] <= v <= _INT64[1]


def _decode_value(kind: str, v: Any, at: str, problems: list[str]) -> Any:
    """The typed value, or None (with a problem recorded) when it has the wrong type."""
    if kind == "bool":
        if isinstance(v, bool):
            return v
        problems.append(f"{at}: expected true or false, got {v!r}")
    elif kind == "int":
        if _is_int(v):
            return v
        problems.append(f"{at}: expected an integer, got {v!r}")
    elif kind == "str":
        if isinstance(v, str):
            return v
        problems.append(f"{at}: expected a string, got {v!r}")
    elif kind == "map":
        if not isinstance(v, Mapping):
            problems.append(f"{at}: expected an object of resource name to integer")
            return None
        out = {}
        for k, n in v.items():
            if _is_int(n):
                out[str(k)] = n
            elif n is not None:
                problems.append(f"{at}[{k}]: expected an integer, got {n!r}")
        return out
    elif kind == "list":
        if isinstance(v, list) and all(isinstance(x, str) for x in v):
            return tuple(v)
        problems.append(f"{at}: expected a list of resource names")
    elif kind == "dur":
        if not isinstance(v, str):
            problems.append(f'{at}: expected a duration string such as "5m", got {v!r}')
            return None
        try:
            return parse_duration(v)
        except DurationError as e:
            problems.append(f"{at}: {e}")
    elif kind == "agg":
        if isinstance(v, Mapping):
            return _decode_object(v, _AGG_FIELDS, at, problems)
        problems.append(f"{at}: expected an object")
    return None


def _decode_object(
    raw: Mapping[str, Any], fields: Mapping[str, tuple[str, str]], at: str, problems: list[str]
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, v in raw.items():
        spec = fields.get(name)
        if spec is None:
            problems.append(f"{at}.{name}: unknown field")
            continue
        if v is None:
            continue  # null is "not set", as for Go pointers
        value = _decode_value(spec[0], v, f"{at}.{name}", problems)
        if value is not None and spec[1]:
            out[spec[1]] = value
    return out


def decode(raw: Mapping[str, Any] | None, at: str = AT) -> tuple[dict[str, Any], list[str]]:
    """The fields that are set (by attribute name) and the type problems found."""
    problems: list[str] = []
    if raw is None:
        return {}, problems
    if not isinstance(raw, Mapping):
        return {}, [f"{at}: expected an object"]
    return _decode_object(raw, _FIELDS, at, problems), problems


def defaults(fields: Mapping[str, Any]) -> LoadAwareSchedulingArgs:
    """Upstream's SetDefaults_LoadAwareSchedulingArgs over the decoded fields."""
    f = dict(fields)
    f.setdefault("filter_expired_node_metrics", True)
    f.setdefault("node_metric_expiration_seconds", 180)
    f.setdefault("enable_schedule_when_node_metrics_expired", False)
    if not f.get("resource_weights") and f.get("dominant_resource_weight", 0) == 0:
        f["resource_weights"] = dict(DEFAULT_WEIGHTS)
    f.setdefault("resource_weights", {})
    if not f.get("usage_thresholds"):
        f["usage_thresholds"] = dict(DEFAULT_THRESHOLDS)  # replaced, never merged
    factors = dict(f.get("estimated_scaling_factors") or {})
    for k, v in DEFAULT_FACTORS.items():
        factors.setdefault(k, v)  # factors ARE merged
    f["estimated_scaling_factors"] = factors
    agg = f.get("aggregated")
    if agg is not None:
        f["aggregated"] = AggregatedArgs(**agg)
    return LoadAwareSchedulingArgs(**f)


def _range(m: Mapping[str, int], lo: int, hi: int, at: str, out: list[str]) -> None:
    for k, v in m.items():
        if not lo <= v <= hi:
            out.append(f"{at}[{k}]: must be in [{lo}, {hi}], got {v}")


def validate(args: LoadAwareSchedulingArgs, at: str = AT) -> list[str]:
    """Every problem with defaulted args, as `<path>: <problem>` lines."""
    out: list[str] = []
    if args.node_metric_expiration_seconds <= 0:
        out.append(
            f"{at}.nodeMetricExpirationSeconds: must be greater than 0, got {args.node_metric_expiration_seconds}"
        )
    _range(args.resource_weights, 1, 100, f"{at}.resourceWeights", out)
    if not 0 <= args.dominant_resource_weight <= 100:
        out.append(f"{at}.dominantResourceWeight: must be in [0, 100], got {args.dominant_resource_weight}")
    _range(args.usage_thresholds, 0, 100, f"{at}.usageThresholds", out)
    _range(args.estimated_scaling_factors, 1, 100, f"{at}.estimatedScalingFactors", out)
    for k in args.resource_weights:
        if k not in args.estimated_scaling_factors:
            out.append(f"{at}.estimatedScalingFactors[{k}]: not found: resourceWeights[{k}] needs a scaling factor")
    agg = args.aggregated
    if agg is not None:
        a = f"{at}.aggregated"
        _range(agg.usage_thresholds, 0, 100, f"{a}.usageThresholds", out)
        for name, kind in (
            ("usageAggregationType", agg.usage_aggregation_type),
            ("scoreAggregationType", agg.score_aggregation_type),
        ):
            if kind and kind not in AGGREGATION_TYPES:
                out.append(f"{a}.{name}: must be one of {', '.join(AGGREGATION_TYPES)} or empty, got {kind!r}")
        for name, d in (
            ("usageAggregatedDuration", agg.usage_aggregated_duration),
            ("scoreAggregatedDuration", agg.score_aggregated_duration),
        ):
            if d < 0:
                out.append(f"{a}.{name}: must not be negative")
    return out


def parse_args(raw: Mapping[str, Any] | None, at: str = AT) -> LoadAwareSchedulingArgs:
    """Decode, default and validate; raises ConfigError listing every problem."""
    fields, problems = decode(raw, at)
    args = defaults(fields)
    problems += validate(args, at)
    if problems:
        raise ConfigError(problems)
    return args
