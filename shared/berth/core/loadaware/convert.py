"""Raw NodeMetric JSON to the NodeMetric Struct. Register with `CONVERTERS`."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from berth.core.loadaware.durations import DurationError, parse_duration
from berth.core.loadaware.model import AGGREGATION_TYPES, AggregatedUsage, NodeMetric, PodMetric
from berth.core.rawfields import (
    Fields,
    Irregular,
    fast_path,
    integer,
    items,
    meta_fast,
    moment,
    obj,
    resource_list,
    text,
)


def _aggregated(f: Fields, items: list[Any]) -> tuple[AggregatedUsage, ...]:
    out = []
    for i, a in enumerate(items):
        if a is None:
            continue
        at = f"status.nodeMetric.aggregatedNodeUsages[{i}]"
        text = f.str("duration", base=a, at=f"{at}.duration")
        try:
            duration = parse_duration(text) if text else 0
        except DurationError as e:
            raise f.error(f"{at}.duration", str(e)) from None
        usage = {}
        for kind in AGGREGATION_TYPES:
            here = f"{at}.usage.{kind}.resources"
            if f.get(f"usage.{kind}", base=a) is not None:
                usage[kind] = f.resources(f"usage.{kind}.resources", base=a, at=here)
        out.append(AggregatedUsage(duration=duration, usage=usage))
    return tuple(out)


def _pods(f: Fields) -> tuple[PodMetric, ...]:
    out = []
    for i, p in enumerate(f.list("status.podsMetric")):
        if p is None:
            continue
        at = f"status.podsMetric[{i}]"
        out.append(
            PodMetric(
                namespace=f.str("namespace", base=p, at=f"{at}.namespace"),
                name=f.str("name", base=p, at=f"{at}.name"),
                priority=f.str("priority", base=p, at=f"{at}.priority"),
                usage=f.resources("podUsage.resources", base=p, at=f"{at}.podUsage.resources"),
            )
        )
    return tuple(out)


# ---- fast path (see rawfields): the common well-formed shape, Irregular for the rest ----

_DURATIONS: dict[str, int] = {}


def _duration_fast(text: str) -> int:
    ns = _DURATIONS.get(text)
    if ns is None:
        try:
            ns = parse_duration(text)
        except DurationError:
            raise Irregular from None
        if len(_DURATIONS) >= 1024:
            _DURATIONS.clear()
        _DURATIONS[text] = ns
    return ns


def _usage_fast(v: Any) -> dict[str, int]:
    """`<v>.resources` of an object that may be absent."""
    if v is None:
        return {}
    if type(v) is not dict:
        raise Irregular
    return resource_list(v.get("resources"))


def _aggregated_fast(v: Any) -> tuple[AggregatedUsage, ...]:
    out = []
    for a in items(v):
        if a is None:
            continue
        if type(a) is not dict:
            raise Irregular
        duration = text(a.get("duration"))
        usage_raw = obj(a.get("usage"))
        usage = {}
        if usage_raw is not None:
            for kind in AGGREGATION_TYPES:
                u = usage_raw.get(kind)
                if u is not None:
                    if type(u) is not dict:
                        raise Irregular
                    usage[kind] = resource_list(u.get("resources"))
        out.append(AggregatedUsage(duration=_duration_fast(duration) if duration else 0, usage=usage))
    return tuple(out)


def _pods_fast(v: Any) -> tuple[PodMetric, ...]:
    out = []
    for p in items(v):
        if p is None:
            continue
        if type(p) is not dict:
            raise Irregular
        out.append(
            PodMetric(
                namespace=text(p.get("namespace")),
                name=text(p.get("name")),
                priority=text(p.get("priority")),
                usage=_usage_fast(p.get("podUsage")),
            )
        )
    return tuple(out)


def _nodemetric_fast(raw: dict[str, Any]) -> NodeMetric:
    meta, name = meta_fast(raw)
    spec = obj(raw.get("spec"))
    policy = None if spec is None else obj(spec.get("metricCollectPolicy"))
    status = obj(raw.get("status")) or {}
    nm = obj(status.get("nodeMetric"))
    return NodeMetric(
        name=name,
        resource_version=text(meta.get("resourceVersion")),
        update_time=moment(status.get("updateTime")),
        report_interval_seconds=None if policy is None else integer(policy.get("reportIntervalSeconds")),
        has_node_metric=nm is not None,
        node_usage={} if nm is None else _usage_fast(nm.get("nodeUsage")),
        system_usage={} if nm is None else _usage_fast(nm.get("systemUsage")),
        aggregated=() if nm is None else _aggregated_fast(nm.get("aggregatedNodeUsages")),
        pods=_pods_fast(status.get("podsMetric")),
    )


@fast_path(_nodemetric_fast)
def nodemetric_from_raw(raw: Mapping[str, Any]) -> NodeMetric:
    f = Fields(raw)
    name = f.str("metadata.name")
    if not name:
        raise f.error("metadata.name", "is required")
    nm = f.get("status.nodeMetric")
    if nm is not None and not isinstance(nm, Mapping):
        raise f.error("status.nodeMetric", "expected an object")
    return NodeMetric(
        name=name,
        resource_version=f.str("metadata.resourceVersion"),
        update_time=f.time("status.updateTime"),
        report_interval_seconds=f.int("spec.metricCollectPolicy.reportIntervalSeconds"),
        has_node_metric=nm is not None,
        node_usage=f.resources("status.nodeMetric.nodeUsage.resources"),
        system_usage=f.resources("status.nodeMetric.systemUsage.resources"),
        aggregated=_aggregated(f, f.list("status.nodeMetric.aggregatedNodeUsages")),
        pods=_pods(f),
    )


CONVERTERS: dict[tuple[str, str], Callable[[Mapping[str, Any]], Any]] = {
    ("slo.koordinator.sh", "NodeMetric"): nodemetric_from_raw,
}
