from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from .builders import World, ago, node, node_metric, pod, pod_usage
from .builders import least_used_rows as least_used

BASE: dict[str, Any] = {"estimatedScalingFactors": {"cpu": 100, "memory": 100}}
PROD_POD = pod("in", cpu="1", memory="1Gi")  # exactly 1% of the node
BATCH_POD = pod("in", cpu=None, memory=None, requests={"kubernetes.io/batch-cpu": "1000"})
AGG_DATA = {"5m0s": {"p95": ("50", "50Gi")}, "30m0s": {"p95": ("80", "80Gi")}}

CASES: list[tuple[str, dict[str, Any], dict[str, Any] | None, list[dict[str, Any]], dict[str, Any], int]] = [
    # id, args, metric kwargs, assigned pods, pod, expected score
    ("no NodeMetric scores 0", {}, None, [], PROD_POD, 0),
    # cpu (100-21)% = 79, memory (100-41)% = 59, mean 69
    ("least used, equal weights", {}, {"cpu": "20", "memory": "40Gi"}, [], PROD_POD, 69),
    ("truncation: 78.5 -> 78", {}, {"cpu": "20500m", "memory": "40Gi"}, [], PROD_POD, 68),
    ("weights", {"resourceWeights": {"cpu": 3, "memory": 1}}, {"cpu": "20", "memory": "40Gi"}, [], PROD_POD, 74),
    ("dominant only (weights not defaulted)", {"dominantResourceWeight": 10}, {"cpu": "20", "memory": "40Gi"}, [], PROD_POD, 59),
    ("upstream drf case: min(85, 95)", {"dominantResourceWeight": 10}, {"cpu": "14", "memory": "4Gi"}, [], PROD_POD, 85),
    ("weights plus dominant", {"resourceWeights": {"cpu": 1, "memory": 1}, "dominantResourceWeight": 2},
     {"cpu": "20", "memory": "40Gi"}, [], PROD_POD, 64),
    ("dominant with a resource the node lacks", {"dominantResourceWeight": 10, "resourceWeights": {"cpu": 1, "memory": 1},
     "supportedResources": ["nvidia.com/gpu"]}, {"cpu": "20", "memory": "40Gi"}, [], PROD_POD, 11),
    ("over capacity scores 0 for that resource", {}, {"cpu": "120", "memory": "40Gi"}, [], PROD_POD, 29),
    ("expired scores 0", {}, {"update": ago(180)}, [], PROD_POD, 0),
    ("expired scores 0 even when not filtered", {"filterExpiredNodeMetrics": False}, {"update": ago(180)}, [], PROD_POD, 0),
    ("no updateTime scores 0", {}, {"update": None}, [], PROD_POD, 0),
    ("no status.nodeMetric scores 0", {}, {"with_node_metric": False}, [], PROD_POD, 0),
    # prod usage: only reported prod pods the cache knows, plus their deltas
    ("prod pod scored by prod usage", {"scoreAccordingProdUsage": True}, {"cpu": "50", "memory": "50Gi"}, [], PROD_POD, 99),
    ("batch pod scored by node usage", {"scoreAccordingProdUsage": True}, {"cpu": "50", "memory": "50Gi"}, [], BATCH_POD, 49),
    ("prod usage counts reported prod pods", {"scoreAccordingProdUsage": True},
     {"cpu": "50", "memory": "50Gi", "pods": [pod_usage("a", "20", "20Gi")]},
     [pod("a", "n", cpu="10", memory="10Gi", scheduled=ago(3600))], PROD_POD, 79),
    ("prod usage includes system usage", {"scoreAccordingProdUsage": True, "prodUsageIncludeSys": True},
     {"cpu": "50", "memory": "50Gi", "system": ("10", "10Gi")}, [], PROD_POD, 89),
    # aggregated scoring
    ("score aggregation, longest", {"aggregated": {"scoreAggregationType": "p95"}}, {"cpu": "10", "agg": AGG_DATA}, [], PROD_POD, 19),
    ("score aggregation, 5m", {"aggregated": {"scoreAggregationType": "p95", "scoreAggregatedDuration": "5m"}},
     {"cpu": "10", "agg": AGG_DATA}, [], PROD_POD, 49),
    ("score aggregation, missing: estimates only", {"aggregated": {"scoreAggregationType": "p95", "scoreAggregatedDuration": "1h"}},
     {"cpu": "90", "memory": "90Gi", "agg": AGG_DATA}, [], PROD_POD, 99),
    ("score aggregation, cold start: nodeUsage", {"aggregated": {"scoreAggregationType": "p99"}},
     {"cpu": "20", "memory": "40Gi", "agg": AGG_DATA}, [], PROD_POD, 69),
    ("prod scoring wins over aggregation", {"scoreAccordingProdUsage": True, "aggregated": {"scoreAggregationType": "p95"}},
     {"cpu": "10", "agg": AGG_DATA}, [], PROD_POD, 99),
    ("unreported assigned pods count at their estimate", {}, {"cpu": "20", "memory": "40Gi"},
     [pod("a", "n", cpu="10", memory="10Gi")], PROD_POD, 59),
    ("raw-allocatable-free node", {}, {"cpu": "0", "memory": "0"}, [], pod("big", cpu="200", memory="1Gi"), 49),
]  # fmt: skip


@pytest.mark.parametrize(
    ("args", "metric", "pods", "incoming", "want"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_score(
    args: dict[str, Any], metric: dict[str, Any] | None, pods: list[dict[str, Any]], incoming: dict[str, Any], want: int
) -> None:
    w = World({**BASE, **args}, node("n", cpu="100", memory="100Gi"))
    for p in pods:
        w.apply(p)
    if metric is not None:
        w.apply(node_metric("n", **{"cpu": "0", "memory": "0", **metric}))
    assert w.score(incoming) == {"n": want}


def test_score_ignores_daemonset_skip_and_reads_raw_allocatable() -> None:
    w = World(BASE)
    w.apply(node("n", cpu="100", memory="100Gi", annotations={"node.koordinator.sh/raw-allocatable": '{"cpu": "50"}'}))
    w.apply(node_metric("n", cpu="24", memory="49Gi"))
    # cpu (50-25)/50 = 50, memory 50 -> 50; DaemonSet pods are scored like any other
    assert w.score(pod("ds", daemonset=True)) == {"n": 50}


def test_least_used_integer_math() -> None:
    used = np.array([[1001, 0], [3000, 0], [3001, 5]], dtype=np.int64)
    cap = np.array([[3000, 0], [3000, 10], [3000, 10]], dtype=np.int64)
    w = np.array([1, 1], dtype=np.int64)
    # row 0: cpu 1999*100//3000 = 66, memory cap 0 -> 0: 33; row 1: 0 and 100: 50; row 2: 0 and 50: 25
    assert least_used(used, cap, w, 0).tolist() == [33, 50, 25]
    assert least_used(used, cap, w, 2).tolist() == [16, 25, 12]
    assert least_used(used, cap, np.zeros(2, dtype=np.int64), 0).tolist() == [0, 0, 0]


def test_nil_weights_score_zero() -> None:
    from berth.core.plugins.loadawarescheduling import LoadAwareScheduling
    from berth.core.plugins.loadawarescheduling.args import LoadAwareSchedulingArgs

    plugin = LoadAwareScheduling(LoadAwareSchedulingArgs(resource_weights={}, dominant_resource_weight=0))
    assert plugin.weights is None
