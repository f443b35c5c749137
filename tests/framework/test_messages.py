"""kube's FitError message: each node's first failing plugin, reasons counted, sorted and joined as
kube-scheduler does (pkg/scheduler/framework/types.go FitError.Error), and ErrNoNodesAvailable."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from berth.core.api.kinds import convert
from berth.core.cache.nodes import NodeTable
from berth.core.config.kubeschedulerconfig import parse_config
from berth.core.framework.status import NO_NODES_AVAILABLE, Code, Failure, NodeToStatus, fit_error, with_post_filter
from berth.core.plugins.nodeaffinity import REASON as NODE_AFFINITY
from berth.core.plugins.volumebinding import NODE_CONFLICT
from berth.core.scheduler.schedule_one import Scheduler
from tests.builders import HOST, NOW, cluster, node, pod, pv, pvc, storage_class

MASTER_TAINT = "node(s) had untolerated taint(s)"
PRE = "Node(s) failed PreFilter plugin FalsePreFilter"
POST = "Error running PostFilter plugin FailedPostFilter"
F1 = "Node(s) failed Filter plugin FalseFilter-1"
F2 = "Node(s) failed Filter plugin FalseFilter-2"


@pytest.mark.parametrize(
    ("total", "counts", "pre", "post", "want"),
    [
        # upstream: TestFitError_Error/"nodes failed Prefilter plugin"
        (3, {}, PRE, "", f"0/3 nodes are available: {PRE}."),
        # upstream: TestFitError_Error/"nodes failed Prefilter plugin and the preemption also failed"
        (3, {}, PRE, POST, f"0/3 nodes are available: {PRE}. {POST}"),
        # upstream: TestFitError_Error/"nodes failed one Filter plugin with an empty PostFilterMsg"
        (3, {F1: 3}, "", "", f"0/3 nodes are available: 3 {F1}."),
        # upstream: TestFitError_Error/"nodes failed one Filter plugin with a non-empty PostFilterMsg"
        (3, {F1: 3}, "", POST, f"0/3 nodes are available: 3 {F1}. {POST}"),
        # upstream: TestFitError_Error/"nodes failed two Filter plugins with an empty PostFilterMsg"
        (3, {F1: 2, F2: 1}, "", "", f"0/3 nodes are available: 1 {F2}, 2 {F1}."),
        # upstream: TestFitError_Error/"nodes failed two Filter plugins with a non-empty PostFilterMsg"
        (3, {F1: 2, F2: 1}, "", POST, f"0/3 nodes are available: 1 {F2}, 2 {F1}. {POST}"),
        # upstream: TestFitError_Error/"failed to Reserve on node"
        (
            1,
            {"Node failed Reserve plugin Reserve-1": 1},
            "",
            "",
            "0/1 nodes are available: 1 Node failed Reserve plugin Reserve-1.",
        ),
        # sort.Strings on "%d %s": "10 ..." sorts before "9 ..."
        (19, {"b": 9, "a": 10}, "", "", "0/19 nodes are available: 10 a, 9 b."),
    ],
)
def test_fit_error_is_kubes(total: int, counts: dict[str, int], pre: str, post: str, want: str) -> None:
    assert with_post_filter(fit_error(total, counts, pre_filter=pre), post) == want


def _decide(*objs: dict) -> tuple:
    state = cluster(*objs)
    outcome = Scheduler(parse_config(None).build(state)).decide(state.pods["default/p"], NOW)
    return outcome, state


def not_helpful(n: int) -> str:
    """The PostFilter tail when every node is UnschedulableAndUnresolvable: DynamicResources' reason, then
    DefaultPreemption's (kube 1.36's RunPostFilterPlugins joins them)."""
    return f"no new claims to deallocate, preemption: 0/{n} nodes are available: {n} Preemption is not helpful for scheduling."


def _stuck_claim() -> tuple[dict, ...]:
    """A claim bound to a PV that only a node outside the cluster can reach."""
    return (
        storage_class(),
        pv("pv-gone", "10Gi", on="gone", claim="default/data", phase="Bound"),
        pvc("data", volume="pv-gone", bound=True),
    )


def test_the_issues_first_example_counts_first_failing_plugins() -> None:
    # issue 16: berth said "1 ...master: }, 3 node(s) had volume node affinity conflict"; kube says 2
    master = node("master", taints=[{"key": "node-role.kubernetes.io/master", "effect": "NoSchedule"}])
    outcome, _ = _decide(master, node("w1"), node("w2"), *_stuck_claim(), pod("p", ("data",)))
    d = outcome.decision
    assert d.message == f"0/3 nodes are available: 1 {MASTER_TAINT}, 2 {NODE_CONFLICT}. {not_helpful(3)}"
    assert outcome.reasons == {MASTER_TAINT: 1, NODE_CONFLICT: 2}
    # the per-node report still lists every failing plugin's reasons
    assert d.nodes["master"].reasons == [MASTER_TAINT, NODE_CONFLICT]


def test_the_issues_second_example() -> None:
    # issue 16: berth said "4 ...node affinity/selector, 4 ...volume node affinity conflict" on 5 nodes
    nodes = [node(f"n{i}") for i in range(1, 6)]
    p = pod("p", ("data",), nodeSelector={HOST: "n5"})
    outcome, _ = _decide(*nodes, *_stuck_claim(), p)
    assert (
        outcome.decision.message == f"0/5 nodes are available: 1 {NODE_CONFLICT}, 4 {NODE_AFFINITY}. {not_helpful(5)}"
    )


def test_every_reason_of_the_first_failing_plugin_counts() -> None:
    outcome, _ = _decide(
        node("n1", cpu="3", memory="3Gi"),
        node("n2", cpu="3"),
        pod("q1", cpu="2", memory="2Gi", node_name="n1"),
        pod("q2", cpu="2", node_name="n2"),
        pod("p", cpu="2", memory="2Gi"),
    )
    assert outcome.decision.message == (
        "0/2 nodes are available: 1 Insufficient memory, 2 Insufficient cpu. "
        "no new claims to deallocate, preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod."
    )


def test_more_than_a_nodes_whole_allocatable_is_not_preemptions_business() -> None:
    # kube's fitsRequest: a request over the node's allocatable is Unresolvable (kube 1.36, seen on the real
    # scheduler: "2 Insufficient cpu. no new claims to deallocate, preemption: ... 2 Preemption is not helpful")
    outcome, _ = _decide(node("n1", cpu="1"), node("n2", cpu="1"), pod("p", cpu="1500m"))
    assert outcome.decision.message == f"0/2 nodes are available: 2 Insufficient cpu. {not_helpful(2)}"


def test_no_nodes_is_kubes_err_no_nodes_available() -> None:
    outcome, _ = _decide(pod("p", ("missing",)))
    assert outcome.decision.status == "Unschedulable"
    assert outcome.decision.message == NO_NODES_AVAILABLE == "no nodes available to schedule pods"
    assert outcome.rejected_by == frozenset()  # rejected by no plugin: any change is worth a retry
    assert outcome.reasons == {} and outcome.statuses is None


def test_a_pre_filter_rejection_gives_its_message_once() -> None:
    # An UnschedulableAndUnresolvable PreFilter ends kube's PreFilter before DynamicResources' own, whose
    # PostFilter then fails to read its state: an Error, "not found", that ends PostFilter (no preemption)
    # and still ends the message (kube 1.36, seen on the real scheduler).
    outcome, _ = _decide(node("n1"), node("n2"), pod("p", ("missing",)))
    assert outcome.decision.message == '0/2 nodes are available: persistentvolumeclaim "missing" not found. not found'


@st.composite
def _failures(draw: st.DrawFn) -> tuple[list[str | None], list[tuple[str, list[Failure]]]]:
    """Random node slots (some free) and plugins, each with failures over random slots."""
    names: list[str | None] = draw(st.lists(st.sampled_from([None, "n"]), min_size=1, max_size=12))
    names = [None if n is None else f"n{i}" for i, n in enumerate(names)]
    plugins = []
    for p in range(draw(st.integers(0, 4))):
        found = []
        for _ in range(draw(st.integers(1, 3))):
            hit = draw(st.lists(st.booleans(), min_size=len(names), max_size=len(names)))
            mask = np.array(hit, dtype=bool) & np.array([n is not None for n in names])
            found.append(Failure(mask, draw(st.sampled_from(["a", "b", "c", "d"])), Code.UNSCHEDULABLE))
        plugins.append((f"P{p}", found))
    return names, plugins


@given(_failures())
def test_reason_counts_equal_a_count_over_each_nodes_first_failing_plugin(
    case: tuple[list[str | None], list[tuple[str, list[Failure]]]],
) -> None:
    names, plugins = case
    table = NodeTable()
    for slot in range(len(names)):
        assert table.upsert(convert(node(f"n{slot}"))) == slot
    for slot, name in enumerate(names):
        if name is None:
            table.remove(f"n{slot}")
    statuses = NodeToStatus(table, plugins)
    want: dict[str, int] = {}
    for slot, name in enumerate(names):  # the oracle: per node, plugins in order, stop at the first hit
        if name is None:
            continue
        for _, found in plugins:
            hits = [f.reason for f in found if f.mask[slot]]
            if hits:
                for reason in hits:
                    want[reason] = want.get(reason, 0) + 1
                break
    assert statuses.reason_counts() == want
