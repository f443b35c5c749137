from __future__ import annotations

from typing import Any

import pytest

from berth.core.errors import ConfigError
from berth.core.plugins.loadawarescheduling import LoadAwareScheduling
from berth.core.plugins.loadawarescheduling.args import (
    AggregatedArgs,
    LoadAwareSchedulingArgs,
    decode,
    defaults,
    parse_args,
    validate,
)

AT = "pluginConfig[LoadAwareScheduling].args"


def test_empty_args_get_upstream_defaults() -> None:
    a = parse_args({})
    assert a == LoadAwareSchedulingArgs(
        filter_expired_node_metrics=True,
        node_metric_expiration_seconds=180,
        enable_schedule_when_node_metrics_expired=False,
        resource_weights={"cpu": 1, "memory": 1},
        dominant_resource_weight=0,
        usage_thresholds={"cpu": 65, "memory": 95},
        prod_usage_thresholds={},
        estimated_scaling_factors={"cpu": 85, "memory": 70},
        aggregated=None,
    )
    assert parse_args(None) == a == LoadAwareSchedulingArgs()


@pytest.mark.parametrize(
    ("raw", "attr", "want"),
    [
        # thresholds are replaced, never merged
        ({"usageThresholds": {"cpu": 80}}, "usage_thresholds", {"cpu": 80}),
        ({"usageThresholds": {}}, "usage_thresholds", {"cpu": 65, "memory": 95}),
        ({"usageThresholds": {"cpu": 0, "memory": 0}}, "usage_thresholds", {"cpu": 0, "memory": 0}),
        # weights default only when dominantResourceWeight is 0
        ({"dominantResourceWeight": 10}, "resource_weights", {}),
        ({"dominantResourceWeight": 0}, "resource_weights", {"cpu": 1, "memory": 1}),
        ({"resourceWeights": {"cpu": 3}}, "resource_weights", {"cpu": 3}),
        ({"resourceWeights": {"cpu": 3}, "dominantResourceWeight": 5}, "resource_weights", {"cpu": 3}),
        # factors are merged with the cpu/memory defaults
        ({"estimatedScalingFactors": {"cpu": 50}}, "estimated_scaling_factors", {"cpu": 50, "memory": 70}),
        (
            {"estimatedScalingFactors": {"nvidia.com/gpu": 100}},
            "estimated_scaling_factors",
            {"nvidia.com/gpu": 100, "cpu": 85, "memory": 70},
        ),
        ({"filterExpiredNodeMetrics": False}, "filter_expired_node_metrics", False),
        ({"filterExpiredNodeMetrics": None}, "filter_expired_node_metrics", True),
        ({"nodeMetricExpirationSeconds": 300}, "node_metric_expiration_seconds", 300),
        ({"scoreAccordingProdUsage": True}, "score_according_prod_usage", True),
        ({"estimatedSecondsAfterPodScheduled": 60}, "estimated_seconds_after_pod_scheduled", 60),
        ({"supportedResources": ["nvidia.com/gpu"]}, "supported_resources", ("nvidia.com/gpu",)),
        ({"estimator": "someOther"}, "estimator", "someOther"),
        (
            {
                "aggregated": {
                    "usageThresholds": {"cpu": 65},
                    "usageAggregationType": "p99",
                    "usageAggregatedDuration": "5m",
                }
            },
            "aggregated",
            AggregatedArgs(
                usage_thresholds={"cpu": 65}, usage_aggregation_type="p99", usage_aggregated_duration=300 * 10**9
            ),
        ),
        ({"aggregated": {"scoreAggregationType": "p95"}}, "aggregated", AggregatedArgs(score_aggregation_type="p95")),
    ],
)
def test_defaulting(raw: dict[str, Any], attr: str, want: Any) -> None:
    assert getattr(parse_args(raw), attr) == want


def test_full_example_from_the_reference_parses() -> None:
    a = parse_args(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "LoadAwareSchedulingArgs",
            "filterExpiredNodeMetrics": True,
            "nodeMetricExpirationSeconds": 180,
            "enableScheduleWhenNodeMetricsExpired": False,
            "resourceWeights": {"cpu": 1, "memory": 1},
            "dominantResourceWeight": 0,
            "usageThresholds": {"cpu": 65, "memory": 95},
            "prodUsageThresholds": {"cpu": 55, "memory": 65},
            "prodUsageIncludeSys": False,
            "scoreAccordingProdUsage": True,
            "estimator": "",
            "estimatedScalingFactors": {"cpu": 85, "memory": 70},
            "estimatedSecondsAfterPodScheduled": 180,
            "estimatedSecondsAfterInitialized": 60,
            "allowCustomizeEstimation": True,
            "aggregated": {
                "usageThresholds": {"cpu": 65, "memory": 75},
                "usageAggregationType": "p99",
                "usageAggregatedDuration": "5m",
                "scoreAggregationType": "p95",
                "scoreAggregatedDuration": "5m0s",
            },
            "supportedResources": ["nvidia.com/gpu"],
        }
    )
    assert a.aggregated is not None and a.aggregated.score_aggregated_duration == 300 * 10**9
    assert a.prod_usage_thresholds == {"cpu": 55, "memory": 65}
    assert a.allow_customize_estimation and a.score_according_prod_usage


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ({"nodeMetricExpirationSeconds": 0}, f"{AT}.nodeMetricExpirationSeconds: must be greater than 0, got 0"),
        ({"nodeMetricExpirationSeconds": -5}, f"{AT}.nodeMetricExpirationSeconds: must be greater than 0, got -5"),
        ({"resourceWeights": {"cpu": 0}}, f"{AT}.resourceWeights[cpu]: must be in [1, 100], got 0"),
        ({"resourceWeights": {"cpu": 101}}, f"{AT}.resourceWeights[cpu]: must be in [1, 100], got 101"),
        ({"dominantResourceWeight": -1}, f"{AT}.dominantResourceWeight: must be in [0, 100], got -1"),
        ({"dominantResourceWeight": 101}, f"{AT}.dominantResourceWeight: must be in [0, 100], got 101"),
        ({"usageThresholds": {"cpu": -1}}, f"{AT}.usageThresholds[cpu]: must be in [0, 100], got -1"),
        ({"usageThresholds": {"memory": 101}}, f"{AT}.usageThresholds[memory]: must be in [0, 100], got 101"),
        ({"estimatedScalingFactors": {"cpu": 0}}, f"{AT}.estimatedScalingFactors[cpu]: must be in [1, 100], got 0"),
        (
            {"estimatedScalingFactors": {"memory": 101}},
            f"{AT}.estimatedScalingFactors[memory]: must be in [1, 100], got 101",
        ),
        (
            {"resourceWeights": {"cpu": 1, "nvidia.com/gpu": 1}},
            f"{AT}.estimatedScalingFactors[nvidia.com/gpu]: not found: resourceWeights[nvidia.com/gpu] needs a scaling factor",
        ),
        (
            {"aggregated": {"usageThresholds": {"cpu": 101}}},
            f"{AT}.aggregated.usageThresholds[cpu]: must be in [0, 100], got 101",
        ),
        (
            {"aggregated": {"usageAggregationType": "p42"}},
            f"{AT}.aggregated.usageAggregationType: must be one of avg, p50, p90, p95, p99 or empty, got 'p42'",
        ),
        (
            {"aggregated": {"scoreAggregationType": "max"}},
            f"{AT}.aggregated.scoreAggregationType: must be one of avg, p50, p90, p95, p99 or empty, got 'max'",
        ),
        (
            {"aggregated": {"usageAggregatedDuration": "-5m"}},
            f"{AT}.aggregated.usageAggregatedDuration: must not be negative",
        ),
        (
            {"aggregated": {"scoreAggregatedDuration": "-1s"}},
            f"{AT}.aggregated.scoreAggregatedDuration: must not be negative",
        ),
        # type problems
        ({"usageThresholds": "high"}, f"{AT}.usageThresholds: expected an object of resource name to integer"),
        ({"usageThresholds": {"cpu": 1.5}}, f"{AT}.usageThresholds[cpu]: expected an integer, got 1.5"),
        ({"nodeMetricExpirationSeconds": "180"}, f"{AT}.nodeMetricExpirationSeconds: expected an integer, got '180'"),
        ({"filterExpiredNodeMetrics": "yes"}, f"{AT}.filterExpiredNodeMetrics: expected true or false, got 'yes'"),
        ({"dominantResourceWeight": True}, f"{AT}.dominantResourceWeight: expected an integer, got True"),
        ({"usageThreshold": {"cpu": 1}}, f"{AT}.usageThreshold: unknown field"),
        (
            {"aggregated": {"usageAggregatedDuration": "5 minutes"}},
            f"{AT}.aggregated.usageAggregatedDuration: time: unknown unit",
        ),
        (
            {"aggregated": {"usageAggregatedDuration": 300}},
            f"{AT}.aggregated.usageAggregatedDuration: expected a duration",
        ),
        ({"aggregated": {"bogus": 1}}, f"{AT}.aggregated.bogus: unknown field"),
        ({"supportedResources": "gpu"}, f"{AT}.supportedResources: expected a list of resource names"),
    ],
)
def test_each_problem_is_reported(raw: dict[str, Any], problem: str) -> None:
    with pytest.raises(ConfigError) as e:
        parse_args(raw)
    assert len(e.value.problems) == 1
    assert e.value.problems[0].startswith(problem)


def test_not_validated_fields() -> None:
    # prodUsageThresholds and the estimation windows have no range checks upstream.
    a = parse_args({"prodUsageThresholds": {"cpu": 500}, "estimatedSecondsAfterPodScheduled": -3})
    assert a.prod_usage_thresholds == {"cpu": 500}


def test_all_problems_at_once() -> None:
    raw = {
        "nodeMetricExpirationSeconds": 0,
        "resourceWeights": {"cpu": 0, "gpu": 5},
        "dominantResourceWeight": 200,
        "usageThresholds": {"cpu": 101},
        "estimatedScalingFactors": {"memory": 0},
        "aggregated": {"usageAggregationType": "p1", "scoreAggregatedDuration": "-1m"},
        "typo": 1,
    }
    with pytest.raises(ConfigError) as e:
        parse_args(raw)
    assert len(e.value.problems) == 9
    assert all(p.startswith(AT) for p in e.value.problems)
    assert "; " in str(e.value)


def test_decode_defaults_validate_are_separate_steps() -> None:
    fields, problems = decode({"dominantResourceWeight": 10, "usageThresholds": {"cpu": 70}})
    assert problems == []
    a = defaults(fields)
    assert a.resource_weights == {} and a.usage_thresholds == {"cpu": 70}
    assert validate(a) == []


def test_plugin_rejects_invalid_args_built_directly() -> None:
    with pytest.raises(ConfigError, match="dominantResourceWeight"):
        LoadAwareScheduling(LoadAwareSchedulingArgs(dominant_resource_weight=-1))


def test_args_parse_appends_problems_for_the_config_loader() -> None:
    problems: list[str] = ["earlier"]
    at = "profiles[0].pluginConfig[2].args"
    a = LoadAwareSchedulingArgs.parse({"usageThresholds": {"cpu": 101}, "x": 1}, at, problems)
    assert problems == [
        "earlier",
        f"{at}.x: unknown field",
        f"{at}.usageThresholds[cpu]: must be in [0, 100], got 101",
    ]
    assert isinstance(a, LoadAwareSchedulingArgs)
    assert LoadAwareSchedulingArgs.parse({}, at, problems) == LoadAwareSchedulingArgs()
