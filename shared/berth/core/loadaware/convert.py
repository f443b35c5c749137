"""Raw NodeMetric JSON to the NodeMetric Struct. Register with `CONVERTERS`."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from berth.core.loadaware.durations import DurationError, parse_duration
from berth.core.loadaware.model import AGGREGATION_TYPES, AggregatedUsage, NodeMetric, PodMetric
from berth.core.rawfields import Fields


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
