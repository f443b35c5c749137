"""The cycle's extension points: first-failing NodeToStatus, PostFilter with a dry run, Reserve and
Unreserve, discovery by Protocol; the engine's parts: stats without scans, evaluate without copies."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from berth.core.api.kinds import convert
from berth.core.cache.state import Reservation
from berth.core.config.kubeschedulerconfig import parse_config
from berth.core.framework.cycle import Cycle
from berth.core.framework.interface import DryRun, PostFilterResult
from berth.core.framework.runtime.profile import Profile
from berth.core.framework.status import OK, Code, Failure, NodeStatus, NodeToStatus, Status
from berth.core.pipeline.records import DecisionRecord
from berth.core.pipeline.scorer import ScorerEngine
from berth.core.pipeline.stats import StatsObserver
from berth.core.scheduler.schedule_one import Scheduler
from tests.builders import NOW, cluster, node, pod

TAINT = "node(s) had untolerated taint(s)"


def test_a_nodes_status_is_its_first_failing_plugin_while_the_report_lists_every_reason() -> None:
    state = cluster(
        node("n1", cpu="1", taints=[{"key": "gpu", "value": "yes", "effect": "NoSchedule"}]),
        node("n2", cpu="3"),
        pod("q", cpu="2", node_name="n2"),
        pod("p", cpu="2"),
    )
    outcome = Scheduler(parse_config(None).build(state)).decide(state.pods["default/p"], NOW)
    assert outcome.statuses is not None
    assert outcome.statuses.get("n1") == NodeStatus("TaintToleration", Code.UNRESOLVABLE, (TAINT,))
    assert outcome.statuses.get("n2") == NodeStatus("NodeResourcesFit", Code.UNSCHEDULABLE, ("Insufficient cpu",))
    assert list(outcome.statuses.rejected(Code.UNRESOLVABLE)[:2]) == [True, False]
    assert list(outcome.statuses.rejected(Code.UNSCHEDULABLE)[:2]) == [False, True]
    # the report lists every failing plugin's reasons; the message counts first failing plugins, as kube
    assert outcome.decision.nodes["n1"].reasons == [TAINT, "Insufficient cpu"]
    assert outcome.decision.message == (
        f"0/2 nodes are available: 1 Insufficient cpu, 1 {TAINT}. no new claims to deallocate, preemption: 0/2 nodes are available: "
        "1 No preemption victims found for incoming pod, 1 Preemption is not helpful for scheduling."
    )


def test_a_pre_filter_rejection_is_every_nodes_status() -> None:
    state = cluster(node("n1"), node("n2"), pod("p", claims=("missing",)))
    outcome = Scheduler(parse_config(None).build(state)).decide(state.pods["default/p"], NOW)
    assert outcome.statuses is not None and outcome.pre_filter_rejected
    got = dict(outcome.statuses.items())
    assert set(got) == {"n1", "n2"}
    # kube's default profile: VolumeRestrictions' PreFilter looks the claim up first
    assert got["n1"] == NodeStatus(
        "VolumeRestrictions", Code.UNRESOLVABLE, ('persistentvolumeclaim "missing" not found',)
    )
    assert list(outcome.statuses.rejected(Code.UNRESOLVABLE)[:2]) == [True, True]
    assert not outcome.statuses.rejected(Code.UNSCHEDULABLE).any()


class _Releaser:
    """A PostFilter that dry-runs the cycle with one reservation released (as preemption would with
    its victims), then puts it back."""

    name = "Releaser"

    def __init__(self, victim: str) -> None:
        self.victim = victim
        self.seen: list[tuple[dict[str, NodeStatus], list[bool]]] = []

    def post_filter(self, cycle: Cycle, statuses: NodeToStatus, dry_run: DryRun) -> PostFilterResult:
        held = cycle.state.reserved(self.victim)
        assert held is not None
        cycle.state.release(self.victim)
        try:
            feasible, _ = dry_run(cycle)
        finally:
            cycle.state.reserve(held)
        self.seen.append((dict(statuses.items()), feasible[: len(cycle.state.nodes)].tolist()))
        return PostFilterResult(Status(Code.UNSCHEDULABLE, "would fit without its victim"), "n1")


def test_post_filter_gets_each_nodes_status_and_can_dry_run() -> None:
    state = cluster(node("n1", cpu="1"), pod("p", cpu="600m"))
    hog = convert(pod("hog", cpu="600m"))
    state.reserve(Reservation(hog, "n1"))
    config = parse_config(None)
    base = config.build(state)
    releaser = _Releaser("default/hog")
    profile = Profile.of(state, [*base.pre_filters, *base.filters, releaser], list(base.scorers))  # type: ignore[list-item]
    outcome = Scheduler(profile).decide(state.pods["default/p"], NOW)
    assert outcome.decision.status == "Unschedulable"
    assert releaser.seen == [
        ({"n1": NodeStatus("NodeResourcesFit", Code.UNSCHEDULABLE, ("Insufficient cpu",))}, [True])
    ]
    assert outcome.post_filter is not None and outcome.post_filter.nominated_node == "n1"
    assert state.reserved("default/hog") is not None  # the dry run left the state as it was


class _Taker:
    """A Reserve plugin that takes a claim, or fails (to see the ones before it unreserved)."""

    def __init__(self, name: str, fail: bool = False) -> None:
        self.name = name
        self.fail = fail
        self.undone = 0

    def reserve(self, cycle: Cycle, slot: int) -> Status:
        if self.fail:
            return Status(Code.UNSCHEDULABLE, f"{self.name} cannot")
        cycle.provisions.append(f"default/{self.name}")
        return OK

    def unreserve(self, cycle: Cycle, slot: int) -> None:
        self.undone += 1
        cycle.provisions.remove(f"default/{self.name}")


def test_a_failing_reserve_unreserves_the_ones_before_it() -> None:
    state = cluster(node("n1"), pod("p"))
    base = parse_config(None).build(state)
    first, second = _Taker("first"), _Taker("second", fail=True)
    profile = Profile.of(state, [*base.filters, first, second], list(base.scorers))  # type: ignore[list-item]
    outcome = Scheduler(profile).decide(state.pods["default/p"], NOW)
    assert outcome.reservation is None and first.undone == 1
    assert (
        outcome.decision.status == "Unschedulable"
        and outcome.decision.message == "0/1 nodes are available: 1 second cannot."
    )
    assert outcome.rejected_by == {"second"}


class _ScoreOnly:
    name = "ScoreOnly"

    def score(self, cycle: Cycle, feasible: Any) -> Any:
        return np.zeros(len(feasible), dtype=np.int64)


class _ErrorFilter:
    name = "Broken"

    def filter(self, cycle: Cycle) -> list[Failure]:
        return [Failure(np.zeros(len(cycle.state.nodes.valid), dtype=bool), "cannot tell", Code.ERROR)]


def test_extension_points_are_found_by_protocol() -> None:
    state = cluster(node("n1"), pod("p"))
    score_only, broken = _ScoreOnly(), _ErrorFilter()
    profile = Profile.of(state, [score_only, broken], [(score_only, 1)])  # type: ignore[list-item]
    assert [p.name for p in profile.filters] == ["Broken"] and not profile.pre_filters
    assert [p.name for p, _ in profile.scorers] == ["ScoreOnly"]
    # an Error failure stops the cycle whatever its mask: today's Error decision, same message
    d = Scheduler(profile).decide(state.pods["default/p"], NOW).decision
    assert (d.status, d.message) == ("Error", "cannot tell")


def _record(pod: str, status: str = "Unschedulable", position: int = 0) -> DecisionRecord:
    return DecisionRecord(
        ts=None, decision_id=f"{pod}{position}", position=position, pod=pod, status=status, node=None, message=status
    )


def test_stats_observer_revokes_a_pods_latest_decision() -> None:
    obs = StatsObserver()
    for i, p in enumerate(("a", "b", "a")):
        obs.decided(_record(p, "Scheduled" if i == 2 else "Unschedulable", i))
    obs.revoke("a")
    assert [(d.pod, d.position) for d in obs.stats.decisions] == [("a", 0), ("b", 1)]
    obs.decided(_record("a", "Scheduled", 3))
    obs.revoke("a")
    obs.revoke("a")
    obs.revoke("nobody")
    assert [(d.pod, d.position) for d in obs.stats.decisions] == [("b", 1)]


def test_evaluate_lists_every_node_and_leaves_the_scheduler_as_it_was() -> None:
    engine = ScorerEngine(parse_config(None), top_nodes=1)
    for raw in (node("n1"), node("n2")):
        engine.state.apply(convert(raw))
    seen: list[str] = []
    engine.scheduler.observe = lambda plugin, point, s: seen.append(point)
    observe = engine.scheduler.observe
    outcome = engine.evaluate(convert(pod("p")))
    assert sorted(outcome.decision.nodes) == ["n1", "n2"] and seen == []
    assert engine.scheduler.top_nodes == 1 and engine.scheduler.observe is observe
    assert engine.state.reserved("default/p") is None


REJECTING = [Code.UNSCHEDULABLE, Code.UNRESOLVABLE]


@settings(max_examples=80, deadline=None)
@given(
    st.lists(
        st.lists(st.tuples(st.lists(st.booleans(), min_size=5, max_size=5), st.sampled_from(REJECTING)), max_size=3),
        max_size=4,
    )
)
def test_rejected_is_each_nodes_first_failing_plugins_code(plugins: list[list[tuple[list[bool], Code]]]) -> None:
    """NodeToStatus.rejected(code), all slots at once, against each node's status read one by one."""
    state = cluster(*(node(f"n{i}") for i in range(5)))
    failures = [
        (f"p{i}", [Failure(np.array(mask), f"reason {i}.{j}", code) for j, (mask, code) in enumerate(found)])
        for i, found in enumerate(plugins)
    ]
    statuses = NodeToStatus(state.nodes, failures)
    for code in REJECTING:
        want = []
        for name in state.nodes.names:
            status = statuses.get(name) if name is not None else None
            want.append(status is not None and status.code is code)
        assert list(statuses.rejected(code)[: len(want)]) == want
