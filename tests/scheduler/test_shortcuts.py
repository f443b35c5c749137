"""The scheduling cycle's shortcuts, as kube 1.36 takes them (issue 37): a PreFilter's node set
(findNodesThatFitPod, RunPreFilterPlugins), plugins skipped at PreFilter staying skipped when the
filters run again with nominated pods (RunFilterPluginsWithNominatedPods, addGENominatedPods), the
nominated node first (evaluateNominatedNode), and lower-priority nominations cleared by a
preemption (prepareCandidateAsync, getLowerPriorityNominatedPods)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from berth.core.api.core.model import Pod
from berth.core.api.kinds import convert
from berth.core.cache.state import ClusterState
from berth.core.config.kubeschedulerconfig import parse_config
from berth.core.framework.cycle import Cycle
from berth.core.framework.runtime.profile import Profile
from berth.core.framework.status import OK, SKIP, Code, Failure, NodeStatus, PreFilterResult, Status
from berth.core.scheduler.results import NodeResult
from berth.core.scheduler.schedule_one import Scheduler
from tests.builders import HOST, NOW, cluster, node, pod
from tests.plugins.defaultpreemption.helpers import HIGH, LOW, MID, Harness, knode, kpod

SP = "TestSchedulerSchedulePod/"


class FakePreFilter:
    """tf.NewFakePreFilterPlugin: the same status (or node set) every call; calls counted."""

    def __init__(self, name: str, result: Status = OK, later: Status | None = None) -> None:
        self.name = name
        self.result = result
        self.later = later  # what calls after the first return (to see a re-run)
        self.calls = 0

    def pre_filter(self, cycle: Cycle) -> Status:
        self.calls += 1
        return self.result if self.calls == 1 or self.later is None else self.later


class FakeFilter:
    """tf.NewFakeFilterPlugin: the named nodes fail with their code."""

    def __init__(self, name: str, codes: dict[str, Code]) -> None:
        self.name = name
        self.codes = codes

    def filter(self, cycle: Cycle) -> list[Failure]:
        nodes = cycle.state.nodes
        out = []
        for name, code in self.codes.items():
            mask = np.zeros(len(nodes.valid), dtype=bool)
            mask[nodes.slot[name]] = True
            out.append(Failure(mask, f"injecting failure for pod {cycle.pod.name}", code))
        return out


def nodes_set(*names: str) -> PreFilterResult:
    return PreFilterResult(node_names=frozenset(names))


def fake_scheduler(state: ClusterState, pre: list[Any], filters: list[Any]) -> Scheduler:
    return Scheduler(Profile.of(state, [*pre, *filters], [], pre_filters=pre))


# ---- 1. PreFilter node sets ------------------------------------------------------------------------
NODE_SETS: list[tuple[str, list[Status], dict[str, Code], int, str, str, set[str]]] = [
    # (case, the PreFilters' results, FakeFilter's failures, nodes, want node, want message, rejected by)
    (SP + "test prefilter plugin returning node", [OK, nodes_set("node2"), nodes_set("node1", "node2")], {}, 3,
     "node2", "", set()),
    (SP + "test prefilter plugin returning non-intersecting nodes", [OK, nodes_set("node2"), nodes_set("node1")],
     {}, 3, "", "0/3 nodes are available: node(s) didn't satisfy plugin(s) [FakePreFilter2 FakePreFilter3]"
     " simultaneously.", {"FakePreFilter2", "FakePreFilter3"}),
    (SP + "test prefilter plugin returning empty node set", [OK, nodes_set()], {}, 1, "",
     "0/1 nodes are available: node(s) didn't satisfy plugin FakePreFilter2.", {"FakePreFilter2"}),
    (SP + "test some nodes are filtered out by prefilter plugin and other are filtered out by filter plugin",
     [nodes_set("node2")], {"node2": Code.UNSCHEDULABLE}, 2, "",
     "0/2 nodes are available: 1 injecting failure for pod test-prefilter, 1 node(s) didn't satisfy plugin(s)"
     " [FakePreFilter1].", {"FakePreFilter1", "FakeFilter"}),
    # berth: a node left out counts once, with kube's status, whatever the filters say there
    ("left-out nodes count only as left out", [nodes_set("node2")],
     {"node1": Code.UNSCHEDULABLE, "node2": Code.UNSCHEDULABLE}, 3, "",
     "0/3 nodes are available: 1 injecting failure for pod test-prefilter, 2 node(s) didn't satisfy plugin(s)"
     " [FakePreFilter1].", {"FakePreFilter1", "FakeFilter"}),
    ("names of unknown nodes are ignored", [nodes_set("node2", "node9")], {}, 3, "node2", "", set()),
]  # fmt: skip


@pytest.mark.parametrize(
    ("results", "failing", "n", "want_node", "want_message", "rejected_by"),
    [c[1:] for c in NODE_SETS],
    ids=[c[0] for c in NODE_SETS],
)
def test_a_pre_filters_node_set_is_all_kube_evaluates(
    results: list[Status], failing: dict[str, Code], n: int, want_node: str, want_message: str, rejected_by: set[str]
) -> None:
    state = cluster(*(node(f"node{i + 1}") for i in range(n)))
    pre = [FakePreFilter(f"FakePreFilter{i + 1}", r) for i, r in enumerate(results)]
    outcome = fake_scheduler(state, pre, [FakeFilter("FakeFilter", failing)]).decide(
        convert(pod("test-prefilter")), NOW
    )
    d = outcome.decision
    assert (d.node or "", d.message if d.status != "Scheduled" else "") == (want_node, want_message)
    assert set(outcome.rejected_by) == rejected_by


def test_left_out_nodes_are_unresolvable_and_the_report_still_says_what_filters_found() -> None:
    # upstream: TestSchedulerSchedulePod/"test some nodes are filtered out by prefilter plugin and other are
    # filtered out by filter plugin": the absent nodes' status is UnschedulableAndUnresolvable
    state = cluster(node("node1"), node("node2"), node("node3"))
    pre = [FakePreFilter("FakePreFilter1", nodes_set("node2"))]
    outcome = fake_scheduler(state, pre, [FakeFilter("FakeFilter", {"node1": Code.UNSCHEDULABLE})]).decide(
        convert(pod("p")), NOW
    )
    assert outcome.decision.node == "node2"
    left_out = "node(s) didn't satisfy plugin(s) [FakePreFilter1]"
    assert outcome.statuses is not None
    assert outcome.statuses.get("node1") == NodeStatus("", Code.UNRESOLVABLE, (left_out,))
    assert outcome.statuses.get("node2") is None
    # kube did not evaluate node1 and node3; berth's report lists its own findings after kube's status
    assert outcome.decision.nodes["node1"].reasons == [left_out, "injecting failure for pod p"]
    assert outcome.decision.nodes["node3"].reasons == [left_out]


def test_an_empty_node_set_stops_the_pre_filters_that_follow() -> None:
    # upstream: TestRunPreFilterPlugins/"all nodes are filtered out by prefilter result, but other plugins
    # aren't executed because we consider all nodes are filtered out by UnschedulableAndUnresolvable"
    state = cluster(node("node1"))
    first, second = FakePreFilter("reject-all-nodes", nodes_set()), FakePreFilter("skip", SKIP)
    outcome = fake_scheduler(state, [first, second], []).decide(convert(pod("p")), NOW)
    assert outcome.pre_filter_rejected and second.calls == 0
    assert outcome.statuses is not None and outcome.statuses.everywhere is not None
    assert outcome.statuses.everywhere.code is Code.UNRESOLVABLE


def daemon_pod(name: str, target: str, cpu: str = "100m", priority: int | None = None) -> dict[str, Any]:
    """A DaemonSet's pod as its controller writes it: required node affinity on metadata.name."""
    term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [target]}]}
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}}
    extra: dict[str, Any] = {} if priority is None else {"priority": priority}
    return pod(name, cpu=cpu, affinity=affinity, **extra)


@pytest.mark.parametrize(
    ("target", "want"),
    [
        ("n2", "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) didn't satisfy plugin(s) [NodeAffinity]."),
        # a node set naming no node that exists leaves every node out
        ("gone", "0/3 nodes are available: 3 node(s) didn't satisfy plugin(s) [NodeAffinity]."),
    ],
)
def test_node_affinity_on_metadata_name_leaves_the_other_nodes_out(target: str, want: str) -> None:
    state = cluster(
        node("n1", cpu="1", taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}]),
        node("n2", cpu="1"),
        node("n3", cpu="1", unschedulable=True),
    )
    outcome = Scheduler(parse_config(None).build(state)).decide(convert(daemon_pod("ds", target, cpu="2")), NOW)
    assert outcome.decision.message.split(" no new claims")[0].split(" preemption:")[0] == want
    assert "NodeAffinity" in outcome.rejected_by
    # the left-out nodes are unresolvable: preemption tries no node there
    assert outcome.statuses is not None
    unresolvable = {n for n, s in outcome.statuses.items() if s.code is Code.UNRESOLVABLE}
    assert unresolvable >= {"n1", "n3"}


def test_the_node_set_changes_no_decision_without_incremental_answers() -> None:
    state = cluster(node("n1"), node("n2"), node("n3"))
    p = convert(daemon_pod("ds", "n3"))
    a = Scheduler(parse_config(None).build(state)).decide(p, NOW).decision
    b = Scheduler(parse_config(None).build(state), incremental=False).decide(p, NOW).decision
    assert a == b and a.node == "n3"


# ---- 2. PreFilter Skip holds through the filters with nominated pods ---------------------------------
def anti(app: str) -> dict[str, Any]:
    term = {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": HOST}
    return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}


def nominee(name: str, node_name: str, priority: int, **spec: Any) -> dict[str, Any]:
    status = {"phase": "Pending", "nominatedNodeName": node_name}
    return pod(name, priority=priority, status=status, **spec)


@pytest.mark.parametrize(
    ("bound_anti", "want_n1"),
    [
        # no bound pod's anti-affinity matches the pod: InterPodAffinity's PreFilter skips, and its
        # Filter does not run with the nominated pod placed either (AddPod is skipped too)
        (False, NodeResult(True, [])),
        # one does: the Filter runs, and with the nominated pod placed on n1 its anti-affinity counts
        (True, NodeResult(False, ["node(s) didn't satisfy existing pods anti-affinity rules"])),
    ],
)
def test_a_nominated_pods_anti_affinity_counts_only_where_inter_pod_affinity_did_not_skip(
    bound_anti: bool, want_n1: NodeResult
) -> None:
    # upstream: TestRunPreFilterExtensionAddPod/"one AddPod() is skipped"; RunFilterPluginsWithNominatedPods
    # runs RunFilterPlugins, which leaves out the plugins in SkipFilterPlugins
    raws = [node("n1"), node("n2"), node("n3"), nominee("nom", "n1", HIGH, affinity=anti("web"))]
    if bound_anti:
        raws.append(pod("guard", node_name="n3", affinity=anti("web")))
    state = cluster(*raws)
    p = convert(pod("p", priority=LOW, metadata={"labels": {"app": "web"}}))
    d = Scheduler(parse_config(None).build(state)).decide(p, NOW).decision
    assert d.nodes["n1"].feasible == want_n1.feasible and d.nodes["n1"].reasons == want_n1.reasons


def test_a_plugin_skipped_at_pre_filter_is_not_run_again_with_nominated_pods() -> None:
    # upstream: TestRunPreFilterExtensionAddPod/"one AddPod() is skipped": it would fail if run
    state = cluster(node("n1"), nominee("nom", "n1", HIGH))
    skipped = FakePreFilter("skipped", SKIP, later=Status(Code.ERROR, "run again"))
    kept = FakePreFilter("success1", OK)
    outcome = fake_scheduler(state, [kept, skipped], []).decide(convert(pod("p", priority=LOW)), NOW)
    assert outcome.decision.status == "Scheduled"
    assert (skipped.calls, kept.calls) == (1, 2)  # success1 runs again with the nominated pod (its AddPod)


def rwop(name: str) -> dict[str, Any]:
    meta = {"name": name, "namespace": "default"}
    spec = {"accessModes": ["ReadWriteOncePod"], "resources": {"requests": {"storage": "1Gi"}}, "volumeName": "pv"}
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta, "spec": spec,
            "status": {"phase": "Bound"}}  # fmt: skip


def test_a_nominated_pods_read_write_once_pod_claim_is_not_seen_where_volume_restrictions_skipped() -> None:
    # VolumeRestrictions' PreFilter skips when no pod on a node uses the pod's ReadWriteOncePod claim:
    # the nominated pod that uses it is not counted (kube's AddPod is skipped with the Filter)
    profile = {"plugins": {"multiPoint": {"disabled": [{"name": "*"}], "enabled": [{"name": "VolumeRestrictions"}]}}}
    state = cluster(node("n1"), rwop("c"), nominee("nom", "n1", HIGH, claims=("c",)))
    p = convert(pod("p", claims=("c",), priority=LOW))
    d = Scheduler(parse_config({"profiles": [profile]}).build(state)).decide(p, NOW).decision
    assert d.status == "Scheduled"


# ---- 3. The nominated node first -----------------------------------------------------------------
EN = "TestEvaluateNominatedNode/"
PN = "TestPreferNominatedNodeFilterCallCounts/"
NOMINATED_FIRST: list[tuple[str, str, dict[str, str], bool, str]] = [
    # (case, status.nominatedNodeName, other pods there, evaluate (the extender), want node)
    (EN + "When NNN is present in both snapshot and placement, returns node", "n1", {}, False, "n1"),
    (EN + "When NNN is not present in snapshot, returns error (and the cycle goes on)", "n9", {}, False, "n2"),
    (PN + "pod without the nominated pod, filter is called for each node", "", {}, False, "n2"),
    (PN + "nominated pod cannot pass the filter, filter is called for each node", "n1", {"big": "n1"}, False, "n2"),
    # a higher-priority pod nominated there takes the room: the node fails with it placed
    ("the node fails with a higher-priority nominated pod placed", "n1", {"other": "n1"}, False, "n2"),
    ("the extender's evaluation scores every node", "n1", {}, True, "n2"),
]


@pytest.mark.parametrize(
    ("nnn", "others", "evaluate", "want"), [c[1:] for c in NOMINATED_FIRST], ids=[c[0] for c in NOMINATED_FIRST]
)
def test_the_nominated_node_is_taken_without_scoring_where_it_fits(
    nnn: str, others: dict[str, str], evaluate: bool, want: str
) -> None:
    raws = [node("n1", cpu="2"), node("n2", cpu="8"), pod("half", cpu="1", node_name="n1")]
    for name, where in others.items():
        raws.append(pod(name, cpu="1", node_name=where) if name == "big" else nominee(name, where, HIGH, cpu="1"))
    state = cluster(*raws)
    status = {"phase": "Pending", "nominatedNodeName": nnn} if nnn else {"phase": "Pending"}
    p: Pod = convert(pod("p", cpu="500m", priority=MID, status=status))
    scheduler = Scheduler(parse_config(None).build(state))
    outcome = scheduler.evaluate(p, NOW) if evaluate else scheduler.decide(p, NOW)
    best = max(
        (n for n, r in outcome.decision.nodes.items() if r.feasible), key=lambda n: outcome.decision.nodes[n].total or 0
    )
    assert best == want if evaluate else outcome.decision.node == want
    if want == nnn and not evaluate:
        assert outcome.decision.nodes == {"n1": NodeResult(True, [])}  # looked at alone, not scored


def test_a_cleared_nomination_is_not_tried_first() -> None:
    state = cluster(node("n1", cpu="2"), node("n2", cpu="8"))
    p: Pod = convert(pod("p", cpu="500m", status={"phase": "Pending", "nominatedNodeName": "n1"}))
    state.apply(p)
    scheduler = Scheduler(parse_config(None).build(state))
    assert scheduler.decide(p, NOW).decision.node == "n1"
    scheduler.nominator.clear(p.key)  # kube's PostFilter found no node: nominatedNodeName cleared
    assert scheduler.nominator.nominated_node(p) == ""
    assert scheduler.decide(p, NOW).decision.node == "n2"


# ---- 4. Nominations cleared by a preemption -------------------------------------------------------
FULL = {"cpu": "1", "memory": "1Gi"}


def preempting(deleting: bool = False) -> Harness:
    """n1 with two low-priority pods; a preemptor (MID) evicts one and is nominated there, then
    one of higher priority (HIGH) evicts the other."""
    meta = {"deletionTimestamp": "2026-11-01T10:00:00Z"} if deleting else {}
    return Harness().add(
        knode("n1", FULL),
        kpod("v1", "n1", LOW, {"cpu": "600m"}, start=1),
        kpod("v2", "n1", LOW, {"cpu": "300m"}, start=2, metadata=meta),
    )


PC = "TestPrepareCandidate/"


@pytest.mark.parametrize(
    ("deleting", "want_held"),
    [
        # upstream: TestPrepareCandidate/"one victim without condition": the lower-priority nominations on
        # the node are cleared (getLowerPriorityNominatedPods, clearNominatedNodeName)
        (False, {"default/high": "n1"}),
        # upstream: TestPrepareCandidate/"one victim, but victim is already being deleted": async preemption
        # returns before it clears anything
        (True, {"default/mid": "n1", "default/high": "n1"}),
    ],
    ids=[PC + "one victim without condition", PC + "one victim, but victim is already being deleted"],
)
def test_a_preemption_clears_lower_priority_nominations_on_its_node(deleting: bool, want_held: dict[str, str]) -> None:
    h = preempting(deleting)
    mid = convert(kpod("mid", priority=MID, req={"cpu": "600m"}))
    high = convert(kpod("high", priority=HIGH, req={"cpu": "800m"}))
    first, second = h.scheduler.run([mid, high], NOW)
    assert (first.nominated_node, first.victims) == ("n1", ["default/v1"])
    assert (second.nominated_node, second.victims) == ("n1", ["default/v2"])
    assert h.scheduler.nominator.held() == want_held


@pytest.mark.parametrize(
    ("priority", "node_name", "cleared"),
    [
        (LOW, "n1", ["default/waiting"]),  # lower priority, same node
        (MID, "n1", []),  # equal priority stays (getLowerPriorityNominatedPods: strictly lower)
        (LOW, "n2", []),  # another node
    ],
)
def test_get_lower_priority_nominated_pods(priority: int, node_name: str, cleared: list[str]) -> None:
    h = Harness().add(knode("n1", FULL), knode("n2", FULL), kpod("v", "n1", LOW, {"cpu": "100m"}))
    h.add(kpod("waiting", priority=priority, status={"nominatedNodeName": node_name}))
    preemptor = convert(kpod("p", priority=MID))
    assert h.scheduler.clear_nominations(preemptor, "n1", ["default/v"]) == cleared
    waiting: Pod = h.state.pods["default/waiting"]
    assert h.scheduler.nominator.nominated_node(waiting) == ("" if cleared else node_name)
    # a later update of the pod with the same stale nomination does not bring it back
    h.add(kpod("waiting", priority=priority, status={"nominatedNodeName": node_name}))
    seen = h.scheduler.nominator.for_pod(convert(kpod("x", priority=LOW)))
    assert (node_name in seen) == (not cleared)


@pytest.mark.parametrize("read", [{"n1"}, {"n2"}, {"n1", "n2"}, {"n3"}])
def test_a_dry_run_tries_nominated_pods_on_the_nodes_it_reads_only(read: set[str]) -> None:
    """A dry run's answer on the nodes read is the answer of a dry run over every node; elsewhere the
    pods nominated there are left out (each trial decides its own node's answer only)."""
    raws = [node("n1", cpu="2"), node("n2", cpu="2"), node("n3", cpu="2")]
    raws += [nominee("nom1", "n1", HIGH, cpu="1500m"), nominee("nom2", "n2", HIGH, cpu="1500m")]
    state = cluster(*raws)
    scheduler = Scheduler(parse_config(None).build(state))
    for key, name in (("default/nom1", "n1"), ("default/nom2", "n2")):
        scheduler.nominator.hold(state.pods[key], name)
    cycle = Cycle(convert(pod("p", priority=LOW, cpu="1")), state, NOW)
    every_feasible, every = scheduler.dry_run(cycle)
    feasible, found = scheduler.dry_run(cycle, read)
    slots = state.nodes.slot
    for name in ("n1", "n2", "n3"):
        if name in read:
            assert (feasible[slots[name]], found.get(name)) == (every_feasible[slots[name]], every.get(name))
        else:
            assert feasible[slots[name]] and found.get(name) is None  # the nominated pods not tried here
    assert [every_feasible[slots[n]] for n in ("n1", "n2", "n3")] == [False, False, True]
