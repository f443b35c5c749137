"""Koordinator NodeMetric (slo.koordinator.sh/v1alpha1) as the load-aware policy reads it.

Resource lists follow berth's model: cpu in millicores, everything else in
whole units, both rounded up. Durations are Go durations in nanoseconds.
"""

from __future__ import annotations

from datetime import datetime

import msgspec

from berth.core.api.core.model import ResourceList
from berth.core.api.koordinator.wire import AggregatedNodeUsage

AGGREGATION_TYPES = ("avg", "p50", "p90", "p95", "p99")

# Annotations and labels the plugin reads.
ANN_USAGE_THRESHOLDS = "scheduling.koordinator.sh/usage-thresholds"
ANN_RAW_ALLOCATABLE = "node.koordinator.sh/raw-allocatable"
ANN_SCALING_FACTORS = "scheduling.koordinator.sh/load-estimated-scaling-factors"
ANN_SECONDS_AFTER_SCHEDULED = "scheduling.koordinator.sh/load-estimated-seconds-after-pod-scheduled"
ANN_SECONDS_AFTER_INITIALIZED = "scheduling.koordinator.sh/load-estimated-seconds-after-initialized"
ANN_RESERVE_POD = "scheduling.koordinator.sh/reserve-pod"
LABEL_PRIORITY_CLASS = "koordinator.sh/priority-class"
LABEL_QOS_CLASS = "koordinator.sh/qosClass"


class PodMetric(msgspec.Struct, frozen=True, gc=False):
    """One status.podsMetric[] entry."""

    namespace: str
    name: str
    priority: str = ""
    usage: ResourceList = {}

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


class AggregatedUsage(msgspec.Struct, frozen=True, gc=False):
    """One status.nodeMetric.aggregatedNodeUsages[] entry: aggregation type -> usage."""

    duration: int  # nanoseconds
    usage: dict[str, ResourceList] = {}


class NodeMetric(msgspec.Struct, frozen=True, gc=False):
    name: str
    resource_version: str = ""
    update_time: datetime | None = None
    report_interval_seconds: int | None = None
    has_node_metric: bool = False  # status.nodeMetric is set
    node_usage: ResourceList = {}
    system_usage: ResourceList = {}
    # status.nodeMetric.aggregatedNodeUsages as they arrived: their raw JSON, or the decoded entries (null
    # ones left out); checked when the metric was read; made AggregatedUsages by
    # `api.koordinator.normalise.aggregated` only when a profile reads them
    aggregated: tuple[AggregatedNodeUsage, ...] | msgspec.Raw = ()
    pods: tuple[PodMetric, ...] = ()
