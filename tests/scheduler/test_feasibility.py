"""Basic feasibility, the winner rule, the FitError text and reservations."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from berth.core.api.kinds import convert
from berth.core.cache.state import ClusterState, Reservation
from berth.core.config.kubeschedulerconfig import parse_config
from berth.core.scheduler import results
from berth.core.scheduler.schedule_one import Scheduler
from tests.builders import NOW, cluster, node, pod, pv, pvc, storage_class
from tests.plugins.volumebinding.vb_helpers import bindings, decide, reasons


@pytest.mark.parametrize(
    ("n", "p", "reason"),
    [
        (node("n1", unschedulable=True), pod("p"), "node(s) were unschedulable"),
        (node("n1"), pod("p", nodeSelector={"disk": "ssd"}), "node(s) didn't match Pod's node affinity/selector"),
        (
            node("n1"),
            pod(
                "p",
                affinity={
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [{"matchExpressions": [{"key": "disk", "operator": "Exists"}]}]
                        }
                    }
                },
            ),
            "node(s) didn't match Pod's node affinity/selector",
        ),
        (
            node("n1", taints=[{"key": "gpu", "value": "yes", "effect": "NoSchedule"}]),
            pod("p"),
            "node(s) had untolerated taint(s)",
        ),
        (
            node("n1", taints=[{"key": "drain", "effect": "NoExecute"}]),
            pod("p"),
            "node(s) had untolerated taint(s)",
        ),
        (node("n1", cpu="1"), pod("p", cpu="2"), "Insufficient cpu"),
        (node("n1", memory="1Gi"), pod("p", memory="2Gi"), "Insufficient memory"),
        (
            node("n1", extra={"nvidia.com/gpu": "1"}),
            pod("p", containers=[{"name": "c", "resources": {"requests": {"nvidia.com/gpu": "2"}}}]),
            "Insufficient nvidia.com/gpu",
        ),
        (node("n1", pods="0"), pod("p"), "Too many pods"),
    ],
)
def test_filters_reject_with_kube_reasons(n: dict, p: dict, reason: str) -> None:
    d = decide(n, p)
    assert d.status == "Unschedulable"
    assert reasons(d) == {"n1": [reason]}
    # kube's PostFilter tail: nothing of lower priority to evict, or a node preemption cannot help
    # (each Insufficient case asks for more than the node's whole allocatable: kube's Unresolvable there)
    helps = reason == "Too many pods"
    tail = "No preemption victims found for incoming pod" if helps else "Preemption is not helpful for scheduling"
    assert d.message == (
        f"0/1 nodes are available: 1 {reason}. no new claims to deallocate, preemption: 0/1 nodes are available: "
        f"1 {tail}."
    )


@pytest.mark.parametrize(
    ("n", "p"),
    [
        (
            node("n1", unschedulable=True),
            pod(
                "p",
                tolerations=[{"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}],
            ),
        ),
        (node("n1", labels={"disk": "ssd"}), pod("p", nodeSelector={"disk": "ssd"})),
        (
            node("n1", taints=[{"key": "gpu", "value": "yes", "effect": "NoSchedule"}]),
            pod("p", tolerations=[{"key": "gpu", "operator": "Equal", "value": "yes"}]),
        ),
        (
            node("n1", taints=[{"key": "gpu", "value": "yes", "effect": "NoSchedule"}]),
            pod("p", tolerations=[{"operator": "Exists"}]),
        ),
        (node("n1", taints=[{"key": "soft", "effect": "PreferNoSchedule"}]), pod("p")),
        (node("n1", cpu="1"), pod("p", cpu="1")),
        (
            node("n1"),
            pod(
                "p",
                affinity={
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [
                                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}
                            ]
                        }
                    }
                },
            ),
        ),
    ],
)
def test_filters_pass(n: dict, p: dict) -> None:
    assert decide(n, p).status == "Scheduled"


def test_running_pods_use_up_the_node() -> None:
    d = decide(node("n1", cpu="2"), node("n2", cpu="2"), pod("busy", node_name="n1", cpu="1500m"), pod("p", cpu="1"))
    assert d.node == "n2"
    assert reasons(d)["n1"] == ["Insufficient cpu"]


def test_finished_pods_free_the_node() -> None:
    done = pod("done", node_name="n1", cpu="2", status={"phase": "Succeeded"})
    assert decide(node("n1", cpu="2"), done, pod("p", cpu="1")).node == "n1"


def test_fit_error_sorts_count_and_reason_as_strings() -> None:
    # each node counts its first failing plugin only; "10 .." sorts before "9 .." as kube's sort.Strings
    # (the pod fits the n nodes' allocatable, not what is free there: Unschedulable, preemption's business)
    nodes = [node(f"n{i}", cpu="3") for i in range(10)] + [node(f"x{i}", cpu="3", unschedulable=True) for i in range(9)]
    used = [pod(f"q{i}", cpu="2", node_name=f"n{i}") for i in range(10)]
    d = decide(*nodes, *used, pod("p", cpu="2"))
    assert d.message == (
        "0/19 nodes are available: 10 Insufficient cpu, 9 node(s) were unschedulable. "
        "no new claims to deallocate, preemption: 0/19 nodes are available: 10 No preemption victims found for incoming pod, "
        "9 Preemption is not helpful for scheduling."
    )


def test_every_failing_filter_is_listed() -> None:
    d = decide(node("n1", cpu="1", unschedulable=True), pod("p", cpu="2"))
    assert reasons(d) == {"n1": ["node(s) were unschedulable", "Insufficient cpu"]}


def test_reservation_is_seen_by_the_next_pod() -> None:
    state = cluster(
        node("n1", cpu="2"),
        node("n2", cpu="2"),
        storage_class(),
        pv("only", "10Gi", on="n1"),
        pv("other", "10Gi", on="n2"),
        pvc("a", "10Gi"),
        pvc("b", "10Gi"),
        pvc("c", "10Gi"),
        pod("pa", ("a",), created="2026-11-01T10:00:00Z"),
        pod("pb", ("b",), created="2026-11-01T10:00:01Z"),
        pod("pc", ("c",), created="2026-11-01T10:00:02Z"),
    )
    decisions = Scheduler(parse_config(None).build(state)).run(state.pending_pods(), NOW)
    assert [(d.pod, d.status, d.node) for d in decisions] == [
        ("default/pa", "Scheduled", "n1"),
        ("default/pb", "Scheduled", "n2"),
        ("default/pc", "Unschedulable", None),
    ]
    assert {b for d in decisions for b in bindings(d)} == {("default/a", "only"), ("default/b", "other")}
    assert state.pvs["only"].claim_ref is not None and state.pvs["only"].claim_ref.name == "a"


def test_release_gives_everything_back() -> None:
    state = cluster(
        node("n1", cpu="1"), storage_class(), pv("only", "10Gi", on="n1"), pvc("a"), pod("pa", ("a",), cpu="1")
    )
    sched = Scheduler(parse_config(None).build(state))
    outcome = sched.decide(state.pods["default/pa"], NOW)
    assert outcome.reservation is not None
    state.reserve(outcome.reservation)
    assert sched.decide(state.pods["default/pa"], NOW).decision.status == "Unschedulable"
    state.release("default/pa")
    assert sched.decide(state.pods["default/pa"], NOW).decision.node == "n1"


def test_pending_pods_in_creation_order() -> None:
    state = cluster(
        pod("late", created="2026-11-01T10:00:05Z"),
        pod("early", created="2026-11-01T10:00:01Z"),
        pod("done", node_name="n1"),
    )
    assert [p.name for p in state.pending_pods()] == ["early", "late"]


def test_one_plugin_state_serves_one_cluster_view() -> None:
    import pytest

    from berth.core.cache.state import ClusterState

    first = ClusterState()
    profile = parse_config(None).build(first)
    assert first.extensions and list(first.extensions) == list(profile.extensions)
    with pytest.raises(ValueError, match="already belongs to another ClusterState"):
        ClusterState(extensions=profile.extensions)


def test_reserved_on_follows_reserve_confirm_and_release() -> None:
    """The per-node sum of reservations stays right through every way a reservation ends."""
    state = cluster(node("n1"), node("n2"), pod("a", cpu="1"), pod("b", cpu="2"), pod("c", cpu="500m"))

    def held(state: ClusterState, node: str) -> dict[str, int]:
        return {k: v for k, v in state.reserved_on(node).items() if k in ("cpu", "pods")}

    a, b, c = (state.pods[f"default/{n}"] for n in "abc")
    state.reserve(Reservation(a, "n1"))
    state.reserve(Reservation(b, "n1"))
    state.reserve(Reservation(c, "n2"))
    assert held(state, "n1") == {"cpu": 3000, "pods": 2}
    assert held(state, "n2") == {"cpu": 500, "pods": 1}
    state.reserve(Reservation(c, "n1"))  # decided again elsewhere: only the newest reservation counts
    assert held(state, "n2") == {}
    assert held(state, "n1") == {"cpu": 3500, "pods": 3}
    state.apply(convert(pod("a", cpu="1", node_name="n1")))  # the API server agrees: no longer held
    state.release("default/b")
    assert held(state, "n1") == {"cpu": 500, "pods": 1}
    state.apply(convert(pod("c", cpu="500m")), deleted=True)
    assert held(state, "n1") == {}


@pytest.mark.parametrize(
    ("top", "listed"),
    [(None, {"n1", "n2", "n3"}), (2, set()), (0, set())],
)
def test_a_prefilter_rejection_lists_nodes_only_when_all_are_asked_for(top: int | None, listed: set[str]) -> None:
    state = cluster(node("n1"), node("n2"), node("n3"), pod("p", ("missing",)))
    d = Scheduler(parse_config(None).build(state), top_nodes=top).decide(state.pods["default/p"], NOW).decision
    assert d.status == "Unschedulable" and 'persistentvolumeclaim "missing" not found' in d.message
    assert set(d.nodes) == listed


@pytest.mark.parametrize("top", [1, 2, 5])
def test_top_nodes_are_the_best_feasible_highest_total_first(top: int) -> None:
    state = cluster(node("a", cpu="2"), node("b", cpu="8"), node("c", cpu="4"), node("d", unschedulable=True), pod("p"))
    full = Scheduler(parse_config(None).build(state)).decide(state.pods["default/p"], NOW).decision
    best = sorted(((n, r.total or 0) for n, r in full.nodes.items() if r.feasible), key=lambda x: (-x[1], x[0]))[:top]
    d = Scheduler(parse_config(None).build(state), top_nodes=top).decide(state.pods["default/p"], NOW).decision
    assert [(n, r.total) for n, r in d.nodes.items()] == best
    assert d.node == best[0][0]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from(["1", "2", "4", "8"]), st.booleans()), min_size=1, max_size=12),
    st.integers(0, 6),
)
def test_top_nodes_equal_the_full_listings_best(specs: list[tuple[str, bool]], top: int) -> None:
    """The top list (partitioned over the feasible slots' keys only) is the full listing's best, in
    order, with many unschedulable nodes and ties of total broken by name."""
    nodes = [node(f"n{i:02d}", cpu=cpu, unschedulable=off) for i, (cpu, off) in enumerate(specs)]
    state = cluster(*nodes, pod("p"))
    full = Scheduler(parse_config(None).build(state)).decide(state.pods["default/p"], NOW).decision
    best = sorted(((n, r.total or 0) for n, r in full.nodes.items() if r.feasible), key=lambda x: (-x[1], x[0]))[:top]
    d = Scheduler(parse_config(None).build(state), top_nodes=top).decide(state.pods["default/p"], NOW).decision
    assert [(n, r.total) for n, r in d.nodes.items()] == best
    assert d.node == full.node


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from(["1", "2", "4", "8"]), st.booleans()), min_size=1, max_size=12),
    st.integers(0, 6),
)
def test_rejected_groups_are_the_full_listings_rejected_nodes_by_reasons(
    specs: list[tuple[str, bool]], top: int
) -> None:
    """rejected_groups (what evaluate's table shows): the full listing's rejected nodes grouped by
    their reasons, each with its count and first names in name order; the top feasible ones listed."""
    nodes = [node(f"n{i:02d}", cpu=cpu, unschedulable=off) for i, (cpu, off) in enumerate(specs)]
    state = cluster(*nodes, pod("p", cpu="3"))
    full = Scheduler(parse_config(None).build(state)).decide(state.pods["default/p"], NOW).decision
    listing = Scheduler(parse_config(None).build(state), top_nodes=top, rejected_groups=2)
    outcome = listing.decide(state.pods["default/p"], NOW)
    by_reasons: dict[tuple[str, ...], list[str]] = {}
    for name, r in full.nodes.items():
        if not r.feasible:
            by_reasons.setdefault(tuple(r.reasons), []).append(name)
    want = sorted((why, len(names), names[:2]) for why, names in by_reasons.items())
    assert sorted(outcome.rejected_groups or []) == want
    best = sorted(((n, r) for n, r in full.nodes.items() if r.feasible), key=lambda x: (-(x[1].total or 0), x[0]))
    d = outcome.decision
    assert list(d.nodes.items()) == best[:top]
    assert (d.node, d.message) == (full.node, full.message)


def test_a_prefilter_rejection_groups_every_node() -> None:
    state = cluster(node("n3"), node("n1"), node("n2"), pod("p", ("missing",)))
    outcome = Scheduler(parse_config(None).build(state), top_nodes=3, rejected_groups=2).decide(
        state.pods["default/p"], NOW
    )
    assert outcome.decision.nodes == {}
    reason = 'persistentvolumeclaim "missing" not found'
    assert outcome.rejected_groups == [results.RejectedGroup((reason,), 3, ["n1", "n2"])]
