"""The preemption story, on a log generated here and replayed through the engine as `berth replay`
does: a high-priority burst arrives on a full cluster; low-priority pods are evicted; the burst is
placed; pods a PodDisruptionBudget protects are spared while unprotected victims exist."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from berth.core.api.watch import WatchEvent
from berth.core.config.kubeschedulerconfig import parse_config
from berth.core.pipeline.records import DecisionRecord
from berth.core.pipeline.scorer import ScorerEngine
from tests.builders import NOW
from tests.plugins.defaultpreemption.helpers import knode, kpod, pdb, priority_class

NODES, PER_NODE, BURST = 6, 4, 8
SLOT = {"cpu": "1", "memory": "1Gi"}
PROTECTED = {"app": "db"}


def story_log() -> list[WatchEvent]:
    """Six nodes of four cpu, each full of four one-cpu batch pods (priority 0, the global default);
    on the first two nodes those pods are `app=db` under a PDB that allows no disruption. Then a
    burst of eight one-cpu pods of the `serving` class (1000)."""
    objs: list[dict[str, Any]] = [
        priority_class("batch", 0, default=True),
        priority_class("serving", 1000),
        pdb(PROTECTED, allowed=0, name="db"),
    ]
    for n in range(NODES):
        objs.append(knode(f"n{n}", {"cpu": "4", "memory": "4Gi"}))
    for n in range(NODES):
        for i in range(PER_NODE):
            labels = PROTECTED if n < 2 else {"app": "batch"}
            objs.append(kpod(f"batch-{n}-{i}", f"n{n}", req=SLOT, labels=labels))
    for b in range(BURST):
        objs.append(kpod(f"serving-{b}", req=SLOT, priorityClassName="serving"))
    objs.append(priority_class("later", 1))  # the log goes on: a change nobody waits for, a minute on
    out = []
    for i, raw in enumerate(objs):
        raw["metadata"]["resourceVersion"] = str(100 + i)
        at = NOW + timedelta(seconds=i + (60 if i == len(objs) - 1 else 0))
        out.append(WatchEvent("ADDED", raw, at, i + 1))
    return out


def replay(grace: float) -> tuple[ScorerEngine, list[DecisionRecord]]:
    engine = ScorerEngine(parse_config(None), preemption_grace=grace)
    records: list[DecisionRecord] = []
    for ev in story_log():
        records += engine.handle(ev.decoded())
    return engine, records


@pytest.mark.parametrize("grace", [0.0, 2.5])
def test_a_burst_evicts_unprotected_low_priority_pods_and_is_placed(grace: float) -> None:
    engine, records = replay(grace)
    last = {r.pod: r for r in records}
    burst = [f"default/serving-{b}" for b in range(BURST)]
    # the burst is placed
    assert all(last[p].status == "Scheduled" for p in burst), {p: last[p].message for p in burst}
    # low-priority pods were evicted for it, one per burst pod, none of them protected
    victims = [v for r in records if isinstance(r.victims, list) for v in r.victims]
    assert len(victims) == BURST and len(set(victims)) == BURST
    assert all(not v.startswith(("default/batch-0-", "default/batch-1-")) for v in victims)
    assert all(v not in engine.state.pods for v in victims)
    # every preemption nominated the node its preemptor was then placed on
    for r in records:
        if isinstance(r.nominated_node, str):
            assert last[r.pod].node == r.nominated_node
    stats = engine.stats
    assert len(stats.preemptions) == BURST
    assert stats.victims_by_priority() == {0: BURST}


def test_with_a_grace_the_preemptor_waits_for_its_victims() -> None:
    _, records = replay(3.0)
    first = next(r for r in records if isinstance(r.victims, list))
    placed = next(r for r in records if r.pod == first.pod and r.status == "Scheduled")
    assert first.ts is not None and placed.ts is not None and placed.ts > first.ts


def test_during_the_grace_the_nomination_holds_the_node_against_lower_priority_pods_only() -> None:
    # a 2-cpu node with a 1.5-cpu batch pod; a 1-cpu serving pod preempts it and waits 10 s for it to
    # go. A MODIFIED event of the preemptor (its status.nominatedNodeName written back) is not a new
    # decision. Meanwhile half a cpu is free: a batch pod sees the nominated pod there and does not
    # fit, a critical one does not see it and does (kube's nominator)
    raws: list[dict[str, Any]] = [
        priority_class("batch", 0, default=True),
        priority_class("serving", 1000),
        priority_class("critical", 100_000),
        knode("n0", {"cpu": "2", "memory": "4Gi"}),
        kpod("old", "n0", req={"cpu": "1500m"}),
        kpod("web", req={"cpu": "1"}, priorityClassName="serving"),
        kpod("web", req={"cpu": "1"}, priorityClassName="serving", status={"nominatedNodeName": "n0"}),
        kpod("late-batch", req={"cpu": "500m"}),
        kpod("late-critical", req={"cpu": "500m"}, priorityClassName="critical"),
    ]
    engine = ScorerEngine(parse_config(None), preemption_grace=10.0)
    records: list[DecisionRecord] = []
    for i, raw in enumerate(raws):
        raw["metadata"]["resourceVersion"] = str(100 + i)
        kind = "MODIFIED" if i == 6 else "ADDED"
        records += engine.handle(WatchEvent(kind, raw, NOW + timedelta(seconds=i), i + 1).decoded())
    by_pod = {r.pod: r for r in records}
    assert [r.pod for r in records].count("default/web") == 1
    assert by_pod["default/web"].victims == ["default/old"]
    assert by_pod["default/late-batch"].status == "Unschedulable"
    assert (by_pod["default/late-critical"].status, by_pod["default/late-critical"].node) == ("Scheduled", "n0")


def play(raws: list[tuple[str, dict[str, Any], int]], grace: float) -> tuple[ScorerEngine, list[DecisionRecord]]:
    """(event type, object, seconds after NOW) through the engine as `berth replay` does."""
    engine = ScorerEngine(parse_config(None), preemption_grace=grace)
    records: list[DecisionRecord] = []
    for i, (kind, raw, at) in enumerate(raws):
        raw["metadata"]["resourceVersion"] = str(100 + i)
        records += engine.handle(WatchEvent(kind, raw, NOW + timedelta(seconds=at), i + 1).decoded())
    return engine, records


def test_the_preemptor_is_retried_on_its_nominated_node_first() -> None:
    # kube's evaluateNominatedNode (issue 37): web preempts old on n1 (n2 is full of a pod it cannot
    # preempt); during the grace n2 empties. When old is gone, web is retried with its
    # nominatedNodeName and goes to n1 unscored, though the empty n2 would score higher.
    raws: list[tuple[str, dict[str, Any], int]] = [
        ("ADDED", priority_class("serving", 1000), 0),
        ("ADDED", priority_class("critical", 100_000), 0),
        ("ADDED", knode("n1", {"cpu": "1", "memory": "4Gi"}), 0),
        ("ADDED", knode("n2", {"cpu": "4", "memory": "4Gi"}), 0),
        ("ADDED", kpod("old", "n1", req={"cpu": "1"}), 1),
        ("ADDED", kpod("blocker", "n2", req={"cpu": "4"}, priorityClassName="critical"), 1),
        ("ADDED", kpod("web", req={"cpu": "1"}, priorityClassName="serving"), 2),
        ("DELETED", kpod("blocker", "n2", req={"cpu": "4"}, priorityClassName="critical"), 5),
        ("ADDED", priority_class("later", 1), 30),  # the log goes on past the grace
    ]
    _, records = play(raws, 10.0)
    web = [r for r in records if r.pod == "default/web"]
    assert (web[0].nominated_node, web[0].victims) == ("n1", ["default/old"])
    assert (web[-1].status, web[-1].node) == ("Scheduled", "n1")


def test_a_higher_priority_preemption_clears_a_waiting_nomination() -> None:
    # kube's prepareCandidate (issue 37): web (serving) preempts b on n1 and waits for it to go; api
    # (critical) then preempts on n1 too, which clears web's nomination there
    raws: list[tuple[str, dict[str, Any], int]] = [
        ("ADDED", priority_class("batch", 0, default=True), 0),
        ("ADDED", priority_class("serving", 1000), 0),
        ("ADDED", priority_class("critical", 100_000), 0),
        ("ADDED", knode("n1", {"cpu": "3", "memory": "4Gi"}), 0),
        ("ADDED", kpod("a", "n1", req={"cpu": "1"}), 1),
        ("ADDED", kpod("b", "n1", req={"cpu": "1500m"}), 1),
        ("ADDED", kpod("web", req={"cpu": "1"}, priorityClassName="serving"), 2),
        ("ADDED", kpod("api", req={"cpu": "2500m"}, priorityClassName="critical"), 3),
    ]
    engine, records = play(raws, 60.0)
    by_pod = {r.pod: r for r in records}
    assert (by_pod["default/web"].nominated_node, by_pod["default/web"].victims) == ("n1", ["default/b"])
    assert by_pod["default/api"].nominated_node == "n1"
    assert engine.scheduler.nominator.held() == {"default/api": "n1"}


@pytest.mark.parametrize("grace", [0.0, 2.5])
def test_the_placement_after_the_victims_go_is_a_decision_of_its_own(grace: float) -> None:
    # the preemptor's pod is not updated in the log between its nomination and its placement: the
    # placement is its next attempt, with an id of its own (the scorer drops a decision id it has sent)
    _, records = replay(grace)
    ids = [r.decision_id for r in records]
    assert len(ids) == len(set(ids))
    for r in records:
        if isinstance(r.nominated_node, str):
            placed = next(p for p in records if p.pod == r.pod and p.status == "Scheduled")
            assert placed.attempt == r.attempt + 1
