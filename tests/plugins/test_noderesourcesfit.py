"""NodeResourcesFit scoring strategies, ignored resources and args, as upstream's own tables say.

Each case names its upstream test (pkg/scheduler/framework/plugins/noderesources/*_test.go,
pkg/scheduler/apis/config/validation/validation_pluginargs_test.go) and case.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from berth.core.api.kinds import convert
from berth.core.config.kubeschedulerconfig import parse_config
from berth.core.plugins.noderesources.fit import broken_linear
from berth.core.scheduler.schedule_one import Scheduler
from tests.builders import NOW, cluster, node, pod
from tests.plugins.helpers import config_problems, knode, kpod, scores

LEAST = {"scoringStrategy": {"type": "LeastAllocated"}}
MOST = {"scoringStrategy": {"type": "MostAllocated"}}
RATIO = {
    "scoringStrategy": {
        "type": "RequestedToCapacityRatio",
        "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 10}, {"utilization": 100, "score": 0}]},
    }
}
FOO = "intel.com/foo"
BAR = "intel.com/bar"


def n4(name: str = "node1", cpu: str = "4000", memory: str = "10000", **extra: Any) -> dict[str, Any]:
    return knode(name, cpu=cpu, memory=memory, **extra)


REQ = ({"cpu": "1000", "memory": "2000"}, {"cpu": "2000", "memory": "3000"})

CASES = [
    # TestLeastAllocatedScoringStrategy
    ("least: nothing scheduled, nothing requested", LEAST, kpod("p"), [n4("node1"), n4("node2")], [], [100, 100]),
    (
        "least: nothing scheduled, resources requested, differently sized nodes",
        LEAST,
        kpod("p", *REQ),
        [n4("node1"), n4("node2", cpu="6000")],
        [],
        [37, 50],
    ),
    (
        "least: no resources requested, pods scheduled",
        LEAST,
        kpod("p"),
        [n4("node1"), n4("node2")],
        [kpod("e1", node="node1"), kpod("e2", node="node1"), kpod("e3", node="node2"), kpod("e4", node="node2")],
        [100, 100],
    ),
    (
        "least: no resources requested, pods scheduled with resources",
        LEAST,
        kpod("p"),
        [n4("node1", "10000", "20000"), n4("node2", "10000", "20000")],
        [
            kpod("e1", {"cpu": "3000", "memory": "0"}, node="node1"),
            kpod("e2", {"cpu": "3000", "memory": "0"}, node="node1"),
            kpod("e3", {"cpu": "3000", "memory": "0"}, node="node2"),
            kpod("e4", {"cpu": "3000", "memory": "5000"}, node="node2"),
        ],
        [70, 57],
    ),
    (
        "least: resources requested, pods scheduled with resources",
        LEAST,
        kpod("p", *REQ),
        [n4("node1", "10000", "20000"), n4("node2", "10000", "20000")],
        [
            kpod("e1", {"cpu": "3000", "memory": "0"}, node="node1"),
            kpod("e2", {"cpu": "3000", "memory": "5000"}, node="node2"),
        ],
        [57, 45],
    ),
    (
        "least: resources requested, pods scheduled with resources, differently sized nodes",
        LEAST,
        kpod("p", *REQ),
        [n4("node1", "10000", "20000"), n4("node2", "10000", "50000")],
        [
            kpod("e1", {"cpu": "3000", "memory": "0"}, node="node1"),
            kpod("e2", {"cpu": "3000", "memory": "5000"}, node="node2"),
        ],
        [57, 60],
    ),
    (
        "least: requested resources exceed node capacity",
        LEAST,
        kpod("p", {"cpu": "3000", "memory": "0"}),
        [n4("node1"), n4("node2")],
        [
            kpod("e1", {"cpu": "3000", "memory": "0"}, node="node1"),
            kpod("e2", {"cpu": "3000", "memory": "5000"}, node="node2"),
        ],
        [50, 25],
    ),
    (
        "least: zero node resources, pods scheduled with resources",
        LEAST,
        kpod("p"),
        [knode("node1"), knode("node2")],
        [
            kpod("e1", {"cpu": "3000", "memory": "0"}, node="node1"),
            kpod("e2", {"cpu": "3000", "memory": "5000"}, node="node2"),
        ],
        [0, 0],
    ),
    (
        "least: nothing scheduled, resources requested with different weight on CPU and memory, differently sized nodes",
        {
            "scoringStrategy": {
                "type": "LeastAllocated",
                "resources": [{"name": "memory", "weight": 2}, {"name": "cpu", "weight": 1}],
            }
        },
        kpod("p", *REQ),
        [n4("node1"), n4("node2", cpu="6000")],
        [],
        [41, 50],
    ),
    (
        "least: bypass extended resource if the pod does not request",
        {
            "scoringStrategy": {
                "type": "LeastAllocated",
                "resources": [
                    {"name": "cpu", "weight": 1},
                    {"name": "memory", "weight": 1},
                    {"name": "extended.resource.dev/foo", "weight": 1},
                ],
            }
        },
        kpod("p", *REQ),
        [n4("node1", cpu="6000"), knode("node2", cpu="6000", memory="10000", **{"extended.resource.dev/foo": "4"})],
        [],
        [50, 50],
    ),
    # TestMostAllocatedScoringStrategy
    ("most: nothing scheduled, nothing requested", MOST, kpod("p"), [n4("node1"), n4("node2")], [], [0, 0]),
    (
        "most: nothing scheduled, resources requested, differently sized nodes",
        MOST,
        kpod("p", *REQ),
        [n4("node1"), n4("node2", cpu="6000")],
        [],
        [62, 50],
    ),
    (
        "most: resources requested, pods scheduled with resources",
        MOST,
        kpod("p", {"cpu": "1000", "memory": "2000"}, {"cpu": "2000", "memory": "3000"}),
        [n4("node1", "10000", "20000"), n4("node2", "10000", "20000")],
        [
            kpod("e1", {"cpu": "3000", "memory": "0"}, node="node1"),
            kpod("e2", {"cpu": "3000", "memory": "5000"}, node="node2"),
        ],
        [42, 55],
    ),
    (
        "most: requested above allocatable is capped (cpu 300m on 250m, memory 600Mi of 1000Mi)",
        MOST,
        kpod("p", {"cpu": "300m", "memory": "600Mi"}),
        [knode("node1", cpu="250m", memory="1000Mi")],
        [],
        [80],
    ),
    # TestRequestedToCapacityRatioScoringStrategy
    (
        "ratio: nothing scheduled, nothing requested (default - least requested nodes have priority)",
        RATIO,
        kpod("p"),
        [n4("node1"), n4("node2")],
        [kpod("e1", node="node1"), kpod("e2", node="node1")],
        [100, 100],
    ),
    (
        "ratio: nothing scheduled, resources requested, differently sized nodes (default - least requested nodes have priority)",
        RATIO,
        kpod("p", *REQ),
        [n4("node1"), n4("node2", cpu="6000")],
        [kpod("e1", node="node1"), kpod("e2", node="node1")],
        [38, 50],
    ),
    (
        "ratio: no resources requested, pods scheduled with resources (default - least requested nodes have priority)",
        RATIO,
        kpod("p"),
        [n4("node1"), n4("node2", cpu="6000")],
        [
            kpod("e1", {"cpu": "3000", "memory": "5000"}, node="node1"),
            kpod("e2", {"cpu": "3000", "memory": "5000"}, node="node2"),
        ],
        [38, 50],
    ),
]

BIN = {
    "scoringStrategy": {
        "type": "RequestedToCapacityRatio",
        "resources": [{"name": FOO, "weight": 1}],
        "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 1}]},
    }
}
BIN2 = {
    "scoringStrategy": {
        "type": "RequestedToCapacityRatio",
        "resources": [{"name": FOO, "weight": 3}, {"name": BAR, "weight": 5}],
        "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 1}]},
    }
}
M = str(10000 * 1024 * 1024)
CASES += [
    # TestResourceBinPackingSingleExtended
    (
        "bin packing single: nothing scheduled, nothing requested",
        BIN,
        kpod("p"),
        [knode("node1", cpu="4", memory=M, **{FOO: 8}), knode("node2", cpu="4", memory=M, **{FOO: 4})],
        [],
        [0, 0],
    ),
    (
        "bin packing single: resources requested, pods scheduled with less resources",
        BIN,
        kpod("p", {FOO: 2}),
        [knode("node1", cpu="4", memory=M, **{FOO: 8}), knode("node2", cpu="4", memory=M, **{FOO: 4})],
        [],
        [2, 5],
    ),
    (
        "bin packing single: resources requested, pods scheduled with resources, on node with existing pod running",
        BIN,
        kpod("p", {FOO: 2}),
        [knode("node1", cpu="4", memory=M, **{FOO: 8}), knode("node2", cpu="4", memory=M, **{FOO: 4})],
        [kpod("e", {FOO: 2}, node="node2")],
        [2, 10],
    ),
    (
        "bin packing single: resources requested, pods scheduled with more resources",
        BIN,
        kpod("p", {FOO: 4}),
        [knode("node1", cpu="4", memory=M, **{FOO: 8}), knode("node2", cpu="4", memory=M, **{FOO: 4})],
        [],
        [5, 10],
    ),
    # TestResourceBinPackingMultipleExtended
    (
        "bin packing multiple: nothing scheduled, nothing requested",
        BIN2,
        kpod("p"),
        [knode("node1", cpu="4", memory=M, **{FOO: 8, BAR: 4}), knode("node2", cpu="4", memory=M, **{FOO: 4, BAR: 8})],
        [],
        [0, 0],
    ),
    (
        "bin packing multiple: resources requested, pods scheduled with more resources",
        BIN2,
        kpod("p", {FOO: 4, BAR: 2}),
        [knode("node1", cpu="4", memory=M, **{FOO: 8, BAR: 4}), knode("node2", cpu="4", memory=M, **{FOO: 4, BAR: 8})],
        [],
        [5, 5],
    ),
    (
        "bin packing multiple: resources requested, pods scheduled with less resources",
        BIN2,
        kpod("p", {FOO: 2, BAR: 2}),
        [knode("node1", cpu="4", memory=M, **{FOO: 8, BAR: 4}), knode("node2", cpu="4", memory=M, **{FOO: 4, BAR: 8})],
        [],
        [4, 3],
    ),
    (
        "bin packing multiple: resources requested, pods scheduled with resources, on node with existing pod running",
        BIN2,
        kpod("p", {FOO: 2, BAR: 2}),
        [knode("node1", cpu="4", memory=M, **{FOO: 8, BAR: 4}), knode("node2", cpu="4", memory=M, **{FOO: 4, BAR: 8})],
        [kpod("e", {FOO: 4, BAR: 2}, node="node2")],
        [4, 7],
    ),
]


@pytest.mark.parametrize("strategy", ["LeastAllocated", "MostAllocated"])
def test_a_name_kube_keeps_on_no_node_is_not_scored(strategy: str) -> None:
    """kube's NodeInfo keeps only cpu, memory, ephemeral-storage, pods and scalar names
    (IsScalarResourceName): any other name configured for scoring reads allocatable 0 and is skipped,
    even where the node lists it and the pod asks for it."""
    spec = [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]
    with_foo = {"scoringStrategy": {"type": strategy, "resources": [*spec, {"name": "foo", "weight": 5}]}}
    without = {"scoringStrategy": {"type": strategy, "resources": spec}}
    p = kpod("p", {"cpu": "1000", "memory": "2000", "foo": "3"})
    nodes = [n4("node1", foo="4"), n4("node2", cpu="6000", foo="40")]
    assert scores("NodeResourcesFit", with_foo, p, nodes) == scores("NodeResourcesFit", without, p, nodes)


@pytest.mark.parametrize(("name", "args", "p", "nodes", "pods", "want"), CASES, ids=[c[0] for c in CASES])
def test_scores_match_upstream(
    name: str,
    args: dict[str, Any],
    p: dict[str, Any],
    nodes: list[dict[str, Any]],
    pods: list[dict[str, Any]],
    want: list[int],
) -> None:
    got = scores("NodeResourcesFit", args, p, nodes, pods)
    assert got is not None and list(got.values()) == want


@pytest.mark.parametrize(
    ("points", "assertions"),
    [
        # TestBrokenLinearFunction case_0..case_2
        (
            [(10, 1), (90, 9)],
            [
                (-10, 1),
                (0, 1),
                (9, 1),
                (10, 1),
                (15, 1),
                (19, 1),
                (20, 2),
                (89, 8),
                (90, 9),
                (99, 9),
                (100, 9),
                (110, 9),
            ],
        ),
        ([(0, 2), (40, 10), (100, 0)], [(-10, 2), (0, 2), (20, 6), (30, 8), (40, 10), (70, 5), (100, 0), (110, 0)]),
        ([(0, 2), (40, 2), (100, 2)], [(-10, 2), (0, 2), (20, 2), (30, 2), (40, 2), (70, 2), (100, 2), (110, 2)]),
    ],
)
def test_broken_linear_function(points: list[tuple[int, int]], assertions: list[tuple[int, int]]) -> None:
    p = np.array([a for a, _ in assertions], dtype=np.int64)
    assert broken_linear(points, p).tolist() == [w for _, w in assertions]


def test_falling_slope_truncates_toward_zero() -> None:
    # shape {0 -> 10, 100 -> 0} at 75 %: 100 + (-100 * 75) / 100 = 25 (Go truncation)
    got = broken_linear([(0, 100), (100, 0)], np.array([75, 33], dtype=np.int64))
    assert got.tolist() == [25, 67]


# ---- Filter: ignoredResources / ignoredResourceGroups (TestEnoughRequests) ------------------------


def filter_reasons(args: dict[str, Any] | None, p: dict[str, Any]) -> list[str]:
    cfg = parse_config({"profiles": [{"pluginConfig": [{"name": "NodeResourcesFit", "args": args}]}]} if args else None)
    state = cluster(node("n1", cpu="10", memory="20", pods="32", extra={"example.com/aaa": "5"}))
    d = Scheduler(cfg.build(state)).decide(convert(p), NOW).decision
    return d.nodes["n1"].reasons if "n1" in d.nodes else []


@pytest.mark.parametrize(
    ("case", "args", "req", "want"),
    [
        # TestEnoughRequests: "skip checking ignored extended resource"
        (
            "skip checking ignored extended resource",
            {"ignoredResources": ["example.com/bbb"]},
            {"example.com/bbb": "1"},
            [],
        ),
        # TestEnoughRequests: "skip checking ignored extended resource via resource groups"
        (
            "skip checking ignored extended resource via resource groups",
            {"ignoredResourceGroups": ["example.com"]},
            {"example.com/bbb": "1"},
            [],
        ),
        # TestEnoughRequests: "extended resource allocatable enforced for unknown resource"
        (
            "extended resource allocatable enforced for unknown resource",
            None,
            {"example.com/bbb": "1"},
            ["Insufficient example.com/bbb"],
        ),
        # TestEnoughRequests: "extended resource allocatable enforced"
        ("extended resource allocatable enforced", None, {"example.com/aaa": "10"}, ["Insufficient example.com/aaa"]),
        # kubernetes.io/ names are never ignorable, whatever the groups say
        (
            "kubernetes.io resources are never ignored",
            {"ignoredResourceGroups": ["kubernetes.io"]},
            {"kubernetes.io/something": "1"},
            ["Insufficient kubernetes.io/something"],
        ),
        # kube's Filter compares the pod's ScalarResources only: a name that is neither one of the
        # four nor scalar (IsScalarResourceName) is never "Insufficient"
        ("a name that is not scalar is not compared", None, {"foo": "1"}, []),
        ("a malformed extended name is not compared", None, {"c/d/": "1"}, []),
    ],
)
def test_filter_ignored_resources(case: str, args: dict[str, Any] | None, req: dict[str, str], want: list[str]) -> None:
    p = pod("p", cpu="1", memory="1")
    p["spec"]["containers"][0]["resources"]["requests"].update(req)
    assert filter_reasons(args, p) == want


# ---- args (TestValidateFitArgs) --------------------------------------------------------------


@pytest.mark.parametrize(
    ("case", "args", "want"),
    [
        (
            "IgnoredResources: too long value",
            {"ignoredResources": ["a" * 64]},
            [f"ignoredResources[0]: Invalid value: '{'a' * 64}': name part must be no more than 63 characters"],
        ),
        (
            "IgnoredResources: name is empty",
            {"ignoredResources": ["example.com/"]},
            ["ignoredResources[0]: Invalid value: 'example.com/': name part must be non-empty"],
        ),
        (
            "IgnoredResources: name has too many slash",
            {"ignoredResources": ["example.com/aaa/bbb"]},
            [
                "ignoredResources[0]: Invalid value: 'example.com/aaa/bbb': a qualified name must consist of alphanumeric "
                "characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or "
                "'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an "
                "optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
            ],
        ),
        ("IgnoredResources: valid args", {"ignoredResources": ["example.com"]}, []),
        ("IgnoredResourceGroups: valid args ", {"ignoredResourceGroups": ["example.com"]}, []),
        (
            "IgnoredResourceGroups: illegal args",
            {"ignoredResourceGroups": ["example.com/"]},
            [
                "ignoredResourceGroups[0]: Invalid value: 'example.com/': resource group name can't contain '/'",
                "ignoredResourceGroups[0]: Invalid value: 'example.com/': name part must be non-empty",
            ],
        ),
        (
            "IgnoredResourceGroups: name is too long",
            {"ignoredResourceGroups": ["a" * 64]},
            [f"ignoredResourceGroups[0]: Invalid value: '{'a' * 64}': name part must be no more than 63 characters"],
        ),
        (
            "IgnoredResourceGroups: name cannot be contain slash",
            {"ignoredResourceGroups": ["example.com/aa"]},
            ["ignoredResourceGroups[0]: Invalid value: 'example.com/aa': resource group name can't contain '/'"],
        ),
        (
            "ScoringStrategy: type is unsupported",
            {"scoringStrategy": {"type": "Invalid"}},
            [
                'scoringStrategy.type: Unsupported value: "Invalid": supported values: "LeastAllocated", "MostAllocated", '
                '"RequestedToCapacityRatio"'
            ],
        ),
        (
            "ScoringStrategy: resources not supported (weight 101)",
            {"scoringStrategy": {"type": "LeastAllocated", "resources": [{"name": "cpu", "weight": 101}]}},
            [
                "scoringStrategy.resources[0].weight: Invalid value: 101: resource weight of cpu not in valid range (0, 100]"
            ],
        ),
        (
            "ScoringStrategy: negative weight",
            {"scoringStrategy": {"type": "MostAllocated", "resources": [{"name": "memory", "weight": -1}]}},
            [
                "scoringStrategy.resources[0].weight: Invalid value: -1: resource weight of memory not in valid range (0, 100]"
            ],
        ),
        (
            "ScoringStrategy: weight 0 is defaulted to 1 (v1 defaulting)",
            {"scoringStrategy": {"type": "MostAllocated", "resources": [{"name": "cpu", "weight": 0}]}},
            [],
        ),
        (
            "ScoringStrategy: invalid shapes",
            {"scoringStrategy": {"type": "RequestedToCapacityRatio", "requestedToCapacityRatio": {"shape": []}}},
            ["scoringStrategy.shape: Required value: at least one point must be specified"],
        ),
        (
            "ScoringStrategy: RequestedToCapacityRatio without its params",
            {"scoringStrategy": {"type": "RequestedToCapacityRatio"}},
            [
                "scoringStrategy.requestedToCapacityRatio: Required value: must be specified when type is RequestedToCapacityRatio"
            ],
        ),
        (
            # kube's ValidateNodeResourcesFitArgs checks the shape whenever requestedToCapacityRatio is
            # given, whatever the type, and LeastAllocated then ignores it
            "ScoringStrategy: params with another type are checked and ignored",
            {
                "scoringStrategy": {
                    "type": "LeastAllocated",
                    "requestedToCapacityRatio": {"shape": [{"utilization": 1, "score": 1}]},
                }
            },
            [],
        ),
        (
            "ScoringStrategy: a bad shape with another type",
            {"scoringStrategy": {"type": "MostAllocated", "requestedToCapacityRatio": {"shape": []}}},
            ["scoringStrategy.shape: Required value: at least one point must be specified"],
        ),
        (
            "ScoringStrategy: shape points (TestValidateFunctionShape: unsorted, out of range)",
            {
                "scoringStrategy": {
                    "type": "RequestedToCapacityRatio",
                    "requestedToCapacityRatio": {
                        "shape": [
                            {"utilization": 10, "score": 1},
                            {"utilization": 10, "score": 11},
                            {"utilization": 101, "score": -1},
                        ]
                    },
                }
            },
            [
                "scoringStrategy.shape[1].utilization: Invalid value: 10: values must be sorted in increasing order",
                "scoringStrategy.shape[1].score: Invalid value: 11: not in valid range [0, 10]",
                "scoringStrategy.shape[2].utilization: Invalid value: 101: not in valid range [0, 100]",
                "scoringStrategy.shape[2].score: Invalid value: -1: not in valid range [0, 10]",
            ],
        ),
    ],
)
def test_args_validation(case: str, args: dict[str, Any], want: list[str]) -> None:
    if not want:
        parse_config({"profiles": [{"pluginConfig": [{"name": "NodeResourcesFit", "args": args}]}]})
        return
    assert config_problems("NodeResourcesFit", args) == want


def test_defaults_are_least_allocated_over_cpu_and_memory() -> None:
    cfg = parse_config({"profiles": [{"pluginConfig": [{"name": "NodeResourcesFit", "args": {}}]}]})
    s = cfg.args["NodeResourcesFit"].scoring_strategy
    assert s.type == "LeastAllocated" and [(r.name, r.weight) for r in s.resources] == [("cpu", 1), ("memory", 1)]


def test_nonzero_defaults_follow_pods_as_they_come_and_go() -> None:
    """NonZeroRequested: a pod without requests counts 100m / 200Mi on its node, until it is gone."""
    cfg = parse_config({"profiles": [{"plugins": {"score": {"enabled": [{"name": "NodeResourcesFit"}]}}}]})
    state = cluster(knode("n1", cpu="1", memory=str(2000 * 1024 * 1024), pods="10"))
    scheduler = Scheduler(cfg.build(state))
    first = scheduler.decide(convert(kpod("p", {})), NOW).decision.nodes["n1"].scores["NodeResourcesFit"]
    # (1000-100)*100//1000 = 90, (2000-200)*100//2000 = 90
    assert first == 90
    state.apply(convert(kpod("e", {}, node="n1")))
    assert scheduler.decide(convert(kpod("p", {})), NOW).decision.nodes["n1"].scores["NodeResourcesFit"] == 80
    state.apply(convert(kpod("e", {}, node="n1")), deleted=True)
    assert scheduler.decide(convert(kpod("p", {})), NOW).decision.nodes["n1"].scores["NodeResourcesFit"] == 90


# ---- more of TestLeastAllocatedScoringStrategy and TestMostAllocatedScoringStrategy ------------------
# Not carried over: "Resources not set, pods scheduled with error" and "resource with zero weight" (berth reads
# v1 configuration, whose defaults turn no resources into cpu and memory and a weight of 0 into 1); the
# pods of "nonzero request for resource" have one container without requests (kpod("p", {})), as upstream's; the
# "resource with negative weight" / "weight larger than MaxNodeScore" cases are in test_args_validation.py.
EXT = "abc.com/xyz"  # upstream's extendedRes


def strategy(kind: str, **weights: int) -> dict[str, Any]:
    """A scoring strategy over these resources (names with '/' or '-' through a dict); none: cpu and memory 1."""
    res = [{"name": n, "weight": w} for n, w in (weights or {"cpu": 1, "memory": 1}).items()]
    return {"scoringStrategy": {"type": kind, "resources": res}}


EXTENDED_SET = {"cpu": 1, "memory": 1, EXT: 1}
SIXK = [n4("node1", cpu="6000"), knode("node2", cpu="6000", memory="10000", **{EXT: "4"})]
MORE_STRATEGY_CASES = [
    ("TestLeastAllocatedScoringStrategy/honor extended resource if the pod requests",
     strategy("LeastAllocated", **EXTENDED_SET),
     kpod("p", {"cpu": "3000", "memory": "5000", EXT: "2"}),
     [knode("node1", cpu="6000", memory="10000", **{EXT: "4"}), knode("node2", cpu="6000", memory="10000", **{EXT: "10"})],
     [], [50, 60]),
    ("TestLeastAllocatedScoringStrategy/if the node doesn't have a resource",
     strategy("LeastAllocated", **{EXT: 2, "cpu": 1, "memory": 1}),
     kpod("p", {"cpu": "3000", "memory": "4000"}), SIXK, [], [55, 55]),
    ("TestMostAllocatedScoringStrategy/no resources requested, pods scheduled with resources",
     strategy("MostAllocated"), kpod("p"), [n4("node1", "10000", "20000"), n4("node2", "10000", "20000")],
     [kpod("e1", {"cpu": "3000", "memory": "0"}, node="node1"), kpod("e2", {"cpu": "3000", "memory": "0"}, node="node1"),
      kpod("e3", {"cpu": "3000", "memory": "0"}, node="node2"), kpod("e4", {"cpu": "3000", "memory": "5000"}, node="node2")],
     [30, 42]),
    ("TestMostAllocatedScoringStrategy/resources requested equal node capacity",
     strategy("MostAllocated"), kpod("p", {"cpu": "2000", "memory": "4000"}, {"cpu": "3000", "memory": "5000"}),
     [n4("node1", "5000", "10000"), n4("node2", "10000", "9000")], [], [95, 75]),
    ("TestMostAllocatedScoringStrategy/nothing scheduled, resources requested, differently sized nodes (memory"
     " weight 2, cpu weight 1)",
     strategy("MostAllocated", memory=2, cpu=1), kpod("p", *REQ), [n4("node1"), n4("node2", cpu="6000")], [], [58, 50]),
    ("TestMostAllocatedScoringStrategy/no resources requested, pods scheduled, nonzero request for resource",
     strategy("MostAllocated"), kpod("p", {}),
     [knode("node1", cpu="250m", memory="1000Mi"), knode("node2", cpu="250m", memory="1000Mi")],
     [kpod("e1", {}, node="node1"), kpod("e2", {}, node="node1")], [80, 30]),
    ("TestMostAllocatedScoringStrategy/bypass extended resource if the pod does not request",
     strategy("MostAllocated", **EXTENDED_SET), kpod("p", *REQ), SIXK, [], [50, 50]),
    ("TestMostAllocatedScoringStrategy/honor extended resource if the pod request",
     strategy("MostAllocated", **EXTENDED_SET), kpod("p", {"cpu": "3000", "memory": "5000", EXT: "2"}),
     [knode("node1", cpu="6000", memory="10000", **{EXT: "4"}), knode("node2", cpu="6000", memory="10000", **{EXT: "10"})],
     [], [50, 40]),
    ("TestMostAllocatedScoringStrategy/if the node doesn't have a resource",
     strategy("MostAllocated", **{EXT: 2, "cpu": 1, "memory": 1}),
     kpod("p", {"cpu": "3000", "memory": "4000"}), SIXK, [], [45, 45]),
]  # fmt: skip


@pytest.mark.parametrize(
    ("args", "p", "nodes", "pods", "want"),
    [c[1:] for c in MORE_STRATEGY_CASES],
    ids=[c[0] for c in MORE_STRATEGY_CASES],
)
def test_more_strategy_scores_as_upstream(
    args: dict[str, Any], p: dict[str, Any], nodes: list[dict[str, Any]], pods: list[dict[str, Any]], want: list[int]
) -> None:
    got = scores("NodeResourcesFit", args, p, nodes, pods)
    assert got is not None and list(got.values()) == want
