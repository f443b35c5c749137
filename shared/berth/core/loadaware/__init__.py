"""Koordinator's LoadAwareScheduling policy: NodeMetrics, args, estimation, Filter and Score."""

from berth.core.loadaware.args import LoadAwareSchedulingArgs, from_plugin_config, parse_args
from berth.core.loadaware.model import NodeMetric
from berth.core.loadaware.plugin import LoadAwareScheduling
from berth.core.loadaware.store import NodeMetricStore

__all__ = [
    "LoadAwareScheduling",
    "LoadAwareSchedulingArgs",
    "NodeMetric",
    "NodeMetricStore",
    "from_plugin_config",
    "parse_args",
]
