"""Koordinator's LoadAwareScheduling policy: NodeMetrics, args, estimation, Filter and Score."""

from berth.core.loadaware.args import LoadAwareSchedulingArgs, from_plugin_config, parse_args
from berth.core.loadaware.convert import CONVERTERS, nodemetric_from_raw
from berth.core.loadaware.model import NodeMetric
from berth.core.loadaware.plugin import LoadAwareScheduling
from berth.core.loadaware.store import NodeMetricStore

__all__ = [
    "CONVERTERS",
    "LoadAwareScheduling",
    "LoadAwareSchedulingArgs",
    "NodeMetric",
    "NodeMetricStore",
    "from_plugin_config",
    "nodemetric_from_raw",
    "parse_args",
]
