"""Plugin args validation against upstream's tables in pkg/scheduler/apis/config/validation/
validation_pluginargs_test.go: TestValidateLeastAllocatedScoringStrategy,
TestValidateMostAllocatedScoringStrategy, TestValidateRequestedToCapacityRatioScoringStrategy and
TestValidateNodeAffinityArgs. Upstream compares each error's type and field (not the value or detail),
so these tables assert "<field>: <type>" of each problem, in order.

berth reads versioned (v1) configuration, which kube defaults before it validates: a resource weight
of 0 becomes 1 (SetDefaults_NodeResourcesFitArgs). So the "weight less than min" cases (weight 0) are
valid here and not carried over, and in "multi invalid resources" only the weight 101 is an error."""

from __future__ import annotations

import re
from typing import Any

import pytest

from berth.core.config.kubeschedulerconfig import parse_config
from berth.core.errors import ConfigError

TYPES = ("Invalid value", "Required value", "Unsupported value", "Forbidden", "Duplicate value")


def fields(plugin: str, args: dict[str, Any]) -> list[str]:
    """Each problem as "<field>: <type>" (upstream's comparison), or [] when the args are valid."""
    try:
        parse_config({"profiles": [{"pluginConfig": [{"name": plugin, "args": args}]}]})
    except ConfigError as e:
        problems = [p.removeprefix("profiles[0].pluginConfig[0].args.") for p in e.problems]
    else:
        return []
    out = []
    for p in problems:
        m = re.match(rf"^(.*?): ({'|'.join(TYPES)})", p)
        assert m, p
        out.append(f"{m.group(1)}: {m.group(2)}")
    return out


def fit(
    kind: str,
    resources: list[dict[str, Any]] | None = None,
    shape: list[dict[str, int]] | None = None,
    ratio: bool = False,
) -> dict[str, Any]:
    strategy: dict[str, Any] = {"type": kind}
    if resources is not None:
        strategy["resources"] = resources
    if ratio:
        strategy["requestedToCapacityRatio"] = {} if shape is None else {"shape": shape}
    return {"scoringStrategy": strategy}


def res(name: str, weight: int) -> dict[str, Any]:
    return {"name": name, "weight": weight}


def pt(utilization: int, score: int) -> dict[str, int]:
    return {"utilization": utilization, "score": score}


W0 = "scoringStrategy.resources[0].weight: Invalid value"
W1 = "scoringStrategy.resources[1].weight: Invalid value"
DEFAULT_SHAPE = [pt(30, 3)]
RATIO = "RequestedToCapacityRatio"
FIT: list[tuple[str, dict[str, Any], list[str]]] = []
for test, kind in (
    ("TestValidateLeastAllocatedScoringStrategy/", "LeastAllocated"),
    ("TestValidateMostAllocatedScoringStrategy/", "MostAllocated"),
):
    FIT += [
        (test + "default config", fit(kind), []),
        (test + "multi valid resources", fit(kind, [res("cpu", 1), res("memory", 10)]), []),
        (test + "weight greater than max", fit(kind, [res("cpu", 101)]), [W0]),
        (test + "multi invalid resources", fit(kind, [res("cpu", 0), res("memory", 101)]), [W1]),
    ]
# the args cases of the plugin's own tables (NewFit validates them)
FIT += [
    (
        "TestLeastAllocatedScoringStrategy/resource with negative weight",
        fit("LeastAllocated", [res("memory", -1), res("cpu", 1)]),
        [W0],
    ),
    (
        "TestLeastAllocatedScoringStrategy/resource weight larger than MaxNodeScore",
        fit("LeastAllocated", [res("memory", 1), res("cpu", 101)]),
        [W1],
    ),
    (
        "TestMostAllocatedScoringStrategy/resource with negative weight",
        fit("MostAllocated", [res("memory", -1), res("cpu", 1)]),
        [W0],
    ),
    (
        "TestMostAllocatedScoringStrategy/resource weight larger than MaxNodeScore",
        fit("MostAllocated", [res("memory", 101)]),
        [W0],
    ),
]
RTC = "TestValidateRequestedToCapacityRatioScoringStrategy/"
FIT += [
    (RTC + "no shapes", fit(RATIO, ratio=True), ["scoringStrategy.shape: Required value"]),
    (RTC + "weight greater than max", fit(RATIO, [res("cpu", 101)], DEFAULT_SHAPE, True), [W0]),
    (RTC + "valid shapes", fit(RATIO, shape=DEFAULT_SHAPE, ratio=True), []),
    (RTC + "utilization less than min", fit(RATIO, shape=[pt(-1, 3)], ratio=True),
     ["scoringStrategy.shape[0].utilization: Invalid value"]),
    (RTC + "utilization greater than max", fit(RATIO, shape=[pt(101, 3)], ratio=True),
     ["scoringStrategy.shape[0].utilization: Invalid value"]),
    (RTC + "duplicated utilization values", fit(RATIO, shape=[pt(10, 3), pt(10, 3)], ratio=True),
     ["scoringStrategy.shape[1].utilization: Invalid value"]),
    (RTC + "increasing utilization values", fit(RATIO, shape=[pt(10, 3), pt(20, 3), pt(30, 3)], ratio=True), []),
    (RTC + "non-increasing utilization values", fit(RATIO, shape=[pt(10, 3), pt(20, 3), pt(15, 3)], ratio=True),
     ["scoringStrategy.shape[2].utilization: Invalid value"]),
    (RTC + "score less than min", fit(RATIO, shape=[pt(10, -1)], ratio=True),
     ["scoringStrategy.shape[0].score: Invalid value"]),
    (RTC + "score greater than max", fit(RATIO, shape=[pt(10, 11)], ratio=True),
     ["scoringStrategy.shape[0].score: Invalid value"]),
]  # fmt: skip


@pytest.mark.parametrize(("args", "want"), [c[1:] for c in FIT], ids=[c[0] for c in FIT])
def test_fit_scoring_strategy_validation_as_upstream(args: dict[str, Any], want: list[str]) -> None:
    assert fields("NodeResourcesFit", args) == want


def added(required_key: str, preferred_names: list[str]) -> dict[str, Any]:
    req = [{"matchExpressions": [{"key": required_key, "operator": "In", "values": ["label-1-val"]}]}]
    pref = [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": preferred_names}]}]
    return {
        "addedAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": req},
            "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "preference": pref[0]}],
        }
    }


NA = "TestValidateNodeAffinityArgs/"
AFFINITY = [
    (NA + "empty", {}, []),
    (NA + "valid added affinity", added("label-1", ["node-1"]), []),
    (NA + "invalid added affinity", added("invalid/label/key", ["node-1", "node-2"]), [
        "addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].key:"
        " Invalid value",
        "addedAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].matchFields[0].values: Invalid value",
    ]),
]  # fmt: skip


@pytest.mark.parametrize(("args", "want"), [c[1:] for c in AFFINITY], ids=[c[0] for c in AFFINITY])
def test_node_affinity_args_validation_as_upstream(args: dict[str, Any], want: list[str]) -> None:
    assert fields("NodeAffinity", args) == want
