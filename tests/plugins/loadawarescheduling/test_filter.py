from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest

from berth.core.api.kinds import convert
from berth.core.cache.state import Reservation
from berth.core.framework.status import SKIP, Code

from .builders import T0, World, ago, node, node_metric, pod, pod_usage

CPU_OVER = "node(s) cpu usage exceed threshold"
MEM_OVER = "node(s) memory usage exceed threshold"
CPU_AGG_OVER = "node(s) cpu aggregated usage exceed threshold"
EXPIRED = "node(s) nodeMetric expired"
# Factors of 100 make the incoming pod (1 cpu, 1Gi) exactly 1% of the 100-cpu/100Gi node.
BASE: dict[str, Any] = {"estimatedScalingFactors": {"cpu": 100, "memory": 100}}
PROD_POD = pod("in", cpu="1", memory="1Gi")
BATCH_POD = pod("in", cpu=None, memory=None, requests={"kubernetes.io/batch-cpu": "1000"})
AGG = {"usageThresholds": {"cpu": 50}, "usageAggregationType": "p95"}
AGG_DATA = {"5m0s": {"p95": ("10", "1Gi")}, "30m0s": {"p95": ("60", "1Gi")}}


def custom(**parts: Any) -> dict[str, str]:
    return {"scheduling.koordinator.sh/usage-thresholds": json.dumps(parts)}


CASES: list[tuple[str, dict[str, Any], dict[str, Any], dict[str, Any] | None, dict[str, Any], str | None]] = [
    # id, args, metric kwargs (None: no NodeMetric), node kwargs, pod raw + now, expected reason
    ("no NodeMetric passes", {}, None, {}, {}, None),
    ("65.4% rounds to 65 and passes", {}, {"cpu": "64400m"}, {}, {}, None),
    ("65.5% rounds to 66 and fails", {}, {"cpu": "64500m"}, {}, {}, CPU_OVER),
    ("exactly the threshold passes", {}, {"cpu": "64"}, {}, {}, None),
    ("memory over", {}, {"memory": "95Gi"}, {}, {}, MEM_OVER),
    ("cpu reported first when both are over", {}, {"cpu": "90", "memory": "99Gi"}, {}, {}, CPU_OVER),
    ("expired exactly at expiration", {}, {"update": ago(180)}, {}, {}, EXPIRED),
    ("just before expiration", {}, {"update": ago(180) + timedelta(microseconds=1)}, {}, {}, None),
    ("expiration is configurable", {"nodeMetricExpirationSeconds": 300}, {"update": ago(180), "cpu": "90"}, {}, {}, CPU_OVER),
    ("no updateTime is expired", {}, {"update": None}, {}, {}, EXPIRED),
    ("expired allowed: thresholds skipped", {"enableScheduleWhenNodeMetricsExpired": True}, {"update": ago(999), "cpu": "90"}, {}, {}, None),
    ("expiry not filtered: stale usage used", {"filterExpiredNodeMetrics": False}, {"update": ago(999), "cpu": "90"}, {}, {}, CPU_OVER),
    ("expiry not filtered: stale and fine", {"filterExpiredNodeMetrics": False}, {"update": ago(999)}, {}, {}, None),
    ("zero thresholds bypass even expiry", {"usageThresholds": {"cpu": 0, "memory": 0}}, {"update": None, "cpu": "99"}, {}, {}, None),
    ("no status.nodeMetric passes", {}, {"with_node_metric": False}, {}, {}, None),
    ("no status.nodeMetric but expired", {}, {"with_node_metric": False, "update": ago(999)}, {}, {}, EXPIRED),
    ("resource with zero allocatable is skipped", {"usageThresholds": {"nvidia.com/gpu": 10}}, {}, {}, {}, None),
    # prod thresholds: for prod pods only, and then the whole-node thresholds are not checked
    ("prod pod: prod path ignores node usage", {"prodUsageThresholds": {"cpu": 50}}, {"cpu": "90"}, {}, {}, None),
    ("batch pod: usage path", {"prodUsageThresholds": {"cpu": 50}}, {"cpu": "90"}, {}, {"pod": BATCH_POD}, CPU_OVER),
    ("all-zero prod thresholds are unset", {"prodUsageThresholds": {"cpu": 0}}, {"cpu": "90"}, {}, {}, CPU_OVER),
    (
        "prod usage over the prod threshold",
        {"prodUsageThresholds": {"cpu": 50}},
        {"pods": [pod_usage("p1", cpu="50", memory="1Gi")]},
        {"pods": [pod("p1", "n", cpu="50", scheduled=ago(3600))]},
        {},
        CPU_OVER,
    ),
    # aggregated thresholds replace the plain ones
    ("agg: longest duration (30m, 60%)", {"aggregated": AGG}, {"agg": AGG_DATA}, {}, {}, CPU_AGG_OVER),
    ("agg: plain thresholds not checked", {"aggregated": {**AGG, "usageAggregatedDuration": "5m"}}, {"cpu": "90", "agg": AGG_DATA}, {}, {}, None),
    ("agg: missing duration uses estimates", {"aggregated": {**AGG, "usageAggregatedDuration": "10m"}}, {"cpu": "90", "agg": AGG_DATA}, {}, {}, None),
    ("agg: cold start falls back to nodeUsage", {"aggregated": AGG}, {"cpu": "90"}, {}, {}, CPU_AGG_OVER),
    ("agg: all-zero thresholds disable filtering", {"aggregated": {**AGG, "usageThresholds": {"cpu": 0}}}, {"cpu": "90"}, {}, {}, None),
    ("agg without a type is not used", {"aggregated": {"usageThresholds": {"cpu": 50}}}, {"cpu": "60"}, {}, {}, None),
    # per-node thresholds annotation
    ("custom usage map replaces the global one", {}, {"cpu": "90"}, {"annotations": custom(usageThresholds={"memory": 50})}, {}, None),
    ("custom usage map is checked", {}, {"memory": "60Gi"}, {"annotations": custom(usageThresholds={"memory": 50})}, {}, MEM_OVER),
    ("custom unknown resources only: unchecked", {}, {"cpu": "90"}, {"annotations": custom(usageThresholds={"x/y": 1})}, {}, None),
    ("unparsable custom thresholds: global", {}, {"cpu": "90"}, {"annotations": {"scheduling.koordinator.sh/usage-thresholds": "{"}}, {}, CPU_OVER),
    ("custom agg without type is absent", {}, {"cpu": "90"}, {"annotations": custom(aggregatedUsage={"usageThresholds": {"cpu": 99}})}, {}, CPU_OVER),
    (
        "custom agg replaces usage path",
        {},
        {"cpu": "90", "agg": AGG_DATA},
        {"annotations": custom(aggregatedUsage={"usageThresholds": {"cpu": 20}, "usageAggregationType": "p95", "usageAggregatedDuration": "5m0s"})},
        {},
        None,
    ),
    (
        "custom agg is checked",
        {},
        {"agg": AGG_DATA},
        {"annotations": custom(aggregatedUsage={"usageThresholds": {"cpu": 50}, "usageAggregationType": "p95"})},
        {},
        CPU_AGG_OVER,
    ),
    ("custom prod thresholds", {}, {"cpu": "90"}, {"annotations": custom(prodUsageThresholds={"cpu": 50})}, {}, None),
    ("custom bad duration: global", {}, {"cpu": "90"}, {"annotations": custom(aggregatedUsage={"usageThresholds": {"cpu": 99}, "usageAggregationType": "p95", "usageAggregatedDuration": "5"})}, {}, CPU_OVER),
    # raw allocatable undoes amplification
    ("raw allocatable", {}, {"cpu": "40"}, {"annotations": {"node.koordinator.sh/raw-allocatable": '{"cpu": 50}'}}, {}, CPU_OVER),
    ("status allocatable", {}, {"cpu": "40"}, {}, {}, None),
    # assigned pods the metric does not cover are counted at their estimate
    ("unreported assigned pods", {}, {"cpu": "10"}, {"pods": [pod("a", "n", cpu="30"), pod("b", "n", cpu="30")]}, {}, CPU_OVER),
    ("reported assigned pods", {}, {"cpu": "10", "pods": [pod_usage("a", "1"), pod_usage("b", "1")]},
     {"pods": [pod("a", "n", cpu="30", scheduled=ago(3600)), pod("b", "n", cpu="30", scheduled=ago(3600))]}, {}, None),
]  # fmt: skip


@pytest.mark.parametrize(("args", "metric", "setup", "run", "want"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_filter(
    args: dict[str, Any], metric: dict[str, Any] | None, setup: dict[str, Any], run: dict[str, Any], want: str | None
) -> None:
    setup = dict(setup)
    w = World({**BASE, **args}, node("n", cpu="100", memory="100Gi", annotations=setup.pop("annotations", None)))
    for p in setup.pop("pods", []):
        w.apply(p)
    if metric is not None:
        w.apply(node_metric("n", **{"cpu": "0", "memory": "0", **metric}))
    assert w.filter(run.get("pod", PROD_POD), run.get("now", T0)) == {"n": want}


def test_daemonset_pods_skip_the_filter() -> None:
    w = World(BASE, node("n", cpu="100", memory="100Gi"), node_metric("n", cpu="99"))
    ds = convert(pod("ds", daemonset=True))
    c = w.cycle(ds)
    assert w.plugin.pre_filter(c) == SKIP
    assert w.plugin.filter(c) == []
    assert w.filter(pod("plain")) == {"n": CPU_OVER}


def test_reasons_per_node_and_path() -> None:
    args = {**BASE, "aggregated": AGG}
    agg_node = custom(aggregatedUsage={"usageThresholds": {"memory": 50}, "usageAggregationType": "avg"})
    w = World(args)
    w.apply(node("a", cpu="100", memory="100Gi", annotations=custom(usageThresholds={"cpu": 50})))
    w.apply(node("b", cpu="100", memory="100Gi", annotations=agg_node))
    w.apply(node("c", cpu="100", memory="100Gi"))
    w.apply(node("d", cpu="100", memory="100Gi"))
    # a: custom usage replaces usage; the global aggregated profile still wins (agg path)
    w.apply(node_metric("a", cpu="60", agg={"5m": {"p95": ("60", "1Gi")}}))
    w.apply(node_metric("b", memory="60Gi", agg={"5m": {"avg": ("1", "60Gi")}}))
    w.apply(node_metric("c", cpu="1"))
    assert w.filter(PROD_POD) == {
        "a": CPU_AGG_OVER,
        "b": "node(s) memory aggregated usage exceed threshold",
        "c": None,
        "d": None,
    }


def test_bursts_onto_a_cold_node_are_caught() -> None:
    """Pods decided earlier in the run count at their estimate on their node."""
    w = World(BASE, node("n", cpu="100", memory="100Gi"), node_metric("n", cpu="10"))
    incoming = pod("in", cpu="10", memory="1Gi")
    verdicts = []
    for i in range(6):
        verdicts.append(w.filter(incoming)["n"])
        w.state.reserve(Reservation(pod=convert(pod(f"b{i}", cpu="10", memory="1Gi")), node="n"))
    assert verdicts == [None, None, None, None, None, CPU_OVER]  # 10 + 5x10 + 10 = 70% > 65%
    w.state.release("default/b0")  # 6 reserved: 10 + 50 + 10 = 70%
    assert w.filter(incoming)["n"] == CPU_OVER
    w.state.release("default/b1")
    assert w.filter(incoming)["n"] is None


def test_filter_without_registered_store_is_an_error() -> None:
    from berth.core.cache.state import ClusterState
    from berth.core.framework.cycle import Cycle

    w = World(BASE)
    c = Cycle(pod=convert(PROD_POD), state=ClusterState(), now=T0)
    status = w.plugin.pre_filter(c)
    assert status.code == Code.ERROR and "extension" in status.message
    (failure,) = w.plugin.filter(c)
    assert failure.code == Code.ERROR and "extension" in failure.reason


def test_pre_filter_never_fails() -> None:
    w = World(BASE)
    assert w.plugin.pre_filter(w.cycle(PROD_POD)).code == Code.SUCCESS


@pytest.mark.parametrize(
    ("memory", "usage", "want"),
    [
        ("100Gi", "94Gi", None),  # values far below 2**52: the percentage is added up in floats
        ("100Gi", "95Gi", MEM_OVER),
        ("8Pi", "7800Ti", None),  # 2**53 bytes of memory: in int64, then converted, as upstream
        ("8Pi", "7900Ti", MEM_OVER),
        ("8Pi", "0", None),
    ],
)
def test_usage_percentage_alike_below_and_above_2_to_the_52(memory: str, usage: str, want: str | None) -> None:
    """The Filter sums usage and estimate as floats only while both are exact there; above it the
    int64 path runs. Both agree with the one-node judgement the queueing hint uses."""
    w = World(BASE, node("n", cpu="100", memory=memory), node_metric("n", cpu="0", memory=usage))
    assert w.filter(PROD_POD) == {"n": want}
    assert w.plugin.passes(w.state, convert(PROD_POD), w.state.nodes.slot["n"], T0) == (want is None)
