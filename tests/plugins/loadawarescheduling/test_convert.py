from __future__ import annotations

from typing import Any

import pytest

from berth.core.api.kinds import KINDS, kind_key
from berth.core.api.kinds import convert as nodemetric_from_raw
from berth.core.api.koordinator.model import AggregatedUsage, PodMetric
from berth.core.api.koordinator.normalise import aggregated
from berth.core.api.meta.durations import DurationError, parse_duration
from berth.core.errors import InputError

from .builders import GI, T0, node_metric, pod_usage

S = 10**9


@pytest.mark.parametrize(
    ("text", "ns"),
    [
        ("0", 0),
        ("5m", 300 * S),
        ("5m0s", 300 * S),
        ("1h30m", 5400 * S),
        ("1.5s", 1_500_000_000),
        (".5m", 30 * S),
        ("300ms", 300_000_000),
        ("2us", 2000),
        ("2µs", 2000),
        ("-5m", -300 * S),
        ("+1s", S),
    ],
)
def test_parse_duration(text: str, ns: int) -> None:
    assert parse_duration(text) == ns


@pytest.mark.parametrize("text", ["", "5", "m", "5x", "1..5s", "-", "5 m", "9999999999999h"])
def test_parse_duration_rejects(text: str) -> None:
    with pytest.raises(DurationError):
        parse_duration(text)


def test_registered_under_group_and_kind() -> None:
    raw = node_metric("n1")
    assert kind_key(raw) == ("slo.koordinator.sh", "NodeMetric")
    assert KINDS[kind_key(raw)].model.__name__ == "NodeMetric"  # what nodemetric makes


def test_reference_example() -> None:
    raw = node_metric(
        "node-1",
        cpu="12500m",
        memory="48Gi",
        interval=60,
        system=("1200m", "6Gi"),
        agg={"5m0s": {"avg": ("11", "47Gi"), "p95": ("15", "49Gi")}, "30m0s": {"p95": ("16", "50Gi")}},
        pods=[
            pod_usage("web-7c9d", "3", "8Gi"),
            pod_usage("spark-exec-1", "6", "20Gi", ns="batch", priority="koord-batch"),
        ],
    )
    m = nodemetric_from_raw(raw)
    assert m.name == "node-1" and m.update_time == T0 and m.report_interval_seconds == 60
    assert m.has_node_metric
    assert m.node_usage == {"cpu": 12500, "memory": 48 * GI}
    assert m.system_usage == {"cpu": 1200, "memory": 6 * GI}
    assert aggregated(m) == (
        AggregatedUsage(300 * S, {"avg": {"cpu": 11000, "memory": 47 * GI}, "p95": {"cpu": 15000, "memory": 49 * GI}}),
        AggregatedUsage(1800 * S, {"p95": {"cpu": 16000, "memory": 50 * GI}}),
    )
    assert m.pods[1] == PodMetric("batch", "spark-exec-1", "koord-batch", {"cpu": 6000, "memory": 20 * GI})


def test_rounding_up_and_absent_parts() -> None:
    raw = node_metric("n", cpu="0.1m", memory="1.5", update=None, with_node_metric=False)
    m = nodemetric_from_raw(raw)
    assert not m.has_node_metric and m.update_time is None and m.report_interval_seconds is None
    raw = node_metric("n", cpu="0.1m", memory="1.5")
    assert nodemetric_from_raw(raw).node_usage == {"cpu": 1, "memory": 2}


def test_null_entries_are_skipped() -> None:
    raw = node_metric("n", pods=[pod_usage("a")])
    raw["status"]["podsMetric"].append(None)
    raw["status"]["nodeMetric"]["aggregatedNodeUsages"] = [None]
    m = nodemetric_from_raw(raw)
    assert len(m.pods) == 1 and m.aggregated == () and aggregated(m) == ()


@pytest.mark.parametrize(
    ("patch", "field"),
    [
        ({"metadata": {}}, "metadata.name"),
        ({"status": {"updateTime": "yesterday"}}, "status.updateTime"),
        (
            {"status": {"nodeMetric": {"nodeUsage": {"resources": {"cpu": "lots"}}}}},
            "status.nodeMetric.nodeUsage.resources.cpu",
        ),
        (
            {"status": {"nodeMetric": {"aggregatedNodeUsages": [{"duration": "5 min"}]}}},
            "status.nodeMetric.aggregatedNodeUsages[0].duration",
        ),
        (
            {
                "status": {
                    "nodeMetric": {"aggregatedNodeUsages": [None, {"usage": {"p90": {"resources": {"cpu": "1x"}}}}]}
                }
            },
            "status.nodeMetric.aggregatedNodeUsages[1].usage.p90.resources.cpu",
        ),
        (
            {
                "status": {
                    "nodeMetric": {"aggregatedNodeUsages": [{"usage": {"avg": {"resources": {"cpu": "1\x002"}}}}]}
                }
            },
            "status.nodeMetric.aggregatedNodeUsages[0].usage.avg.resources.cpu",
        ),
        ({"status": {"podsMetric": [{"name": 5}]}}, "status.podsMetric[0].name"),
        (
            {"spec": {"metricCollectPolicy": {"reportIntervalSeconds": "60"}}},
            "spec.metricCollectPolicy.reportIntervalSeconds",
        ),
        ({"status": {"nodeMetric": []}}, "status.nodeMetric"),
    ],
)
def test_errors_name_the_field(patch: dict[str, Any], field: str) -> None:
    raw = node_metric("n1")
    raw.update(patch)
    with pytest.raises(InputError) as e:
        nodemetric_from_raw(raw)
    assert e.value.field == field


def test_aggregated_usages_are_normalised_when_read() -> None:
    """Plain amounts are checked all at once and normalised only when read; others are normalised
    (and checked) as the metric is read. Either way the usages read the same."""
    plain = {"5m0s": {"avg": ("5762m", "44904318Ki"), "p99": ("7", "46873574Ki")}}
    first = AggregatedUsage(
        300 * S, {"avg": {"cpu": 5762, "memory": 44904318 * 1024}, "p99": {"cpu": 7000, "memory": 46873574 * 1024}}
    )
    assert aggregated(nodemetric_from_raw(node_metric("n", agg=plain))) == (first,)
    mixed = {**plain, "10m0s": {"p50": ("1.5", "47Gi")}}
    second = AggregatedUsage(600 * S, {"p50": {"cpu": 1500, "memory": 47 * GI}})
    assert aggregated(nodemetric_from_raw(node_metric("n", agg=mixed))) == (first, second)
