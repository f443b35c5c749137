"""DefaultPreemptionArgs through a KubeSchedulerConfiguration: kube's defaults and validation."""

from __future__ import annotations

from typing import Any

import pytest

from berth.core.config.kubeschedulerconfig import parse_config
from berth.core.errors import ConfigError
from berth.core.plugins.defaultpreemption import DefaultPreemptionArgs
from tests.plugins.defaultpreemption.helpers import Harness

P = "profiles[0].pluginConfig[0].args"


def config(args: dict[str, Any]) -> dict[str, Any]:
    return {"profiles": [{"pluginConfig": [{"name": "DefaultPreemption", "args": args}]}]}


# (upstream case name, args, problems)
CASES: list[tuple[str, dict[str, Any], list[str]]] = [
    ("valid args (default)", {"minCandidateNodesPercentage": 10, "minCandidateNodesAbsolute": 100}, []),
    (
        "negative minCandidateNodesPercentage",
        {"minCandidateNodesPercentage": -1, "minCandidateNodesAbsolute": 100},
        [f"{P}.minCandidateNodesPercentage: Invalid value: -1: not in valid range [0, 100]"],
    ),
    (
        "minCandidateNodesPercentage over 100",
        {"minCandidateNodesPercentage": 900, "minCandidateNodesAbsolute": 100},
        [f"{P}.minCandidateNodesPercentage: Invalid value: 900: not in valid range [0, 100]"],
    ),
    (
        "negative minCandidateNodesAbsolute",
        {"minCandidateNodesPercentage": 20, "minCandidateNodesAbsolute": -1},
        [f"{P}.minCandidateNodesAbsolute: Invalid value: -1: not in valid range [0, inf)"],
    ),
    (
        "all zero",
        {"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 0},
        [
            f"{P}.minCandidateNodesPercentage: Invalid value: 0: cannot be zero at the same time as minCandidateNodesAbsolute",
            f"{P}.minCandidateNodesAbsolute: Invalid value: 0: cannot be zero at the same time as minCandidateNodesPercentage",
        ],
    ),
    (
        "both negative",
        {"minCandidateNodesPercentage": -1, "minCandidateNodesAbsolute": -1},
        [
            f"{P}.minCandidateNodesPercentage: Invalid value: -1: not in valid range [0, 100]",
            f"{P}.minCandidateNodesAbsolute: Invalid value: -1: not in valid range [0, inf)",
        ],
    ),
]


@pytest.mark.parametrize(("args", "problems"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_validate_default_preemption_args(args: dict[str, Any], problems: list[str]) -> None:
    # upstream: TestValidateDefaultPreemptionArgs (pkg/scheduler/apis/config/validation), each case by its name
    if not problems:
        got = parse_config(config(args)).args["DefaultPreemption"]
        assert got == DefaultPreemptionArgs(min_candidate_nodes_percentage=10, min_candidate_nodes_absolute=100)
        return
    with pytest.raises(ConfigError) as e:
        parse_config(config(args))
    assert e.value.problems == problems


def test_defaults_fill_absent_fields_only() -> None:
    # upstream: SetDefaults_DefaultPreemptionArgs only sets nil fields, so an explicit 0 stays 0
    got = parse_config(config({"minCandidateNodesPercentage": 0})).args["DefaultPreemption"]
    assert got == DefaultPreemptionArgs(min_candidate_nodes_percentage=0, min_candidate_nodes_absolute=100)


@pytest.mark.parametrize(
    ("potential", "args", "want"),
    [
        (5, {}, 5),  # 10% of 5 is 0, raised to 100, capped at 5
        (5000, {}, 500),
        (5000, {"minCandidateNodesPercentage": 1, "minCandidateNodesAbsolute": 100}, 100),
        (5, {"minCandidateNodesPercentage": 40, "minCandidateNodesAbsolute": 1}, 2),
    ],
)
def test_candidate_count(potential: int, args: dict[str, Any], want: int) -> None:
    # upstream: calculateNumCandidates (default_preemption.go)
    assert Harness(args=args).plugin.candidate_count(potential) == want


def test_post_filter_can_be_disabled() -> None:
    cfg = parse_config({"profiles": [{"plugins": {"postFilter": {"disabled": [{"name": "DefaultPreemption"}]}}}]})
    assert cfg.profiles[0].points["postFilter"] == ("DynamicResources",)  # kube 1.36's other PostFilter
    # kube refuses a plugin at a point it does not implement; berth warns and ignores it there
    cfg = parse_config({"profiles": [{"plugins": {"postFilter": {"enabled": [{"name": "NodeResourcesFit"}]}}}]})
    assert cfg.warnings == (
        'profiles[0].plugins.postFilter.enabled[0]: plugin "NodeResourcesFit" does not extend PostFilterPlugin '
        "plugin: ignored at postFilter",
    )
    assert cfg.profiles[0].points["postFilter"] == ("DynamicResources", "DefaultPreemption")
