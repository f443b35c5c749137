"""NodeResourcesBalancedAllocation, as upstream's TestNodeResourcesBalancedAllocation (kube 1.36's table: the
score is the change in balance the pod makes, 50 + (50 + with - without) // 2) and
TestValidateNodeResourcesBalancedAllocationArgs say (noderesources/balanced_allocation_test.go,
apis/config/validation/validation_pluginargs_test.go)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from berth.core.plugins.noderesources.balancedallocation import std_score, std_score_two
from tests.plugins.helpers import config_problems, knode, kpod, scores

GPU = "nvidia.com/gpu"
CPU_AND_MEMORY = ({"cpu": "1000m", "memory": "2000"}, {"cpu": "2000m", "memory": "3000"})
CPU_ONLY = ({"cpu": "1000m", "memory": "0"}, {"cpu": "2000m", "memory": "0"})
CPU_MEMORY_GPU = ({"cpu": "1000m", "memory": "2000"}, {"cpu": "2000m", "memory": "3000", GPU: "3"})
WITH_GPU = {"resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}, {"name": GPU, "weight": 1}]}


def mk(name: str, milli: int, memory: int, gpu: int | None = None) -> dict[str, Any]:
    extra = {} if gpu is None else {GPU: gpu}
    return knode(name, cpu=f"{milli}m", memory=memory, **extra)


# kube 1.36's table (TestNodeResourcesBalancedAllocation), less its DRA extended-resource rows: berth
# does not model DynamicResources. Scores are 50 + (50 + balance with the pod - without it) // 2.
CASES = [
    (
        "nothing scheduled, nothing requested, skip in PreScore",
        None,
        kpod("p"),
        [mk("node1", 4000, 10000), mk("node2", 4000, 10000)],
        [],
        None,
    ),
    (
        "nothing scheduled, resources requested, differently sized nodes",
        None,
        kpod("p", *CPU_AND_MEMORY),
        [mk("node1", 4000, 10000), mk("node2", 6000, 10000)],
        [],
        [68, 75],
    ),
    (
        "resources requested, pods scheduled with resources",
        None,
        kpod("p", *CPU_AND_MEMORY),
        [mk("node1", 10000, 20000), mk("node2", 10000, 20000)],
        [kpod("e1", *CPU_ONLY, node="node1"), kpod("e2", *CPU_AND_MEMORY, node="node2")],
        [73, 74],
    ),
    (
        "resources requested, pods scheduled with resources, differently sized nodes",
        None,
        kpod("p", *CPU_AND_MEMORY),
        [mk("node1", 10000, 20000), mk("node2", 10000, 50000)],
        [kpod("e1", *CPU_ONLY, node="node1"), kpod("e2", *CPU_AND_MEMORY, node="node2")],
        [73, 70],
    ),
    (
        "resources requested, pods scheduled with resources, nodes to reach min/max score",
        None,
        kpod("p", {"memory": "2000"}, {"memory": "3000"}),
        [mk("node1", 3000, 5000), mk("node2", 3000, 5000)],
        [kpod("e1", *CPU_ONLY, node="node1")],
        [100, 50],
    ),
    (
        "requested resources at node capacity",
        None,
        kpod("p", *CPU_ONLY),
        [mk("node1", 6000, 10000), mk("node2", 6000, 10000)],
        [kpod("e1", *CPU_ONLY, node="node1"), kpod("e2", *CPU_AND_MEMORY, node="node2")],
        [62, 62],
    ),
    (
        "scalar resource is included in the score computation if pod requests the scalar resource",
        WITH_GPU,
        kpod("p", {"cpu": "0", "memory": "0", GPU: "1"}),
        [mk("node1", 3500, 40000, 8), mk("node2", 3500, 40000, 8)],
        [kpod("e1", *CPU_MEMORY_GPU, node="node1"), kpod("e2", *CPU_AND_MEMORY, node="node2")],
        [75, 76],
    ),
    (
        "scalar resource is not included in the score computation if pod doesn't request the scalar resource",
        WITH_GPU,
        kpod("p", *CPU_AND_MEMORY),
        [mk("node1", 3500, 40000, 8), mk("node2", 3500, 40000)],
        [],
        [56, 56],
    ),
]


@pytest.mark.parametrize(("name", "args", "p", "nodes", "pods", "want"), CASES, ids=[c[0] for c in CASES])
def test_scores_match_upstream(
    name: str,
    args: dict[str, Any] | None,
    p: dict[str, Any],
    nodes: list[dict[str, Any]],
    pods: list[dict[str, Any]],
    want: list[int] | None,
) -> None:
    got = scores("NodeResourcesBalancedAllocation", args, p, nodes, pods)
    assert (None if got is None else list(got.values())) == want


@pytest.mark.parametrize(
    ("case", "args", "want"),
    [
        ("valid config", {"resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]}, []),
        (
            "invalid config",
            {"resources": [{"name": "cpu", "weight": 2}, {"name": "memory", "weight": 1}]},
            ["resources[0].weight: Invalid value: 2: must be 1"],
        ),
        (
            "repeated resources",
            {"resources": [{"name": "cpu", "weight": 1}, {"name": "cpu", "weight": 1}]},
            ['resources[1].name: Duplicate value: "cpu"'],
        ),
    ],
)
def test_args_validation(case: str, args: dict[str, Any], want: list[str]) -> None:
    if want:
        assert config_problems("NodeResourcesBalancedAllocation", args) == want
    else:
        # 0 -> 1000/2000 cpu, no memory: balance 75 with the pod, 100 without
        assert scores("NodeResourcesBalancedAllocation", args, kpod("p", {"cpu": "1"}), [mk("n", 2000, 10)]) == {
            "n": 62
        }


amounts = st.lists(st.tuples(st.integers(0, 2**40), st.integers(0, 2**40)), min_size=1, max_size=8)


@given(amounts, amounts)
def test_two_resources_fast_path_equals_the_general_one(
    first: list[tuple[int, int]], second: list[tuple[int, int]]
) -> None:
    n = min(len(first), len(second))
    a0, r0 = (np.array([x[i] for x in first[:n]], dtype=np.int64) for i in (0, 1))
    a1, r1 = (np.array([x[i] for x in second[:n]], dtype=np.int64) for i in (0, 1))
    assert std_score_two(a0, r0, a1, r1).tolist() == std_score([(a0, r0), (a1, r1)], n).tolist()
