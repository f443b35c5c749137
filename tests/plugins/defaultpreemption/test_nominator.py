"""kube's nominator: pods nominated to a node (status.nominatedNodeName) are seen there by the
filters of pods of no higher priority (addGENominatedPods, RunFilterPluginsWithNominatedPods), and
`berth evaluate` decides pods in kube's PrioritySort order."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from berth.core.api.core.model import Pod
from berth.core.api.kinds import convert
from berth.core.framework.cycle import Cycle
from berth.core.plugins.defaultpreemption import candidate_keys
from tests.builders import NOW
from tests.plugins.defaultpreemption.helpers import HIGH, LOW, MID, Harness, knode, kpod, priority_class

FULL = {"cpu": "1", "memory": "1Gi"}
HALF = {"cpu": "600m", "memory": "100Mi"}
SMALL = {"cpu": "300m", "memory": "100Mi"}


def nominated(name: str, node: str, priority: int, req: dict[str, str] | None = None) -> dict[str, Any]:
    return kpod(name, priority=priority, req=req or {}, status={"nominatedNodeName": node})


@pytest.mark.parametrize(
    ("case", "priority", "calls"),
    [
        # upstream: TestFindFitPredicateCallCounts/"nominated pods have lower priority, predicate is called once"
        ("lower", HIGH, 1),
        # upstream: TestFindFitPredicateCallCounts/"nominated pods have higher priority, predicate is called twice"
        ("higher", LOW, 2),
    ],
)
def test_filters_run_again_with_nominated_pods_of_no_lower_priority(case: str, priority: int, calls: int) -> None:
    h = Harness().add(knode("1", FULL), nominated("nominated", "1", MID))
    fit = h.scheduler.profile.filters[0]
    seen: list[str] = []
    real, real_with = fit.filter, fit.filter_with

    def counting(cycle: Cycle) -> Any:
        seen.append("filter")
        return real(cycle)

    def counting_with(cycle: Cycle, slots: Any, extra: Any) -> Any:  # the run with them, by amounts
        seen.append("filter_with")
        return real_with(cycle, slots, extra)

    fit.filter = counting  # type: ignore[method-assign]
    fit.filter_with = counting_with  # type: ignore[method-assign]
    h.scheduler.decide(convert(kpod("1", priority=priority)), NOW)
    assert len(seen) == calls


@pytest.mark.parametrize(
    ("priority", "status", "message"),
    [
        (LOW, "Unschedulable", "0/1 nodes are available: 1 Insufficient cpu."),  # sees the nominated pod placed
        (MID, "Unschedulable", "0/1 nodes are available: 1 Insufficient cpu."),  # equal priority: sees it too
        (HIGH, "Scheduled", ""),  # a higher-priority pod does not
    ],
)
def test_a_nominated_pod_holds_its_node_against_pods_of_no_higher_priority(
    priority: int, status: str, message: str
) -> None:
    h = Harness(args={}).add(knode("n1", FULL), nominated("waiting", "n1", MID, HALF))
    d = h.scheduler.decide(convert(kpod("p", priority=priority, req=HALF)), NOW).decision
    assert (d.status, d.message.split(" preemption:")[0] if status != "Scheduled" else "") == (status, message)


def test_the_nominated_pod_itself_and_bound_pods_are_not_nominations() -> None:
    h = Harness().add(knode("n1", FULL), nominated("waiting", "n1", MID, HALF))
    me: Pod = h.state.pods["default/waiting"]
    assert h.scheduler.nominator.for_pod(me) == {}
    h.add(kpod("waiting", "n1", MID, HALF, status={"nominatedNodeName": "n1"}))  # bound now
    assert h.scheduler.nominator.for_pod(convert(kpod("p", priority=LOW))) == {}


def test_nodes_with_nominated_pods_are_dry_run_not_judged_by_amounts() -> None:
    # the nominated pod takes n1's room for a pod of lower priority: preempting there would not help
    h = Harness().add(
        knode("n1", FULL),
        knode("n2", FULL),
        kpod("low1", "n1", LOW, HALF),
        kpod("low2", "n2", LOW, HALF),
        nominated("waiting", "n1", HIGH, HALF),
    )
    d = h.scheduler.decide(convert(kpod("p", priority=MID, req=HALF)), NOW).decision
    assert (d.nominated_node, d.victims) == ("n2", ["default/low2"])


T1, T2 = "2026-11-01T10:00:01Z", "2026-11-01T10:00:02Z"


@pytest.mark.parametrize(
    ("case", "p1", "p2", "p1_first"),
    [
        ("p1.priority less than p2.priority", (LOW, T1), (HIGH, T1), False),
        ("p1.priority greater than p2.priority", (HIGH, T1), (LOW, T1), True),
        ("equal priority. p1 is added to schedulingQ earlier than p2", (HIGH, T1), (HIGH, T2), True),
        ("equal priority. p2 is added to schedulingQ earlier than p1", (HIGH, T2), (HIGH, T1), False),
    ],
)
def test_evaluate_decides_in_priority_sort_order(
    case: str, p1: tuple[int, str], p2: tuple[int, str], p1_first: bool
) -> None:
    # upstream: TestLess/<case> (queuesort PrioritySort; the queue timestamp is creationTimestamp here)
    h = Harness()
    for name, (priority, created) in (("p1", p1), ("p2", p2)):
        h.add(kpod(name, priority=priority, metadata={"creationTimestamp": created}))
    got = [p.name for p in h.scheduler.queue(h.state.pending_pods())]
    assert got == (["p1", "p2"] if p1_first else ["p2", "p1"])


def test_unset_priority_counts_as_zero_in_the_order() -> None:
    h = Harness().add(
        kpod("zero", priority=LOW, metadata={"creationTimestamp": T2}),
        kpod("unset", metadata={"creationTimestamp": T1}),
        kpod("high", priority=HIGH, metadata={"creationTimestamp": T2}),
    )
    assert [p.name for p in h.scheduler.queue(h.state.pending_pods())] == ["high", "unset", "zero"]


def test_the_order_reads_priority_classes_and_the_global_default() -> None:
    h = Harness().add(
        priority_class("batch", -10, default=True),
        priority_class("serving", 1000),
        kpod("plain", metadata={"creationTimestamp": T1}),  # the globalDefault: -10
        kpod("served", priorityClassName="serving", metadata={"creationTimestamp": T2}),
        kpod("zero", priority=0, metadata={"creationTimestamp": T2}),
    )
    assert [p.name for p in h.scheduler.queue(h.state.pending_pods())] == ["served", "zero", "plain"]


def _extras(shape: str, labels: dict[str, str], req: dict[str, str] = HALF) -> dict[str, Any]:
    """A pod spec's extras: a host port, anti-affinity to pods with these labels (per node), a
    toleration, a zone selector, or none."""
    if shape == "port":
        port = {"containerPort": 80, "hostPort": 8080}
        return {"containers": [{"name": "c", "image": "app", "ports": [port], "resources": {"requests": req}}]}
    if shape == "anti":
        term = {"labelSelector": {"matchLabels": labels}, "topologyKey": "hostname"}
        return {"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}}
    if shape == "tolerates":
        return {"tolerations": [{"key": "dedicated", "operator": "Exists"}]}
    if shape == "selector":
        return {"nodeSelector": {"zone": "z0"}}
    return {}


def _decisions(
    fast: bool, nodes: list[Any], placed: list[Any], waiting: list[Any], pending: list[Any], columns: bool = True
) -> list[bytes]:
    h = Harness(filters=KUBE_FILTERS)
    if not columns:
        h.scheduler.nominated_columns = lambda cycle: None  # type: ignore[method-assign]
    if not fast:  # the oracle: every node with nominated pods tried by placing them (kube's addGENominatedPods),
        # every preemption dry run done afresh
        h.scheduler._fit_alone = lambda cycle: None  # type: ignore[method-assign]
        h.plugin._kept = lambda cycle, room, pdbs: None  # type: ignore[method-assign]
        h.plugin._keys = lambda now: lambda c: candidate_keys(c, now, h.state.priority)  # type: ignore[method-assign]
    for i, (cpu, zone, tainted, memory) in enumerate(nodes):
        raw = knode(f"node{i}/z{zone}", {"cpu": cpu, "memory": memory})
        if tainted:
            raw["spec"] = {"taints": [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]}
        h.add(raw)
    for i, (on, priority, shape) in enumerate(placed):
        h.add(kpod(f"placed{i}", f"node{on % len(nodes)}", priority, HALF, labels=APP, **_extras(shape, APP)))
    for i, (on, priority, shape) in enumerate(waiting):
        status = {"nominatedNodeName": f"node{on % len(nodes)}"}
        h.add(kpod(f"waiting{i}", "", priority, HALF, labels=APP, status=status, **_extras(shape, APP)))
    pods = [
        convert(kpod(f"pending{i}", priority=p, req=req, **_extras(s, APP, req)))
        for i, (p, req, s) in enumerate(pending)
    ]
    return [msgspec.json.encode(d) for d in h.scheduler.run(pods, NOW)]


APP = {"app": "a"}
# kube's default profile's filters (berth's adds LoadAwareScheduling, which reads pods wherever NodeMetrics are)
KUBE_FILTERS = (
    "NodeUnschedulable", "TaintToleration", "NodeAffinity", "NodePorts", "NodeResourcesFit", "VolumeRestrictions",
    "NodeVolumeLimits", "VolumeBinding", "VolumeZone", "PodTopologySpread", "InterPodAffinity",
)  # fmt: skip
SHAPES = ["", "", "port", "anti"]  # of the placed and nominated pods
PENDING_SHAPES = ["", "", "tolerates", "selector", "port", "anti"]


@settings(max_examples=150, deadline=None)
@given(
    nodes=st.lists(
        st.tuples(
            st.sampled_from(["1", "2"]),
            st.integers(0, 1),
            st.sampled_from([False, False, True]),
            st.sampled_from(["4Gi", "4Gi", "250Mi"]),  # short of memory too: two node-fit failures
        ),
        min_size=1,
        max_size=5,
    ),
    placed=st.lists(st.tuples(st.integers(0, 4), st.sampled_from([LOW, MID]), st.sampled_from(SHAPES)), max_size=8),
    waiting=st.lists(
        st.tuples(st.integers(0, 4), st.sampled_from([LOW, MID, HIGH]), st.sampled_from(SHAPES)), max_size=5
    ),
    pending=st.lists(
        st.tuples(
            st.sampled_from([LOW, MID, HIGH]), st.sampled_from([SMALL, HALF, FULL]), st.sampled_from(PENDING_SHAPES)
        ),
        min_size=1,
        max_size=6,
    ),
)
# a host port taken by a nominated pod on a node with room: NodePorts reads pods
@example(nodes=[("2", 0, False, "4Gi")], placed=[], waiting=[(0, HIGH, "port")], pending=[(LOW, HALF, "port")])
# a pod placed between two preemptors alike, on a node the first one's dry run judged: judged again
@example(
    nodes=[("1", 0, False, "4Gi"), ("1", 0, False, "4Gi")],
    placed=[(0, LOW, ""), (1, LOW, "")],
    waiting=[],
    pending=[(HIGH, FULL, ""), (MID, SMALL, ""), (HIGH, FULL, "")],
)
# with the nominated pod placed, the node is short of both cpu and memory
@example(nodes=[("1", 0, False, "250Mi")], placed=[(0, LOW, "")], waiting=[(0, HIGH, "")], pending=[(LOW, SMALL, "")])
def test_nominated_pods_by_amounts_decide_as_placing_them(
    nodes: list[Any], placed: list[Any], waiting: list[Any], pending: list[Any]
) -> None:
    # where only the node fit of the filters a pod runs reads pods, a node's nominated pods are tried by
    # adding their requests (Scheduler._by_amounts), and preemption keeps its verdicts by amounts for
    # the next preemptor (Verdicts); every decision, preemption's included, is the same as with the
    # nominated pods placed on the node, every filter run again and every dry run done afresh
    fast = _decisions(True, nodes, placed, waiting, pending)
    assert fast == _decisions(False, nodes, placed, waiting, pending)
    # the nominated amounts taken node by node (where some nominated pod is counted already), not as columns
    assert fast == _decisions(True, nodes, placed, waiting, pending, columns=False)
