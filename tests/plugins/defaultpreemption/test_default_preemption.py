"""DefaultPreemption as upstream's default_preemption_test.go says (pkg/scheduler/framework/plugins/
defaultpreemption): TestPostFilter, TestDryRunPreemption, TestSelectBestCandidate,
TestPodEligibleToPreemptOthers and TestPreempt. Upstream's test filter plugins (TrueFilter,
FalseFilter, MatchFilter, a fake filter's return code) are small filters here. Left out: cases of
features berth does not have (extenders, PodGroups and workload-aware preemption, a test plugin whose
AddPod/RemovePod fail) and TestCustomSelection / TestCustomOrdering (Go hooks, not configuration)."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from berth.core.framework.cycle import Cycle
from berth.core.framework.interface import PostFilterResult
from berth.core.framework.status import Code, Failure, Status
from berth.core.plugins.defaultpreemption import NAME, Candidate, Keys, select
from tests.builders import NOW, csi_node, pv, pvc, volume_attachment
from tests.plugins.defaultpreemption.helpers import (
    HIGH,
    LARGE,
    LOW,
    MEDIUM,
    MID,
    NEG,
    ONE_POD,
    SMALL,
    VERY_HIGH,
    VERY_LARGE,
    Harness,
    knode,
    kpod,
    pdb,
    priority_class,
)

NODE_RES = {"cpu": "200m", "memory": "400"}
VIOLATING = {"test.kubernetes.io/is-violating-pdb": "violating"}
NON_VIOLATING = {"test.kubernetes.io/is-violating-pdb": "non-violating"}
U, UU = Code.UNSCHEDULABLE, Code.UNRESOLVABLE

# (upstream case name, preemptor, pods, pdbs, nodes, node statuses, nominated node, plugin status)
POST_FILTER: list[
    tuple[
        str,
        dict[str, Any],
        list[dict[str, Any]],
        list[dict[str, Any]],
        list[dict[str, Any]],
        dict[str, Code],
        str | None,
        Status,
    ]
] = [
    (
        "pod with higher priority can be made schedulable",
        kpod("p", priority=HIGH),
        [kpod("p1", "node1")],
        [],
        [knode("node1", ONE_POD)],
        {"node1": U},
        "node1",
        Status(Code.SUCCESS, "", NAME),
    ),
    (
        "pod with tied priority is still unschedulable",
        kpod("p"),
        [kpod("p1", "node1")],
        [],
        [knode("node1", ONE_POD)],
        {"node1": U},
        "",
        Status(U, "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.", NAME),
    ),
    (
        "preemption should respect filteredNodesStatuses",
        kpod("p", priority=HIGH),
        [kpod("p1", "node1")],
        [],
        [knode("node1", ONE_POD)],
        {"node1": UU},
        "",
        Status(U, "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.", NAME),
    ),
    (
        "preemption should respect absent NodeToStatusReader entry meaning UnschedulableAndUnresolvable",
        kpod("p", priority=HIGH),
        [kpod("p1", "node1")],
        [],
        [knode("node1", ONE_POD)],
        {},
        "",
        Status(U, "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.", NAME),
    ),
    (
        "pod can be made schedulable on one node",
        kpod("p", priority=MID),
        [kpod("p1", "node1", HIGH), kpod("p2", "node2", LOW)],
        [],
        [knode("node1", ONE_POD), knode("node2", ONE_POD)],
        {"node1": U, "node2": U},
        "node2",
        Status(Code.SUCCESS, "", NAME),
    ),
    (
        "pod can be made schedulable on minHighestPriority node",
        kpod("p", priority=VERY_HIGH),
        [
            kpod("p1", "node1", HIGH, labels=NON_VIOLATING),
            kpod("p2", "node1", LOW, labels=VIOLATING),
            kpod("p3", "node2", MID, labels=VIOLATING),
        ],
        [
            pdb(VIOLATING, name="violating-pdb", min_available="100%"),
            pdb(NON_VIOLATING, allowed=math.floor(2**31 - 1), name="non-violating-pdb", min_available=0),
        ],
        [knode("node1", ONE_POD), knode("node2", ONE_POD)],
        {"node1": U, "node2": U},
        "node2",
        Status(Code.SUCCESS, "", NAME),
    ),
    (
        "no candidate nodes found, no enough resource after removing low priority pods",
        kpod("p", priority=HIGH, req=LARGE),
        [kpod("p1", "node1"), kpod("p2", "node2")],
        [],
        [knode("node1", NODE_RES), knode("node2", NODE_RES)],
        {"node1": U, "node2": U},
        "",
        Status(U, "preemption: 0/2 nodes are available: 2 Insufficient cpu.", NAME),
    ),
    (
        "no candidate nodes found with mixed reasons, no lower priority pod and no enough CPU resource",
        kpod("p", priority=HIGH, req=LARGE),
        [kpod("p1", "node1", HIGH), kpod("p2", "node2"), kpod("p3", "node3", HIGH)],
        [],
        [knode("node1", ONE_POD), knode("node2", NODE_RES), knode("node3", ONE_POD)],
        {"node1": U, "node2": U, "node3": U},
        "",
        Status(
            U,
            "preemption: 0/3 nodes are available: 1 Insufficient cpu, 2 No preemption victims found for incoming pod.",
            NAME,
        ),
    ),
    (
        "no candidate nodes found with mixed reason, 2 UnschedulableAndUnresolvable nodes and 2 nodes don't have enough CPU resource",
        kpod("p", priority=HIGH, req=LARGE),
        [kpod("p1", "node1"), kpod("p2", "node2")],
        [],
        [knode(f"node{i}", NODE_RES) for i in range(1, 5)],
        {"node1": U, "node2": U, "node4": UU},
        "",
        Status(
            U,
            "preemption: 0/4 nodes are available: 2 Insufficient cpu, 2 Preemption is not helpful for scheduling.",
            NAME,
        ),
    ),
]


@pytest.mark.parametrize(
    ("pod", "pods", "pdbs", "nodes", "codes", "nominated", "status"),
    [c[1:] for c in POST_FILTER],
    ids=[c[0] for c in POST_FILTER],
)
def test_post_filter(
    pod: dict[str, Any],
    pods: list[dict[str, Any]],
    pdbs: list[dict[str, Any]],
    nodes: list[dict[str, Any]],
    codes: dict[str, Code],
    nominated: str | None,
    status: Status,
) -> None:
    # upstream: TestPostFilter (each case by its name)
    h = Harness().add(*nodes, *pods, *pdbs)
    got = h.plugin.post_filter(h.cycle(pod), h.statuses(codes), h.scheduler.dry_runner)
    assert got.status == status
    assert got.nominated_node == nominated


def names(candidates: list[Candidate]) -> list[tuple[str, list[str], int]]:
    """As upstream compares: candidates by node name, victims by pod name."""
    return sorted((c.node, sorted(p.name for p in c.victims), c.pdb_violations) for c in candidates)


class _Reject:
    """A filter that turns every node away as Unschedulable (upstream's FalseFilter, or its
    FakeFilterPlugin with fakeFilterRC Unschedulable)."""

    name = "Reject"

    def filter(self, cycle: Cycle) -> list[Failure]:
        n = len(cycle.state.nodes.valid)
        return [Failure(np.ones(n, dtype=bool), "rejected", Code.UNSCHEDULABLE)]


class _Match:
    """A filter that passes only the node named as the pod (upstream's MatchFilterPlugin)."""

    name = "Match"

    def filter(self, cycle: Cycle) -> list[Failure]:
        nodes = cycle.state.nodes
        other = nodes.valid.copy()
        if cycle.pod.name in nodes.slot:
            other[nodes.slot[cycle.pod.name]] = False
        return [Failure(other, "node name does not match", Code.UNSCHEDULABLE)]


TEST_FILTERS = {"Reject": _Reject, "Match": _Match}
TWO = [knode("node1", VERY_LARGE), knode("node2", VERY_LARGE)]
FOO = {"app": "foo"}

# (upstream case name, filters, args, nodes, pods, pdbs, preemptors and expected candidates per cycle)
DRY_RUN: list[
    tuple[
        str,
        tuple[str, ...],
        dict[str, Any],
        list[dict[str, Any]],
        list[dict[str, Any]],
        list[dict[str, Any]],
        list[tuple[dict[str, Any], list[tuple[str, list[str], int]]]],
    ]
] = [
    (
        "a pod that does not fit on any node",
        ("Reject",),
        {},
        TWO,
        [kpod("p1", "node1", MID), kpod("p2", "node2", MID)],
        [],
        [(kpod("p", priority=HIGH), [])],
    ),
    # "a pod that fits with no preemption": upstream's TrueFilter (no filter here), every node reported
    # Unschedulable; the pod fits with every victim reprieved, so no node is a candidate
    (
        "a pod that fits with no preemption",
        (),
        {},
        TWO,
        [kpod("p1", "node1", MID), kpod("p2", "node2", MID)],
        [],
        [(kpod("p", priority=HIGH), [])],
    ),
    (
        "a pod that fits on one node with no preemption",
        ("Match",),
        {},
        TWO,
        [kpod("p1", "node1", MID), kpod("p2", "node2", MID)],
        [],
        [(kpod("node1", priority=HIGH), [])],
    ),
    (
        "a pod that fits on both nodes when lower priority pods are preempted",
        ("NodeResourcesFit",),
        {},
        TWO,
        [kpod("p1", "node1", MID, LARGE), kpod("p2", "node2", MID, LARGE)],
        [],
        [(kpod("p", priority=HIGH, req=LARGE), [("node1", ["p1"], 0), ("node2", ["p2"], 0)])],
    ),
    (
        "get Unschedulable in the preemption phase when the filter plugins filtering the nodes",
        ("NodeResourcesFit", "Reject"),
        {},
        TWO,
        [kpod("p1", "node1", MID, LARGE), kpod("p2", "node2", MID, LARGE)],
        [],
        [(kpod("p", priority=HIGH, req=LARGE), [])],
    ),
    (
        "a pod that would fit on the nodes, but other pods running are higher priority, no preemption would happen",
        ("NodeResourcesFit",),
        {},
        TWO,
        [kpod("p1", "node1", MID, LARGE), kpod("p2", "node2", MID, LARGE)],
        [],
        [(kpod("p", priority=LOW, req=LARGE), [])],
    ),
    (
        "medium priority pod is preempted, but lower priority one stays as it is small",
        ("NodeResourcesFit",),
        {},
        TWO,
        [kpod("p1.1", "node1", LOW, SMALL), kpod("p1.2", "node1", MID, LARGE), kpod("p2", "node2", MID, LARGE)],
        [],
        [(kpod("p", priority=HIGH, req=LARGE), [("node1", ["p1.2"], 0), ("node2", ["p2"], 0)])],
    ),
    (
        "mixed priority pods are preempted",
        ("NodeResourcesFit",),
        {},
        TWO,
        [
            kpod("p1.1", "node1", MID, SMALL),
            kpod("p1.2", "node1", LOW, SMALL),
            kpod("p1.3", "node1", MID, MEDIUM),
            kpod("p1.4", "node1", HIGH, SMALL),
            kpod("p2", "node2", HIGH, LARGE),
        ],
        [],
        [(kpod("p", priority=HIGH, req=LARGE), [("node1", ["p1.2", "p1.3"], 0)])],
    ),
    (
        "mixed priority pods are preempted, pick later StartTime one when priorities are equal",
        ("NodeResourcesFit",),
        {},
        TWO,
        [
            kpod("p1.1", "node1", LOW, SMALL, start=5),
            kpod("p1.2", "node1", LOW, SMALL, start=4),
            kpod("p1.3", "node1", MID, MEDIUM, start=3),
            kpod("p1.4", "node1", HIGH, SMALL, start=2),
            kpod("p2", "node2", HIGH, LARGE, start=1),
        ],
        [],
        [(kpod("p", priority=HIGH, req=LARGE), [("node1", ["p1.1", "p1.3"], 0)])],
    ),
    (
        "pod with anti-affinity is preempted",
        ("NodeResourcesFit", "InterPodAffinity"),
        {},
        TWO,
        [
            kpod(
                "p1.1",
                "node1",
                LOW,
                SMALL,
                labels={"foo": ""},
                affinity={
                    "podAntiAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": [
                            {
                                "labelSelector": {"matchExpressions": [{"key": "foo", "operator": "Exists"}]},
                                "topologyKey": "hostname",
                            }
                        ]
                    }
                },
            ),
            kpod("p1.2", "node1", MID, SMALL),
            kpod("p1.3", "node1", HIGH, SMALL),
            kpod("p2", "node2", HIGH, SMALL),
        ],
        [],
        [(kpod("p", priority=HIGH, req=SMALL, labels={"foo": ""}), [("node1", ["p1.1"], 0)])],
    ),
    (
        "preemption to resolve pod topology spread filter failure",
        ("PodTopologySpread",),
        {},
        [knode("node-a/zone1", VERY_LARGE), knode("node-b/zone1", VERY_LARGE), knode("node-x/zone2", VERY_LARGE)],
        [
            kpod("pod-a1", "node-a", MID, labels={"foo": ""}),
            kpod("pod-a2", "node-a", LOW, labels={"foo": ""}),
            kpod("pod-b1", "node-b", LOW, labels={"foo": ""}),
            kpod("pod-x1", "node-x", HIGH, labels={"foo": ""}),
            kpod("pod-x2", "node-x", HIGH, labels={"foo": ""}),
        ],
        [],
        [
            (
                kpod(
                    "p",
                    priority=HIGH,
                    labels={"foo": ""},
                    topologySpreadConstraints=[
                        {
                            "maxSkew": 1,
                            "topologyKey": key,
                            "whenUnsatisfiable": "DoNotSchedule",
                            "labelSelector": {"matchExpressions": [{"key": "foo", "operator": "Exists"}]},
                        }
                        for key in ("zone", "hostname")
                    ],
                ),
                [("node-a", ["pod-a2"], 0), ("node-b", ["pod-b1"], 0)],
            )
        ],
    ),
    (
        "preemption with violation of same pdb",
        ("NodeResourcesFit",),
        {},
        [knode("node1", VERY_LARGE)],
        [kpod("p1.1", "node1", MID, MEDIUM, labels=FOO), kpod("p1.2", "node1", MID, MEDIUM, labels=FOO)],
        [pdb(FOO, allowed=1)],
        [(kpod("p", priority=HIGH, req=VERY_LARGE), [("node1", ["p1.1", "p1.2"], 1)])],
    ),
    (
        "preemption with violation of the pdb with pod whose eviction was processed, the victim doesn't belong to DisruptedPods",
        ("NodeResourcesFit",),
        {},
        [knode("node1", VERY_LARGE)],
        [kpod("p1.1", "node1", MID, MEDIUM, labels=FOO), kpod("p1.2", "node1", MID, MEDIUM, labels=FOO)],
        [pdb(FOO, allowed=1, disrupted=("p2",))],
        [(kpod("p", priority=HIGH, req=VERY_LARGE), [("node1", ["p1.1", "p1.2"], 1)])],
    ),
    (
        "preemption with violation of the pdb with pod whose eviction was processed, the victim belongs to DisruptedPods",
        ("NodeResourcesFit",),
        {},
        [knode("node1", VERY_LARGE)],
        [kpod("p1.1", "node1", MID, MEDIUM, labels=FOO), kpod("p1.2", "node1", MID, MEDIUM, labels=FOO)],
        [pdb(FOO, allowed=1, disrupted=("p1.2",))],
        [(kpod("p", priority=HIGH, req=VERY_LARGE), [("node1", ["p1.1", "p1.2"], 0)])],
    ),
    (
        "preemption with violation of the pdb with pod whose eviction was processed, the victim which belongs to DisruptedPods is treated as 'nonViolating'",
        ("NodeResourcesFit",),
        {},
        [knode("node1", VERY_LARGE)],
        [
            kpod("p1.1", "node1", MID, MEDIUM, labels=FOO),
            kpod("p1.2", "node1", MID, MEDIUM, labels=FOO),
            kpod("p1.3", "node1", MID, MEDIUM, labels=FOO),
        ],
        [pdb(FOO, allowed=1, disrupted=("p1.3",))],
        [(kpod("p", priority=HIGH, req=VERY_LARGE), [("node1", ["p1.1", "p1.2", "p1.3"], 1)])],
    ),
    (
        "all nodes are possible candidates, but DefaultPreemptionArgs limits to 2",
        ("NodeResourcesFit",),
        {"minCandidateNodesPercentage": 40, "minCandidateNodesAbsolute": 1},
        [knode(f"node{i}", VERY_LARGE) for i in range(1, 6)],
        [kpod(f"p{i}", f"node{i}", MID, LARGE) for i in range(1, 6)],
        [],
        [(kpod("p", priority=HIGH, req=LARGE), [("node1", ["p1"], 0), ("node5", ["p5"], 0)])],
    ),
    (
        "some nodes are not possible candidates, DefaultPreemptionArgs limits to 2",
        ("NodeResourcesFit",),
        {"minCandidateNodesPercentage": 40, "minCandidateNodesAbsolute": 1},
        [knode(f"node{i}", VERY_LARGE) for i in range(1, 6)],
        [kpod(f"p{i}", f"node{i}", VERY_HIGH if i in (2, 5) else MID, LARGE) for i in range(1, 6)],
        [],
        [(kpod("p", priority=HIGH, req=LARGE), [("node1", ["p1"], 0), ("node3", ["p3"], 0)])],
    ),
    (
        "preemption offset across multiple scheduling cycles and wrap around",
        ("NodeResourcesFit",),
        {"minCandidateNodesPercentage": 40, "minCandidateNodesAbsolute": 1},
        [knode(f"node{i}", VERY_LARGE) for i in range(1, 6)],
        [kpod(f"p{i}", f"node{i}", MID, LARGE) for i in range(1, 6)],
        [],
        [
            (kpod("tp1", priority=HIGH, req=LARGE), [("node1", ["p1"], 0), ("node5", ["p5"], 0)]),
            (kpod("tp2", priority=HIGH, req=LARGE), [("node2", ["p2"], 0), ("node3", ["p3"], 0)]),
            (kpod("tp3", priority=HIGH, req=LARGE), [("node4", ["p4"], 0), ("node5", ["p5"], 0)]),
        ],
    ),
    (
        "preemption looks past numCandidates until a non-PDB violating node is found",
        ("NodeResourcesFit",),
        {"minCandidateNodesPercentage": 40, "minCandidateNodesAbsolute": 2},
        [knode(f"node{i}", VERY_LARGE) for i in range(1, 6)],
        [kpod(f"p{i}", f"node{i}", MID, LARGE, labels=FOO if i in (1, 2, 5) else {}) for i in range(1, 6)],
        [pdb(FOO, allowed=0)],
        [(kpod("p", priority=HIGH, req=LARGE), [("node1", ["p1"], 1), ("node3", ["p3"], 0), ("node5", ["p5"], 1)])],
    ),
]

# upstream seeds its offsets with rand.NewSource(4): 4, then 1, then 3 for five nodes
UPSTREAM_OFFSETS = [4, 1, 3]


@pytest.mark.parametrize(
    ("filters", "args", "nodes", "pods", "pdbs", "cycles"), [c[1:] for c in DRY_RUN], ids=[c[0] for c in DRY_RUN]
)
def test_dry_run_preemption(
    filters: tuple[str, ...],
    args: dict[str, Any],
    nodes: list[dict[str, Any]],
    pods: list[dict[str, Any]],
    pdbs: list[dict[str, Any]],
    cycles: list[tuple[dict[str, Any], list[tuple[str, list[str], int]]]],
) -> None:
    # upstream: TestDryRunPreemption (each case by its name)
    h = Harness(tuple(f for f in filters if f not in TEST_FILTERS), args).add(*nodes, *pods, *pdbs)
    extra = tuple(TEST_FILTERS[f]() for f in filters if f in TEST_FILTERS)
    if extra:
        profile = h.scheduler.profile
        object.__setattr__(profile, "filters", (*profile.filters, *extra))
    offsets = iter(UPSTREAM_OFFSETS)
    h.plugin.offset = lambda pod, n: next(offsets) % n
    for pod, want in cycles:
        got, _ = h.plugin.find_candidates(h.cycle(pod), h.every_node(), h.scheduler.dry_runner)
        assert names(got) == want
    assert len(h.state.pods) == len(pods)  # the dry run put every pod back


# (upstream case name, nodes, preemptor, pods, the node(s) it may pick)
SELECT: list[tuple[str, list[str], dict[str, Any], list[dict[str, Any]], set[str]]] = [
    (
        "a pod that fits on both nodes when lower priority pods are preempted",
        ["node1", "node2"],
        kpod("p", priority=HIGH, req=LARGE),
        [kpod("p1", "node1", MID, LARGE, start=0), kpod("p2", "node2", MID, LARGE, start=0)],
        {"node1", "node2"},
    ),
    (
        "node with min highest priority pod is picked",
        ["node1", "node2", "node3"],
        kpod("p", priority=HIGH, req=VERY_LARGE),
        [
            kpod("p1.1", "node1", MID, MEDIUM, start=0),
            kpod("p1.2", "node1", MID, LARGE, start=0),
            kpod("p2.1", "node2", MID, MEDIUM, start=0),
            kpod("p2.2", "node2", LOW, MEDIUM, start=0),
            kpod("p3.1", "node3", LOW, MEDIUM, start=0),
            kpod("p3.2", "node3", LOW, MEDIUM, start=0),
        ],
        {"node3"},
    ),
    (
        "when highest priorities are the same, minimum sum of priorities is picked",
        ["node1", "node2", "node3"],
        kpod("p", priority=HIGH, req=VERY_LARGE),
        [
            kpod("p1.1", "node1", MID, MEDIUM, start=0),
            kpod("p1.2", "node1", MID, LARGE, start=0),
            kpod("p2.1", "node2", MID, LARGE, start=0),
            kpod("p2.2", "node2", LOW, MEDIUM, start=0),
            kpod("p3.1", "node3", MID, MEDIUM, start=0),
            kpod("p3.2", "node3", MID, MEDIUM, start=0),
        ],
        {"node2"},
    ),
    (
        "when highest priority and sum are the same, minimum number of pods is picked",
        ["node1", "node2", "node3"],
        kpod("p", priority=HIGH, req=VERY_LARGE),
        [
            kpod("p1.1", "node1", MID, SMALL, start=0),
            kpod("p1.2", "node1", NEG, SMALL, start=0),
            kpod("p1.3", "node1", MID, SMALL, start=0),
            kpod("p1.4", "node1", NEG, SMALL, start=0),
            kpod("p2.1", "node2", MID, LARGE, start=0),
            kpod("p2.2", "node2", NEG, MEDIUM, start=0),
            kpod("p3.1", "node3", MID, MEDIUM, start=0),
            kpod("p3.2", "node3", NEG, SMALL, start=0),
            kpod("p3.3", "node3", LOW, SMALL, start=0),
        ],
        {"node2"},
    ),
    (
        "sum of adjusted priorities is considered",
        ["node1", "node2", "node3"],
        kpod("p", priority=HIGH, req=VERY_LARGE),
        [
            kpod("p1.1", "node1", MID, SMALL, start=0),
            kpod("p1.2", "node1", NEG, SMALL, start=0),
            kpod("p1.3", "node1", NEG, SMALL, start=0),
            kpod("p2.1", "node2", MID, LARGE, start=0),
            kpod("p2.2", "node2", NEG, MEDIUM, start=0),
            kpod("p3.1", "node3", MID, MEDIUM, start=0),
            kpod("p3.2", "node3", NEG, SMALL, start=0),
            kpod("p3.3", "node3", LOW, SMALL, start=0),
        ],
        {"node2"},
    ),
    (
        "non-overlapping lowest high priority, sum priorities, and number of pods",
        ["node1", "node2", "node3", "node4"],
        kpod("p", priority=VERY_HIGH, req=VERY_LARGE),
        [
            kpod("p1.1", "node1", MID, SMALL, start=0),
            kpod("p1.2", "node1", LOW, SMALL, start=0),
            kpod("p1.3", "node1", LOW, SMALL, start=0),
            kpod("p2.1", "node2", HIGH, LARGE, start=0),
            kpod("p3.1", "node3", MID, MEDIUM, start=0),
            kpod("p3.2", "node3", LOW, SMALL, start=0),
            kpod("p3.3", "node3", LOW, SMALL, start=0),
            kpod("p3.4", "node3", LOW, MEDIUM, start=0),
            kpod("p4.1", "node4", MID, MEDIUM, start=0),
            kpod("p4.2", "node4", MID, SMALL, start=0),
            kpod("p4.3", "node4", MID, SMALL, start=0),
            kpod("p4.4", "node4", NEG, SMALL, start=0),
        ],
        {"node1"},
    ),
    (
        "same priority, same number of victims, different start time for each node's pod",
        ["node1", "node2", "node3"],
        kpod("p", priority=HIGH, req=VERY_LARGE),
        [
            kpod("p1.1", "node1", MID, MEDIUM, start=2),
            kpod("p1.2", "node1", MID, MEDIUM, start=2),
            kpod("p2.1", "node2", MID, MEDIUM, start=3),
            kpod("p2.2", "node2", MID, MEDIUM, start=3),
            kpod("p3.1", "node3", MID, MEDIUM, start=1),
            kpod("p3.2", "node3", MID, MEDIUM, start=1),
        ],
        {"node2"},
    ),
    (
        "same priority, same number of victims, different start time for all pods",
        ["node1", "node2", "node3"],
        kpod("p", priority=HIGH, req=VERY_LARGE),
        [
            kpod("p1.1", "node1", MID, MEDIUM, start=4),
            kpod("p1.2", "node1", MID, MEDIUM, start=2),
            kpod("p2.1", "node2", MID, MEDIUM, start=5),
            kpod("p2.2", "node2", MID, MEDIUM, start=1),
            kpod("p3.1", "node3", MID, MEDIUM, start=3),
            kpod("p3.2", "node3", MID, MEDIUM, start=6),
        ],
        {"node3"},
    ),
    (
        "different priority, same number of victims, different start time for all pods",
        ["node1", "node2", "node3"],
        kpod("p", priority=HIGH, req=VERY_LARGE),
        [
            kpod("p1.1", "node1", LOW, MEDIUM, start=4),
            kpod("p1.2", "node1", MID, MEDIUM, start=2),
            kpod("p2.1", "node2", MID, MEDIUM, start=6),
            kpod("p2.2", "node2", LOW, MEDIUM, start=1),
            kpod("p3.1", "node3", LOW, MEDIUM, start=3),
            kpod("p3.2", "node3", MID, MEDIUM, start=5),
        ],
        {"node2"},
    ),
]


@pytest.mark.parametrize(("nodes", "pod", "pods", "want"), [c[1:] for c in SELECT], ids=[c[0] for c in SELECT])
def test_select_best_candidate(
    nodes: list[str], pod: dict[str, Any], pods: list[dict[str, Any]], want: set[str]
) -> None:
    # upstream: TestSelectBestCandidate (each case by its name)
    h = Harness().add(*(knode(n, VERY_LARGE) for n in nodes), *pods)
    got = h.plugin.post_filter(h.cycle(pod), h.every_node(), h.scheduler.dry_runner)
    assert got.status == Status(Code.SUCCESS, "", NAME)
    assert got.nominated_node in want


def _criterion_by_criterion(candidates: list[Candidate], keys: dict[str, Keys]) -> Candidate:
    """pickOneNodeForPreemption as kube writes it: keep the candidates best on each criterion in turn,
    then the first node name."""
    left = list(candidates)
    for i in range(5):
        best = min(keys[c.node][i] for c in left)
        left = [c for c in left if keys[c.node][i] == best]
    return min(left, key=lambda c: c.node)


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from([f"node{i}" for i in range(12)]),
        st.tuples(*[st.integers(0, 2)] * 4, st.sampled_from([-2.5, -1.0, 0.0])),
        min_size=1,
    )
)
def test_select_is_the_criteria_in_turn(keys: dict[str, Keys]) -> None:
    candidates = [Candidate(node, (), k[0]) for node, k in keys.items()]
    assert select(candidates, lambda c: keys[c.node]) is _criterion_by_criterion(candidates, keys)


TERMINATING = {"deletionTimestamp": "2026-11-01T11:00:00Z"}
PREEMPTED = {
    "conditions": [{"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}],
}
ELIGIBLE: list[tuple[str, dict[str, Any], list[dict[str, Any]], list[str], Code | None, bool]] = [
    (
        "Pod with nominated node",
        kpod("p_with_nominated_node", priority=HIGH, status={"nominatedNodeName": "node1"}),
        [kpod("p1", "node1", LOW, metadata=TERMINATING)],
        ["node1"],
        UU,
        True,
    ),
    ("Pod without nominated node", kpod("p_without_nominated_node", priority=HIGH), [], [], None, True),
    (
        "Pod with 'PreemptNever' preemption policy",
        kpod("p_with_preempt_never_policy", priority=HIGH, preemptionPolicy="Never"),
        [],
        [],
        None,
        False,
    ),
    (
        "preemption victim pod terminating, as indicated by the dedicated DisruptionTarget condition",
        kpod("p_with_nominated_node", priority=HIGH, status={"nominatedNodeName": "node1"}),
        [kpod("p1", "node1", LOW, metadata=TERMINATING, status=PREEMPTED)],
        ["node1"],
        None,
        False,
    ),
    (
        "non-victim Pods terminating",
        kpod("p_with_nominated_node", priority=HIGH, status={"nominatedNodeName": "node1"}),
        [kpod("p1", "node1", LOW, metadata=TERMINATING)],
        ["node1"],
        None,
        True,
    ),
]


@pytest.mark.parametrize(
    ("pod", "pods", "nodes", "code", "want"), [c[1:] for c in ELIGIBLE], ids=[c[0] for c in ELIGIBLE]
)
def test_pod_eligible_to_preempt_others(
    pod: dict[str, Any], pods: list[dict[str, Any]], nodes: list[str], code: Code | None, want: bool
) -> None:
    # upstream: TestPodEligibleToPreemptOthers (each case by its name)
    h = Harness().add(*(knode(n) for n in nodes), *pods)
    statuses = h.statuses({} if code is None else {"node1": code})
    eligible, _ = h.plugin.eligible(h.cycle(pod).pod, statuses)
    assert eligible is want


def test_not_eligible_messages_leave_the_nomination_alone() -> None:
    # upstream: TestPodEligibleToPreemptOthers's reasons, as PostFilter words them (preemption.go)
    h = Harness().add(knode("node1", ONE_POD), kpod("p1", "node1", LOW, metadata=TERMINATING, status=PREEMPTED))
    never = h.plugin.post_filter(
        h.cycle(kpod("p", priority=HIGH, preemptionPolicy="Never")), h.every_node(), h.scheduler.dry_runner
    )
    assert never == PostFilterResult(Status(U, "preemption: not eligible due to preemptionPolicy=Never.", NAME))
    waiting = h.plugin.post_filter(
        h.cycle(kpod("p", priority=HIGH, status={"nominatedNodeName": "node1"})), h.every_node(), h.scheduler.dry_runner
    )
    assert waiting == PostFilterResult(
        Status(U, "preemption: not eligible due to a terminating pod on the nominated node.", NAME)
    )


def test_a_cleared_nomination_no_longer_holds_the_pod_back() -> None:
    # kube's Preempt reads the latest pod: once its nominatedNodeName is cleared (a higher-priority
    # preemption on that node, issue 37) the terminating pod there no longer makes it ineligible
    h = Harness().add(knode("node1", ONE_POD), kpod("p1", "node1", LOW, metadata=TERMINATING, status=PREEMPTED))
    h.add(kpod("p", priority=HIGH, status={"nominatedNodeName": "node1"}))
    pod = h.state.pods["default/p"]
    cycle = Cycle(pod, h.state, NOW)
    before = h.plugin.post_filter(cycle, h.every_node(), h.scheduler.dry_runner)
    assert before.status.message == "preemption: not eligible due to a terminating pod on the nominated node."
    h.scheduler.nominator.clear(pod.key)
    after = h.plugin.post_filter(cycle, h.every_node(), h.scheduler.dry_runner)
    assert "not eligible" not in after.status.message


class _OneAtATime:
    """The profile's dry run, declared not node-local: DefaultPreemption then tries one node at a time."""

    node_local = False
    node_fit = None

    def __init__(self, h: Harness) -> None:
        self.h = h

    def __call__(self, cycle: Cycle, nodes: Any = None) -> Any:
        return self.h.scheduler.dry_run(cycle, nodes)

    def nominated(self, pod: Any) -> frozenset[str]:
        return frozenset()

    def nominated_node(self, pod: Any) -> str:
        return str(pod.nominated_node or "")

    def nominated_amounts(self, cycle: Cycle) -> None:
        return None

    def removal_safe(self, cycle: Cycle, leaving: Any = None) -> bool:
        return False


@settings(max_examples=40, deadline=None)
@given(
    nodes=st.integers(1, 6),
    pods=st.lists(
        st.tuples(st.integers(0, 5), st.integers(0, 3), st.sampled_from([SMALL, MEDIUM, LARGE])), max_size=14
    ),
    protected=st.sets(st.integers(0, 13), max_size=4),
    allowed=st.integers(0, 2),
    args=st.sampled_from([{}, {"minCandidateNodesPercentage": 40, "minCandidateNodesAbsolute": 1}]),
)
def test_node_local_batches_find_what_one_node_at_a_time_finds(
    nodes: int, pods: list[tuple[int, int, dict[str, str]]], protected: set[int], allowed: int, args: dict[str, Any]
) -> None:
    # the oracle: upstream's one-node-at-a-time dry run (DryRunPreemption with parallelism 1)
    h = Harness(args=args).add(*(knode(f"node{i}", VERY_LARGE) for i in range(nodes)), pdb(FOO, allowed=allowed))
    for i, (n, prio, req) in enumerate(pods):
        h.add(kpod(f"p{i}", f"node{n % nodes}", prio * 100, req, labels=FOO if i in protected else {}))
    assert h.scheduler.dry_runner.node_local
    cycle = h.cycle(kpod("p", priority=HIGH, req=LARGE))
    batched, rejected = h.plugin.find_candidates(cycle, h.every_node(), h.scheduler.dry_runner)
    single, rejected_single = h.plugin.find_candidates(cycle, h.every_node(), _OneAtATime(h))
    assert [(c.node, [p.key for p in c.victims], c.pdb_violations) for c in batched] == [
        (c.node, [p.key for p in c.victims], c.pdb_violations) for c in single
    ]
    assert rejected == rejected_single
    assert len(h.state.pods) == len(pods)


@settings(max_examples=60, deadline=None)
@given(
    nodes=st.lists(
        st.tuples(st.sampled_from([SMALL, MEDIUM, LARGE]), st.integers(2, 5), st.booleans()), min_size=1, max_size=6
    ),
    pods=st.lists(
        st.tuples(st.integers(0, 5), st.integers(0, 3), st.sampled_from([SMALL, MEDIUM, LARGE, {}])), max_size=16
    ),
    protected=st.sets(st.integers(0, 15), max_size=4),
    allowed=st.integers(0, 2),
    want=st.sampled_from([SMALL, MEDIUM, LARGE]),
)
def test_dry_run_by_amounts_finds_what_the_dry_run_finds(
    nodes: list[tuple[dict[str, str], int, bool]],
    pods: list[tuple[int, int, dict[str, str]]],
    protected: set[int],
    allowed: int,
    want: dict[str, str],
) -> None:
    # the oracle: the dry run proper, one node at a time; the statuses are the real filters' (only
    # nodes NodeResourcesFit alone rejected are judged by amounts; cordoned ones go to the dry run)
    h = Harness(filters=("NodeUnschedulable", "NodeResourcesFit")).add(pdb(FOO, allowed=allowed))
    for i, (cap, room, cordoned) in enumerate(nodes):
        raw = knode(f"node{i}", {**cap, "pods": str(room)})
        raw["spec"] = {"unschedulable": cordoned}
        h.add(raw)
    for i, (n, prio, req) in enumerate(pods):
        h.add(kpod(f"p{i}", f"node{n % len(nodes)}", prio * 100, req, labels=FOO if i in protected else {}))
    cycle = h.cycle(kpod("p", priority=HIGH, req=want))
    _, statuses = h.scheduler.dry_run(cycle)
    by_amounts, rejected = h.plugin.find_candidates(cycle, statuses, h.scheduler.dry_runner)
    single, rejected_single = h.plugin.find_candidates(cycle, statuses, _OneAtATime(h))
    assert [(c.node, [p.key for p in c.victims], c.pdb_violations) for c in by_amounts] == [
        (c.node, [p.key for p in c.victims], c.pdb_violations) for c in single
    ]
    assert rejected == rejected_single
    assert len(h.state.pods) == len(pods)


def test_nodes_only_the_resource_fit_rejected_are_judged_without_a_dry_run() -> None:
    h = Harness(filters=("NodeUnschedulable", "NodeResourcesFit")).add(
        knode("node0", {"cpu": "1", "memory": "1Gi"}), kpod("low", "node0", LOW, {"cpu": "1"})
    )
    lifted: list[str] = []
    lift = h.state.lift
    h.state.lift = lambda key: lifted.append(key) or lift(key)  # type: ignore[method-assign]
    cycle = h.cycle(kpod("p", priority=HIGH, req={"cpu": "1"}))
    _, statuses = h.scheduler.dry_run(cycle)
    found, _ = h.plugin.find_candidates(cycle, statuses, h.scheduler.dry_runner)
    assert [(c.node, [p.key for p in c.victims]) for c in found] == [("node0", ["default/low"])]
    assert lifted == []
    found, _ = h.plugin.find_candidates(cycle, statuses, _OneAtATime(h))
    assert lifted == ["default/low", "default/low"]


APP_A, APP_B = {"app": "a"}, {"app": "b"}
GCE_DISK = {"name": "disk", "gcePersistentDisk": {"pdName": "foo"}}
RWOP_CLAIM = {"name": "data", "persistentVolumeClaim": {"claimName": "rwop"}}


def _term(labels: dict[str, str], key: str) -> dict[str, Any]:
    return {"labelSelector": {"matchLabels": labels}, "topologyKey": key}


def _shaped(shape: str, labels: dict[str, str]) -> dict[str, Any]:
    """A pod spec's extras by shape: anti-affinity and spread over pods with these labels, required
    affinity to app=a (per node or per zone), a disk or an RWOP claim."""
    if shape == "anti":
        return {"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            _term(labels, "hostname")]}}}  # fmt: skip
    if shape == "spread":
        return {"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable":
            "DoNotSchedule", "labelSelector": {"matchLabels": labels}}]}  # fmt: skip
    if shape in ("affinity", "zone-affinity"):
        key = "hostname" if shape == "affinity" else "zone"
        return {"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            _term(APP_A, key)]}}}  # fmt: skip
    if shape == "disk":
        return {"volumes": [GCE_DISK]}
    if shape == "rwop":
        return {"volumes": [RWOP_CLAIM]}
    return {}


SHAPES = ["", "anti", "spread", "affinity", "zone-affinity", "disk", "rwop"]


@settings(max_examples=200, deadline=None)
@given(
    nodes=st.lists(st.tuples(st.sampled_from([MEDIUM, LARGE, VERY_LARGE]), st.integers(0, 2)), min_size=1, max_size=5),
    pods=st.lists(
        st.tuples(
            st.integers(0, 4),
            st.integers(0, 3),
            st.sampled_from([SMALL, MEDIUM]),
            st.sampled_from([APP_A, APP_B]),
            st.sampled_from(["", "", "anti", "spread", "disk", "rwop"]),
        ),
        max_size=12,
    ),
    protected=st.sets(st.integers(0, 11), max_size=3),
    shape=st.sampled_from(SHAPES),
    target=st.sampled_from([APP_A, APP_B]),
    want=st.sampled_from([SMALL, MEDIUM, LARGE]),
)
# the one app=a pod is the victim the arithmetic would pick, and the pod's required affinity needs it
@example(nodes=[(MEDIUM, 0)], pods=[(0, 0, SMALL, APP_A, "")], protected=set(), shape="affinity", target=APP_B,
         want=MEDIUM)  # fmt: skip
def test_dry_run_by_amounts_with_the_whole_default_profile(
    nodes: list[tuple[dict[str, str], int]],
    pods: list[tuple[int, int, dict[str, str], dict[str, str], str]],
    protected: set[int],
    shape: str,
    target: dict[str, str],
    want: dict[str, str],
) -> None:
    # the oracle: the dry run proper, one node at a time, with every filter of the default profile
    # (spread, inter-pod affinity and volume restrictions read other nodes); the arithmetic applies
    # only where the filters are removal-safe for the pod
    h = Harness(filters=None).add(
        pdb(FOO, allowed=0),
        pv("pv-rwop", "1Gi", cls="", modes=("ReadWriteOncePod",), phase="Bound", claim="default/rwop"),
        pvc("rwop", "1Gi", cls="", modes=("ReadWriteOncePod",), volume="pv-rwop", bound=True),
    )
    for i, (cap, zone) in enumerate(nodes):
        h.add(knode(f"node{i}/z{zone}", cap))
    for i, (n, prio, req, labels, extra) in enumerate(pods):
        mine = labels | (FOO if i in protected else {})
        spec = _shaped(extra, labels)
        h.add(kpod(f"p{i}", f"node{n % len(nodes)}", prio * 100, req, labels=mine, **spec))
    pod = kpod("p", priority=HIGH, req=want, labels=target, **_shaped(shape, target))
    cycle = h.cycle(pod)
    assert h.scheduler.dry_runner.removal_safe(cycle) is ("affinity" not in shape)
    _, statuses = h.scheduler.dry_run(cycle)
    by_amounts, rejected = h.plugin.find_candidates(cycle, statuses, h.scheduler.dry_runner)
    single, rejected_single = h.plugin.find_candidates(cycle, statuses, _OneAtATime(h))
    assert [(c.node, [p.key for p in c.victims], c.pdb_violations) for c in by_amounts] == [
        (c.node, [p.key for p in c.victims], c.pdb_violations) for c in single
    ]
    assert rejected == rejected_single
    assert len(h.state.pods) == len(pods)


# NodeVolumeLimits as kube 1.36: the claim's volume is attached to n1 (a VolumeAttachment) and used by the
# low-priority pod, at the limit of 1. With the pod there the preemptor brings no new volume and passes; with
# it gone the volume is new and the attachment counts too (2 > 1): kube's dry run finds no victims there, so
# berth may not take the node as freed by the amounts alone.
def test_a_volume_limit_that_removal_breaks_is_dry_run_properly() -> None:
    ebs = "ebs.csi.aws.com"
    h = Harness(filters=("NodeResourcesFit", "NodeVolumeLimits")).add(
        knode("n1", LARGE),
        csi_node("n1", **{ebs: 1}),
        pv("pv-x", "1Gi", cls="", phase="Bound", claim="default/x", spec={"csi": {"driver": ebs, "volumeHandle": "x"}}),
        pvc("x", "1Gi", cls="", volume="pv-x", bound=True),
        volume_attachment("va-x", "n1", ebs, "pv-x"),
    )
    claim = [{"name": "d", "persistentVolumeClaim": {"claimName": "x"}}]
    h.add(kpod("low", "n1", LOW, LARGE, volumes=claim))
    cycle = h.cycle(kpod("p", priority=HIGH, req=LARGE, volumes=claim))
    assert not h.scheduler.dry_runner.removal_safe(cycle)
    _, statuses = h.scheduler.dry_run(cycle)
    assert statuses.get("n1").plugin == "NodeResourcesFit"
    found, rejected = h.plugin.find_candidates(cycle, statuses, h.scheduler.dry_runner)
    assert found == [] and list(rejected) == ["n1"]
    assert h.plugin.find_candidates(cycle, statuses, _OneAtATime(h)) == (found, rejected)


TAINT = {"key": "dedicated", "value": "x", "effect": "NoSchedule"}


@settings(max_examples=300, deadline=None)
@given(
    nodes=st.lists(st.tuples(st.integers(0, 2), st.sampled_from([False, False, False, True])), min_size=1, max_size=6),
    pods=st.lists(
        st.tuples(
            st.integers(0, 5), st.sampled_from([APP_A, APP_B]), st.sampled_from(["", "", "anti", "disk", "rwop"])
        ),
        max_size=14,
    ),
    shape=st.sampled_from(SHAPES),
    target=st.sampled_from([APP_A, APP_B]),
    spread=st.tuples(st.integers(1, 4), st.sampled_from(["Honor", "Ignore"]), st.sampled_from(["Honor", "Ignore"])),
    tolerates=st.booleans(),
    zone=st.sampled_from([None, None, None, "z0"]),
    removed=st.lists(st.integers(0, 13), min_size=1, max_size=6),
    on=st.integers(0, 5),
)
# the one app=a pod leaves, and the pod's required affinity needs it: not removal-safe
@example(nodes=[(0, False)], pods=[(0, APP_A, "")], shape="affinity", target=APP_B, spread=(1, "Honor", "Ignore"),
         tolerates=False, zone=None, removed=[0], on=0)  # fmt: skip
def test_removal_safe_filters_keep_passing_a_node_as_its_pods_leave(
    nodes: list[tuple[int, bool]],
    pods: list[tuple[int, dict[str, str], str]],
    shape: str,
    target: dict[str, str],
    spread: tuple[int, str, str],
    tolerates: bool,
    zone: str | None,
    removed: list[int],
    on: int,
) -> None:
    # the contract itself (framework.md): where dry_run.removal_safe(cycle), or removal_safe(cycle,
    # the node's pods), a node that every filter but NodeResourcesFit passed still passes with any of
    # its pods gone; spreads with minDomains and both inclusion policies over tainted nodes and a
    # node selector
    h = Harness(filters=None).add(
        pv("pv-rwop", "1Gi", cls="", modes=("ReadWriteOncePod",), phase="Bound", claim="default/rwop"),
        pvc("rwop", "1Gi", cls="", modes=("ReadWriteOncePod",), volume="pv-rwop", bound=True),
    )
    for i, (z, tainted) in enumerate(nodes):
        raw = knode(f"node{i}/z{z}", {"cpu": "1", "memory": "1000"})
        if tainted:
            raw["spec"] = {"taints": [TAINT]}
        h.add(raw)
    for i, (n, labels, extra) in enumerate(pods):
        h.add(kpod(f"p{i}", f"node{n % len(nodes)}", LOW, SMALL, labels=labels, **_shaped(extra, labels)))
    spec = _shaped(shape, target)
    if shape == "spread":
        min_domains, affinity_policy, taints_policy = spread
        spec["topologySpreadConstraints"][0] |= {
            "minDomains": min_domains, "nodeAffinityPolicy": affinity_policy, "nodeTaintsPolicy": taints_policy
        }  # fmt: skip
    if tolerates:
        spec["tolerations"] = [{"key": "dedicated", "operator": "Exists"}]
    if zone is not None:
        spec["nodeSelector"] = {"zone": zone}
    cycle = h.cycle(kpod("p", priority=HIGH, req=SMALL, labels=target, **spec))
    node = f"node{on % len(nodes)}"
    mine = [k for k, p in h.state.pods.items() if p.node_name == node]
    if not h.scheduler.dry_runner.removal_safe(cycle, [h.state.pods[k] for k in mine]):
        return
    feasible, statuses = h.scheduler.dry_run(cycle)
    slot = h.state.nodes.slot[node]
    passed = feasible[slot] or statuses.only("NodeResourcesFit")[slot]
    gone = [h.state.lift(mine[i % len(mine)]) for i in dict.fromkeys(removed)] if mine else []
    after_feasible, after = h.scheduler.dry_run(cycle)
    if passed:
        assert after_feasible[slot] or after.only("NodeResourcesFit")[slot]
    # and each UnschedulableAndUnresolvable failure stays, with its reason
    unresolvable = {(p, f.reason) for p, hits in statuses.failing(slot) for f in hits if f.code is Code.UNRESOLVABLE}
    assert unresolvable <= {(p, f.reason) for p, hits in after.failing(slot) for f in hits}
    for p in gone:
        if p is not None:
            h.state.put_back(p)


class _Reader:
    """A filter marked as reading other nodes, without removal_safe."""

    reads_other_nodes = True


def test_a_filter_reading_other_nodes_without_removal_safe_counts_as_unsafe() -> None:
    h = Harness(filters=None)
    dry_run = h.scheduler.dry_runner
    assert {type(p).__name__ for p in dry_run.readers} == {
        "PodTopologySpread",
        "InterPodAffinity",
        "VolumeRestrictions",
    }
    cycle = h.cycle(kpod("p"))
    assert dry_run.removal_safe(cycle)
    assert not dataclasses.replace(dry_run, readers=(*dry_run.readers, _Reader())).removal_safe(cycle)


FOO_EXISTS = {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}
# (upstream case name, filters, preemptor, pods, node names, nominated node, victims)
# Not carried over: TestPreempt's four scheduler-extender cases (berth calls no extenders; it is one).
PREEMPT: list[tuple[str, tuple[str, ...], dict[str, Any], list[dict[str, Any]], list[str], str | None, list[str]]] = [
    (
        "basic preemption logic",
        ("NodeResourcesFit",),
        kpod("p", priority=HIGH, req=VERY_LARGE, preemptionPolicy="PreemptLowerPriority"),
        [
            kpod("p1.1", "node1", LOW, SMALL),
            kpod("p1.2", "node1", LOW, SMALL),
            kpod("p2.1", "node2", HIGH, LARGE),
            kpod("p3.1", "node3", MID, MEDIUM),
        ],
        ["node1", "node2", "node3"],
        "node1",
        ["p1.1", "p1.2"],
    ),
    (
        "preemption for topology spread constraints",
        ("PodTopologySpread",),
        kpod(
            "p",
            priority=HIGH,
            labels={"foo": ""},
            topologySpreadConstraints=[
                {"maxSkew": 1, "topologyKey": k, "whenUnsatisfiable": "DoNotSchedule", "labelSelector": FOO_EXISTS}
                for k in ("zone", "hostname")
            ],
        ),
        [
            kpod("p-a1", "node-a", HIGH, labels={"foo": ""}),
            kpod("p-a2", "node-a", HIGH, labels={"foo": ""}),
            kpod("p-b1", "node-b", LOW, labels={"foo": ""}),
            kpod("p-x1", "node-x", HIGH, labels={"foo": ""}),
            kpod("p-x2", "node-x", HIGH, labels={"foo": ""}),
        ],
        ["node-a/zone1", "node-b/zone1", "node-x/zone2"],
        "node-b",
        ["p-b1"],
    ),
    (
        "no preempting in pod",
        ("NodeResourcesFit",),
        kpod("p", priority=HIGH, req=VERY_LARGE, preemptionPolicy="Never"),
        [
            kpod("p1.1", "node1", LOW, SMALL),
            kpod("p1.2", "node1", LOW, SMALL),
            kpod("p2.1", "node2", HIGH, LARGE),
            kpod("p3.1", "node3", MID, MEDIUM),
        ],
        ["node1", "node2", "node3"],
        None,
        [],
    ),
    (
        "PreemptionPolicy is nil",
        ("NodeResourcesFit",),
        kpod("p", priority=HIGH, req=VERY_LARGE),
        [
            kpod("p1.1", "node1", LOW, SMALL),
            kpod("p1.2", "node1", LOW, SMALL),
            kpod("p2.1", "node2", HIGH, LARGE),
            kpod("p3.1", "node3", MID, MEDIUM),
        ],
        ["node1", "node2", "node3"],
        "node1",
        ["p1.1", "p1.2"],
    ),
]


@pytest.mark.parametrize(
    ("filters", "pod", "pods", "nodes", "nominated", "victims"), [c[1:] for c in PREEMPT], ids=[c[0] for c in PREEMPT]
)
def test_preempt(
    filters: tuple[str, ...],
    pod: dict[str, Any],
    pods: list[dict[str, Any]],
    nodes: list[str],
    nominated: str | None,
    victims: list[str],
) -> None:
    # upstream: TestPreempt (each case by its name); every node reported Unschedulable, capacity veryLargeRes
    h = Harness(filters).add(*(knode(n, VERY_LARGE) for n in nodes), *pods)
    got = h.plugin.post_filter(h.cycle(pod), h.every_node(), h.scheduler.dry_runner)
    assert (got.nominated_node or None) == nominated
    assert sorted(v.split("/")[-1] for v in got.victims) == victims


@settings(max_examples=80, deadline=None)
@given(
    pods=st.lists(
        st.tuples(st.integers(0, 3), st.sampled_from([None, LOW, MID, HIGH]), st.sampled_from(["", "low", "high"])),
        max_size=10,
    ),
    gone=st.sets(st.integers(0, 9), max_size=4),
    preemptor=st.sampled_from([LOW, MID, HIGH]),
    low_value=st.sampled_from([NEG, MID, VERY_HIGH]),
    default=st.booleans(),
)
def test_with_no_lower_priority_pod_anywhere_no_node_is_dry_run(
    pods: list[tuple[int, int | None, str]], gone: set[int], preemptor: int, low_value: int, default: bool
) -> None:
    # the shortcut (PreemptionStore.lowest) against kube's dry run of every potential node
    h = Harness().add(*(knode(f"node{i}", VERY_LARGE) for i in range(4)))
    h.add(priority_class("low", low_value, default=default), priority_class("high", HIGH))
    for i, (n, prio, cls) in enumerate(pods):
        h.add(kpod(f"p{i}", f"node{n}", prio, SMALL, **({"priorityClassName": cls} if cls else {})))
    for i in gone & set(range(len(pods))):
        h.state.lift(f"default/p{i}")
    placed = [p for on in h.plugin.store.pods_on.values() for p in on.values()]
    want = min((h.plugin.state.priority(p) for p in placed), default=None)
    assert h.plugin.store.lowest(h.plugin.state.priority) == want
    cycle = h.cycle(kpod("p", priority=preemptor, req=LARGE))
    assert h.plugin.no_lower_priority(cycle.pod) is (want is None or want >= preemptor)
    got = h.plugin.post_filter(cycle, h.every_node(), h.scheduler.dry_runner)
    h.plugin.no_lower_priority = lambda pod: False  # type: ignore[method-assign]  # every node dry-run
    assert got == h.plugin.post_filter(cycle, h.every_node(), h.scheduler.dry_runner)
