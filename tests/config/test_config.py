from __future__ import annotations

from typing import Any

import pytest

from berth.core.config.kubeschedulerconfig import parse_config
from berth.core.errors import ConfigError


def profile(**p: Any) -> dict[str, Any]:
    return {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration", "profiles": [p]}


def test_defaults_are_kubes_default_profile() -> None:
    cfg = parse_config(None)
    # upstream: TestApplyFeatureGates/"Feature gates disabled" (getDefaultPlugins), less the plugins
    # berth does not implement, plus VolumeBinding's score and LoadAwareScheduling
    assert cfg.filters == (
        "NodeUnschedulable",
        "TaintToleration",
        "NodeAffinity",
        "NodePorts",
        "NodeResourcesFit",
        "VolumeRestrictions",
        "NodeVolumeLimits",
        "VolumeBinding",
        "VolumeZone",
        "PodTopologySpread",
        "InterPodAffinity",
        "LoadAwareScheduling",
    )
    assert cfg.scores == (
        ("TaintToleration", 3),
        ("NodeAffinity", 2),
        ("NodeResourcesFit", 1),
        ("VolumeBinding", 1),
        ("PodTopologySpread", 2),
        ("InterPodAffinity", 2),
        ("NodeResourcesBalancedAllocation", 1),
        ("ImageLocality", 1),
        ("LoadAwareScheduling", 1),
    )
    assert cfg.names() == ("default-scheduler",) and cfg.warnings == ()


def test_score_weights_and_disable() -> None:
    cfg = parse_config(profile(plugins={"score": {"enabled": [{"name": "VolumeBinding", "weight": 5}]}}))
    assert dict(cfg.scores)["VolumeBinding"] == 5 and dict(cfg.scores)["LoadAwareScheduling"] == 1
    assert cfg.scores[0] == ("VolumeBinding", 5)  # a point's own plugins come first (kube's part 1)
    cfg = parse_config(profile(plugins={"score": {"disabled": [{"name": "*"}]}}))
    assert cfg.scores == ()
    cfg = parse_config(profile(plugins={"filter": {"disabled": [{"name": "TaintToleration"}]}}))
    assert "TaintToleration" not in cfg.filters and "TaintToleration" in dict(cfg.scores)


def test_weight_zero_means_one() -> None:
    cfg = parse_config(profile(plugins={"score": {"enabled": [{"name": "VolumeBinding", "weight": 0}]}}))
    assert dict(cfg.scores)["VolumeBinding"] == 1


def test_all_problems_reported_at_once() -> None:
    doc = profile(
        plugins={"score": {"enabled": [{"name": "NoSuch"}, {"name": "VolumeBinding", "weight": -1}]}},
        pluginConfig=[
            {
                "name": "VolumeBinding",
                "args": {
                    "bindTimeoutSeconds": -1,
                    "shape": [
                        {"utilization": 50, "score": 11},
                        {"utilization": 40, "score": 1},
                        {"utilization": 101, "score": 2},
                    ],
                    "storageClassWeights": {"ssd": 0},
                    "typo": 1,
                },
            },
            {"name": "Mystery", "args": {}},
        ],
    )
    with pytest.raises(ConfigError) as e:
        parse_config(doc)
    problems = e.value.problems
    expected = [
        "profiles[0].plugins.score.enabled[1].weight: Invalid value: -1: must be a non-negative integer",
        'profiles[0].pluginConfig[0].args: unknown field "typo"',
        "profiles[0].pluginConfig[0].args.bindTimeoutSeconds: Invalid value: -1: invalid BindTimeoutSeconds, should not be a negative value",
        "profiles[0].pluginConfig[0].args.shape[0].score: Invalid value: 11: not in valid range [0, 10]",
        "profiles[0].pluginConfig[0].args.shape[2].utilization: Invalid value: 101: not in valid range [0, 100]",
        "profiles[0].pluginConfig[0].args.shape[1].utilization: Invalid value: 40: values must be sorted in increasing order",
        "profiles[0].pluginConfig[0].args.storageClassWeights[ssd]: Invalid value: 0: must be a positive integer",
    ]
    assert problems == expected


def test_empty_shape_is_required() -> None:
    with pytest.raises(ConfigError) as e:
        parse_config(profile(pluginConfig=[{"name": "VolumeBinding", "args": {"shape": []}}]))
    assert e.value.problems == [
        "profiles[0].pluginConfig[0].args.shape: Required value: at least one point must be specified"
    ]


def test_wrong_kind() -> None:
    with pytest.raises(ConfigError) as e:
        parse_config({"kind": "Deployment"})
    assert e.value.problems == ["kind: Invalid value: 'Deployment': want KubeSchedulerConfiguration"]


# issue 20's reproducers: a value of the wrong shape or past kube's int32 is one problem, never a crash.
SHAPES = [
    ("disabled: 5", profile(plugins={"score": {"disabled": 5}}), "plugins.score.disabled: Invalid value: 5: must be"),
    ("enabled: a string", profile(plugins={"filter": {"enabled": "TaintToleration"}}), "filter.enabled: Invalid value"),
    ("pluginConfig: 5", profile(pluginConfig=5), "profiles[0].pluginConfig: Invalid value: 5: must be a list"),
    ("pluginConfig: 1.5", profile(pluginConfig=1.5), "profiles[0].pluginConfig: Invalid value: 1.5: must be a list"),
    (
        "a weight of 2^70",
        profile(plugins={"score": {"enabled": [{"name": "VolumeBinding", "weight": 2**70}]}}),
        "enabled[0].weight: Invalid value: 1180591620717411303424: must be at most 2147483647 (int32)",
    ),
    (
        "a storage-class weight of 2^70",
        profile(pluginConfig=[{"name": "VolumeBinding", "args": {"storageClassWeights": {"ssd": 2**70}}}]),
        "storageClassWeights[ssd]: Invalid value: 1180591620717411303424: must be at most 2147483647 (int32)",
    ),
]


@pytest.mark.parametrize(("doc", "problem"), [c[1:] for c in SHAPES], ids=[c[0] for c in SHAPES])
def test_wrong_shapes_and_ranges_are_one_problem(doc: dict[str, Any], problem: str) -> None:
    with pytest.raises(ConfigError) as e:
        parse_config(doc)
    assert len(e.value.problems) == 1
    assert problem in e.value.problems[0]
