"""Koordinator's NodeMetric (slo.koordinator.sh)."""

from __future__ import annotations

import msgspec

from berth.core.api.meta.wire import Int64, Object, Quantities, Wire


class Usage(Wire, frozen=True):
    resources: Quantities | None = None


class AggregatedUsages(Wire, frozen=True):
    avg: Usage | None = None
    p50: Usage | None = None
    p90: Usage | None = None
    p95: Usage | None = None
    p99: Usage | None = None


class AggregatedNodeUsage(Wire, frozen=True):
    duration: str | None = None
    usage: AggregatedUsages | None = None


class NodeMetricInfo(Wire, frozen=True):
    node_usage: Usage | None = None
    system_usage: Usage | None = None
    aggregated_node_usages: list[AggregatedNodeUsage | None] | None = None


class PodMetricInfo(Wire, frozen=True):
    namespace: str | None = None
    name: str | None = None
    priority: str | None = None
    pod_usage: Usage | None = None


class MetricCollectPolicy(Wire, frozen=True):
    report_interval_seconds: Int64 | None = None


class NodeMetricSpec(Wire, frozen=True):
    metric_collect_policy: MetricCollectPolicy | None = None


class NodeMetricStatus(Wire, frozen=True):
    update_time: str | None = None
    node_metric: NodeMetricInfo | None = None
    pods_metric: list[PodMetricInfo | None] | None = None


class NodeMetric(Object, frozen=True):
    spec: NodeMetricSpec | None = None
    status: NodeMetricStatus | None = None


# The one-pass decode's NodeMetric (berth.core.api.watch): status.nodeMetric left as its raw JSON, which
# api.koordinator.normalise reads in one pass over the bytes when it has the plain form Koordinator writes
# (and decodes as FastNodeMetricInfo otherwise, its aggregated usages still raw); what it cannot take
# is decoded again step by step with the whole Struct above, which names any problem.


class FastNodeMetricInfo(Wire, frozen=True):
    node_usage: Usage | None = None
    system_usage: Usage | None = None
    aggregated_node_usages: msgspec.Raw = msgspec.Raw()


class FastNodeMetricStatus(Wire, frozen=True):
    update_time: str | None = None
    node_metric: msgspec.Raw = msgspec.Raw()  # empty when absent; `null` when null
    pods_metric: list[PodMetricInfo | None] | None = None


class FastNodeMetric(Object, frozen=True, tag="NodeMetric"):
    spec: NodeMetricSpec | None = None
    status: FastNodeMetricStatus | None = None
