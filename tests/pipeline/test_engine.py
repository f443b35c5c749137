"""The scorer engine: decisions in log order, reservations, retries with backoff, confirm and release."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import msgspec
import pytest

from berth.adapters.files.eventlog import EventWriter, Reject, read_events
from berth.core.api.watch import Event, WatchEvent
from berth.core.config.kubeschedulerconfig import parse_config
from berth.core.pipeline.records import DecisionRecord
from berth.core.pipeline.scorer import ScorerEngine
from tests.builders import node, pod, pv, pvc, storage_class

T0 = datetime(2026, 11, 1, 10, 0, tzinfo=UTC)


class Log:
    """Builds events one after another; `at` sets the clock in seconds after T0."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.t = 0.0

    def add(self, obj: dict[str, Any], kind: str = "ADDED", at: float | None = None) -> Log:
        self.t = self.t if at is None else at
        self.events.append(WatchEvent(kind, obj, T0 + timedelta(seconds=self.t), len(self.events) + 1).decoded())
        return self


def replay(log: Log, engine: ScorerEngine | None = None) -> tuple[ScorerEngine, list[DecisionRecord]]:
    engine = engine or ScorerEngine(parse_config(None))
    out: list[DecisionRecord] = []
    for ev in log.events:
        out += engine.handle(ev)
    return engine, out


def cluster(log: Log) -> Log:
    return log.add(storage_class()).add(node("n1")).add(node("n2"))


def summary(records: list[DecisionRecord]) -> list[tuple[str, str, str | None, int]]:
    return [(r.pod, r.status, r.node, r.position) for r in records]


def test_pods_are_decided_when_their_event_arrives_and_reserved() -> None:
    log = cluster(Log()).add(pv("pv1", "10Gi", on="n2")).add(pvc("a")).add(pvc("b"))
    log.add(pod("pa", ("a",))).add(pod("pb", ("b",)))
    _, records = replay(log)
    assert summary(records) == [
        ("default/pa", "Scheduled", "n2", 7),
        ("default/pb", "Unschedulable", None, 8),
    ]
    assert records[0].volume_bindings[0].pv == "pv1"
    assert records[0].ts == "2026-11-01T10:00:00Z"


def test_waiting_pods_retry_on_a_relevant_change_after_backoff() -> None:
    log = cluster(Log()).add(pvc("a")).add(pod("pa", ("a",)), at=0)
    log.add(pv("early", "10Gi", on="n1"), at=0.5)  # inside the 1 s backoff: no retry yet
    log.add(pv("later", "10Gi", on="n2"), at=2)  # relevant, backoff over: retried
    engine, records = replay(log)
    assert summary(records) == [("default/pa", "Unschedulable", None, 5), ("default/pa", "Scheduled", "n1", 7)]
    assert records[1].attempt == 2
    assert records[0].decision_id != records[1].decision_id
    assert len(engine.queue) == 0


@pytest.mark.parametrize(
    "later",
    [
        {"kind": "Bookmark", "metadata": {"resourceVersion": "9"}},  # a BOOKMARK with a time stamp
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "default"}},
    ],
)
def test_a_change_during_backoff_is_kept_until_the_backoff_is_over(later: dict[str, Any]) -> None:
    """kube moves a pod that a change helps during its backoff to the backoff queue; it is retried
    when the backoff ends even if nothing relevant happens after the change."""
    log = cluster(Log()).add(pvc("a")).add(pod("pa", ("a",)), at=0)
    log.add(pv("early", "10Gi", on="n1"), at=0.5)  # helps, but the 1 s backoff is not over
    log.add(later, "BOOKMARK" if later["kind"] == "Bookmark" else "ADDED", at=0.9)  # still backing off
    log.add(later, "BOOKMARK" if later["kind"] == "Bookmark" else "MODIFIED", at=1.5)  # over: retried here
    engine, records = replay(log)
    assert summary(records) == [("default/pa", "Unschedulable", None, 5), ("default/pa", "Scheduled", "n1", 8)]
    assert len(engine.queue) == 0 and not engine.queue.has_due


def test_a_pod_due_after_backoff_is_retried_once() -> None:
    log = cluster(Log()).add(pvc("a")).add(pod("pa", ("a",)), at=0)
    log.add(node("n3"), at=0.5)  # relevant (no hint says otherwise), yet no PV anywhere: still fails
    for t in (1.5, 1.6, 1.7):
        log.add({"kind": "Bookmark", "metadata": {}}, "BOOKMARK", at=t)
    engine, records = replay(log)
    assert [r.message[:27] for r in records] == ["0/2 nodes are available: 2 ", "0/3 nodes are available: 3 "]
    assert engine.queue.attempts("default/pa") == 2  # once at 1.5, not again at 1.6 or 1.7


def test_unchanged_failures_are_not_repeated() -> None:
    log = cluster(Log()).add(pvc("a")).add(pod("pa", ("a",)), at=0)
    for i in range(5):  # relevant changes that do not help: PVs of another class
        log.add(pv(f"other-{i}", "10Gi", on="n1", cls="other"), at=5 + 20 * i)
    log.add(node("n3"), at=200)  # the message changes: one more record
    engine, records = replay(log)
    assert [r.status for r in records] == ["Unschedulable", "Unschedulable"]
    assert records[1].message.startswith("0/3 nodes are available")
    assert engine.queue.attempts("default/pa") == 7


def test_a_deleted_pod_releases_its_pv() -> None:
    log = cluster(Log()).add(pv("pv1", "10Gi", on="n1")).add(pvc("a")).add(pvc("b"))
    log.add(pod("pa", ("a",)), at=0).add(pod("pb", ("b",)), at=1).add(pod("pa", ("a",)), kind="DELETED", at=5)
    engine, records = replay(log)
    assert summary(records) == [
        ("default/pa", "Scheduled", "n1", 7),
        ("default/pb", "Unschedulable", None, 8),
        ("default/pb", "Scheduled", "n1", 9),
    ]
    assert engine.take_released() == ["default/pa"]


def test_binding_confirms_or_overrides_the_reservation() -> None:
    log = cluster(Log()).add(pod("pa", cpu="1")).add(pod("pb", cpu="1"))
    log.add(pod("pa", cpu="1", node_name="n1", metadata={"resourceVersion": "2"}))  # agrees with berth
    log.add(pod("pb", cpu="1", node_name="n1", metadata={"resourceVersion": "2"}))  # someone else chose n1
    engine, records = replay(log)
    assert [r.node for r in records] == ["n1", "n2"]  # NodeResourcesFit (LeastAllocated) spreads them
    assert engine.state.reserved("default/pa") is None and engine.state.pods["default/pa"].node_name == "n1"
    assert engine.state.pods["default/pb"].node_name == "n1"
    assert engine.take_released() == ["default/pa", "default/pb"]
    stats = engine.finish()
    cpu = {n.node: n.cpu_requested for n in stats.nodes}
    assert cpu == {"n1": 2000, "n2": 0}


def test_status_updates_of_a_decided_pod_change_nothing() -> None:
    log = (
        cluster(Log())
        .add(pod("pa"))
        .add(pod("pa", metadata={"resourceVersion": "7"}, status={"phase": "Pending", "conditions": []}))
    )
    _, records = replay(log)
    assert len(records) == 1


def test_redelivered_events_are_ignored() -> None:
    log = cluster(Log()).add(pod("pa", metadata={"resourceVersion": "5"}))
    log.events += list(log.events)
    _, records = replay(log)
    assert len(records) == 1


def test_events_before_from_only_build_the_state() -> None:
    log = cluster(Log()).add(pod("early"), at=0).add(pod("late"), at=100)
    engine = ScorerEngine(parse_config(None))
    engine.hold_until(T0 + timedelta(seconds=50))
    _, records = replay(log, engine)
    assert [(r.pod, r.position) for r in records] == [("default/early", 5), ("default/late", 5)]


def test_same_log_same_bytes() -> None:
    def run() -> bytes:
        log = cluster(Log()).add(pv("pv1", "10Gi", on="n1")).add(pv("pv2", "10Gi", on="n2"))
        for i in range(6):
            log.add(pvc(f"c{i}")).add(pod(f"p{i}", (f"c{i}",)), at=i)
        return msgspec.json.encode(replay(log)[1])

    assert run() == run()


def test_bad_object_is_a_reject_and_the_rest_goes_on(tmp_path: Path) -> None:
    """The reader decodes each line once: an object that does not decode is rejected there."""
    objs = [storage_class(), node("n1"), node("n2"), pv("bad", "ten"), pod("pa")]
    path = tmp_path / "log.jsonl"
    with EventWriter(str(path)) as w:
        for i, o in enumerate(objs):
            w.write(WatchEvent("ADDED", o, T0 + timedelta(seconds=i)))
    rejects: list[Reject] = []
    unreadable: list[Reject] = []
    engine = ScorerEngine(parse_config(None))
    results = [engine.handle(ev) for ev in read_events(str(path), rejects, unreadable=unreadable)]
    assert rejects == [] and len(unreadable) == 1 and unreadable[0].line == 4
    assert unreadable[0].reason.startswith("PersistentVolume bad: spec.capacity.storage: quantities must match")
    assert unreadable[0].text.startswith('{"ts":"2026-11-01T10:00:03Z","type":"ADDED","object":{"apiVersion"')
    assert unreadable[0].text.endswith(',"position":4}')
    assert len(results) == 4 and results[-1][0].status == "Scheduled"


def test_only_changes_that_can_help_retry_a_pod() -> None:
    """Queueing hints: a pod turned away for want of a PV is not retried on NodeMetric updates."""
    from tests.plugins.loadawarescheduling.builders import node_metric

    log = cluster(Log()).add(pvc("a")).add(pod("pa", ("a",)), at=0)
    for i in range(5):
        log.add(node_metric("n1", cpu="1", memory="1Gi", update=T0 + timedelta(seconds=20 + 20 * i)), at=20 + 20 * i)
    engine, _ = replay(log)
    assert engine.queue.attempts("default/pa") == 1
    log.add(pv("pv1", "10Gi", on="n2"), at=200)
    engine, records = replay(log)
    assert [r.status for r in records] == ["Unschedulable", "Scheduled"]


def test_a_nodemetric_update_retries_only_when_that_node_now_passes() -> None:
    """The LoadAware queueing hint: an update that leaves its node over the threshold retries nothing."""
    from tests.plugins.loadawarescheduling.builders import node_metric

    def metric(name: str, cpu: str, at: float) -> dict[str, Any]:
        return node_metric(name, cpu=cpu, memory="1Gi", update=T0 + timedelta(seconds=at))

    log = Log().add(node("n1")).add(node("n2"))
    log.add(metric("n1", "31", 0)).add(metric("n2", "31", 0))  # both far over the 65% cpu threshold
    log.add(pod("pa", ()), at=1)
    log.add(metric("n1", "30", 20), at=20)  # still over: skipped
    log.add(metric("n2", "29", 40), at=40)  # still over: skipped
    engine, records = replay(log)
    assert [r.status for r in records] == ["Unschedulable"]
    assert engine.queue.attempts("default/pa") == 1
    log.add(metric("n2", "2", 60), at=60)  # n2 passes now: retried and placed there
    _, records = replay(log)
    assert [(r.status, r.node) for r in records] == [("Unschedulable", None), ("Scheduled", "n2")]
    assert records[1].attempt == 2


@pytest.mark.parametrize(
    "extra",
    [
        pytest.param({}, id="a pending pod"),
        pytest.param({"nodeName": "n1"}, id="a bound pod"),
        pytest.param({"nodeName": "n1", "hostPorts": True}, id="a bound pod with a host port"),
    ],
)
def test_the_deletion_of_a_pod_never_seen_changes_nothing(extra: dict[str, Any]) -> None:
    """A log or watch that starts after a pod was added can still carry its deletion: every store of
    the default profile (NodePorts' too) takes it as nothing to forget, and the next pod is decided."""
    gone = pod("gone")
    if extra.get("nodeName"):
        gone["spec"]["nodeName"] = extra["nodeName"]
    if extra.get("hostPorts"):
        gone["spec"]["containers"][0]["ports"] = [{"containerPort": 80, "hostPort": 80}]
    log = cluster(Log()).add(gone, "DELETED").add(pod("next"))
    engine, records = replay(log)
    assert summary(records) == [("default/next", "Scheduled", "n1", 5)]
    assert "default/gone" not in engine.state.pods
