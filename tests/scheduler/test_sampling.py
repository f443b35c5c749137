"""percentageOfNodesToScore: kube's numFeasibleNodesToFind, and the search that starts where the
last one stopped (nextStartNodeIndex), made deterministic in node-name order."""

from __future__ import annotations

from typing import Any

import pytest

from berth.core.config.kubeschedulerconfig import parse_config
from berth.core.errors import ConfigError
from berth.core.scheduler.sampling import num_feasible_nodes_to_find
from berth.core.scheduler.schedule_one import Scheduler
from tests.builders import NOW, cluster, node, pod

# upstream: pkg/scheduler/schedule_one_test.go TestNumFeasibleNodesToFind ("not set" is 0, adaptive)
CASES = [
    ("not set percentageOfNodesToScore and nodes number not more than 50", 0, 10, 10),
    ("set percentageOfNodesToScore and nodes number not more than 50", 40, 10, 10),
    ("not set percentageOfNodesToScore and nodes number more than 50", 0, 1000, 420),
    ("set percentageOfNodesToScore and nodes number more than 50", 40, 1000, 400),
    ("not set percentageOfNodesToScore and nodes number more than 50*125", 0, 6000, 300),
]


@pytest.mark.parametrize(("percentage", "nodes", "want"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_num_feasible_nodes_to_find(percentage: int, nodes: int, want: int) -> None:
    assert num_feasible_nodes_to_find(percentage, nodes) == want


def config(**top: Any) -> dict[str, Any]:
    return {"profiles": [{}], **top}


def test_berth_scores_every_feasible_node_unless_told_otherwise() -> None:
    assert parse_config(None).default.percentage_of_nodes_to_score == 100
    assert parse_config(config(percentageOfNodesToScore=0)).default.percentage_of_nodes_to_score == 0
    doc = {"percentageOfNodesToScore": 30, "profiles": [{}, {"schedulerName": "b", "percentageOfNodesToScore": 60}]}
    assert [p.percentage_of_nodes_to_score for p in parse_config(doc).profiles] == [30, 60]


def test_out_of_range_is_kubes_message() -> None:
    doc = {"percentageOfNodesToScore": 101, "profiles": [{"percentageOfNodesToScore": -1}]}
    with pytest.raises(ConfigError) as e:
        parse_config(doc)
    assert e.value.problems == [
        "percentageOfNodesToScore: Invalid value: 101: not in valid range [0-100]",
        "profiles[0].percentageOfNodesToScore: Invalid value: -1: not in valid range [0-100]",
    ]


def test_each_search_starts_where_the_last_stopped() -> None:
    names = [f"n{i:03}" for i in range(200)]
    state = cluster(*(node(n) for n in names), pod("a"), pod("b"), pod("c"))
    scheduler = Scheduler(parse_config(config(percentageOfNodesToScore=50)).build(state))
    looked = [sorted(scheduler.decide(state.pods[f"default/{p}"], NOW).decision.nodes) for p in "abc"]
    assert looked == [names[:100], names[100:], names[:100]]  # 100 of 200 feasible nodes each, in turn


def test_infeasible_nodes_on_the_way_count_as_looked_at() -> None:
    names = [f"n{i:03}" for i in range(200)]
    tainted = [node(n, taints=[{"key": "k", "effect": "NoSchedule"}]) for n in names[:20]]
    state = cluster(*tainted, *(node(n) for n in names[20:]), pod("a"), pod("b"))
    scheduler = Scheduler(parse_config(config(percentageOfNodesToScore=50)).build(state))
    first = scheduler.decide(state.pods["default/a"], NOW).decision.nodes
    assert sorted(n for n, r in first.items() if r.feasible) == names[20:120]
    assert scheduler.next_start == 120
    second = scheduler.decide(state.pods["default/b"], NOW).decision.nodes
    # 80 to the end, then it wraps round past the 20 tainted nodes for 20 more
    assert sorted(n for n, r in second.items() if r.feasible) == names[20:40] + names[120:]
    assert scheduler.next_start == 40


def test_a_node_set_moves_the_next_search_on_by_the_nodes_it_names() -> None:
    """A PreFilter's node set (NodeAffinity on metadata.name) of fewer nodes than the search would find:
    kube looks at each of them, and the next search starts that many nodes further on."""
    names = [f"n{i:03}" for i in range(200)]
    # a term per node: kube takes one value for metadata.name
    terms = [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [n]}]} for n in names[150:]]
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}}
    state = cluster(*(node(n) for n in names), pod("a", affinity=affinity), pod("b"))
    scheduler = Scheduler(parse_config(config(percentageOfNodesToScore=50)).build(state))
    first = scheduler.decide(state.pods["default/a"], NOW).decision.nodes
    assert sorted(n for n, r in first.items() if r.feasible) == names[150:]
    assert scheduler.next_start == 50
    second = scheduler.decide(state.pods["default/b"], NOW).decision.nodes
    assert sorted(second) == names[50:150]
    assert scheduler.next_start == 150
