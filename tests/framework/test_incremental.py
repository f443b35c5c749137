"""Incremental evaluation (issue 21) is a full evaluation: the same decisions, byte for byte, after
any sequence of node, pod, PV, PVC and NodeMetric changes, and on every sample log."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from berth.adapters.files.eventlog import read_events
from berth.core.api.core.model import Pod
from berth.core.api.kinds import convert
from berth.core.cache import state as state_module
from berth.core.cache.state import ClusterState
from berth.core.config.kubeschedulerconfig import parse_config
from berth.core.pipeline.scorer import ScorerEngine
from berth.core.scheduler.schedule_one import Scheduler
from berth_cli.main import main
from tests.builders import NOW, node, pod, pv, pvc, storage_class
from tests.plugins.loadawarescheduling.builders import node_metric, rfc

ROOT = Path(__file__).parent.parent.parent
LOGS = sorted(
    [
        *(ROOT / "examples").glob("*.jsonl.gz"),
        *(ROOT / "examples").glob("*.jsonl"),
        *(ROOT / "tests" / "data" / "logs").glob("*.jsonl"),
    ]
)

NODES = 5
SHAPES = [("1", "1Gi"), ("2", "4Gi"), ("500m", "512Mi")]

nodes_ = st.integers(0, NODES - 1)
cpus = st.sampled_from(["2", "4", "8"])
metric = st.tuples(st.just("metric"), nodes_, st.sampled_from(["0", "1", "3", "7"]), st.sampled_from([0, 1, 5]))
decide = st.tuples(
    st.just("decide"), st.sampled_from(SHAPES[:2]), st.sampled_from([None, 0, 1, 2]), st.sampled_from([1, 2, 6])
)
events = st.one_of(
    st.tuples(st.just("node"), nodes_, cpus, st.sampled_from(["z1", "z2"]), st.booleans()),
    st.tuples(st.just("node-delete"), nodes_),
    st.tuples(st.just("bind"), st.integers(0, 9), nodes_, st.sampled_from(SHAPES)),
    st.tuples(st.just("pod-delete"), st.integers(0, 9)),
    st.tuples(st.just("pv"), st.integers(0, 5), nodes_, st.sampled_from(["5Gi", "10Gi", "100Gi"])),
    st.tuples(st.just("pv-delete"), st.integers(0, 5)),
    st.tuples(st.just("pvc"), st.integers(0, 3), st.sampled_from(["1Gi", "10Gi"])),
    metric,
    metric,
    st.tuples(st.just("metric-delete"), nodes_),
    decide,
    decide,
    decide,
)


def _raw(ev: tuple[Any, ...], seq: int) -> tuple[dict[str, Any], bool] | None:
    """The object an event changes, and whether it is deleted (None: a decision)."""
    kind = ev[0]
    if kind == "node":
        _, i, cpu, zone, unschedulable = ev
        raw = node(f"n{i}", zone=zone, cpu=cpu, memory="16Gi", unschedulable=unschedulable)
    elif kind == "node-delete":
        raw = node(f"n{ev[1]}")
    elif kind == "bind":
        _, j, i, (cpu, memory) = ev
        raw = pod(f"run{j}", cpu=cpu, memory=memory, node_name=f"n{i}")
    elif kind == "pod-delete":
        raw = pod(f"run{ev[1]}", node_name="n0")
    elif kind == "pv":
        _, k, i, size = ev
        raw = pv(f"pv{k}", size, on=f"n{i}")
    elif kind == "pv-delete":
        raw = pv(f"pv{ev[1]}", "5Gi", on="n0")
    elif kind == "pvc":
        raw = pvc(f"c{ev[1]}", ev[2])
    elif kind == "metric":
        _, i, cpu, minute = ev
        raw = node_metric(f"n{i}", cpu=cpu, memory="2Gi", update=NOW + timedelta(minutes=minute))
    elif kind == "metric-delete":
        raw = node_metric(f"n{ev[1]}")
    else:
        return None
    raw["metadata"]["resourceVersion"] = str(seq)
    return raw, kind.endswith("-delete")


class _Side:
    def __init__(self, incremental: bool, redo_share: float) -> None:
        self.state = ClusterState()
        self.scheduler = Scheduler(parse_config(None).build(self.state), incremental=incremental)
        if self.scheduler.answers is not None:
            self.scheduler.answers.redo_share = redo_share
            self.scheduler.answers.filter_min_slots = 0

    def decide(self, p: Pod, minute: int) -> bytes:
        now = NOW + timedelta(minutes=minute)
        outcome = self.scheduler.decide(p, now)
        if outcome.reservation is not None:
            self.state.reserve(outcome.reservation)
        statuses = None if outcome.statuses is None else outcome.statuses.reason_counts()
        return msgspec.json.encode([outcome.decision, statuses, outcome.codes, sorted(outcome.rejected_by)])


@settings(max_examples=300, deadline=None)
@given(st.lists(events, min_size=20, max_size=80), st.sampled_from([0.25, 1.0]))
def test_incremental_evaluation_equals_full_evaluation(evs: list[tuple[Any, ...]], redo_share: float) -> None:
    """Every decision, with every node's reasons and scores, its NodeToStatus counts and codes, is the
    same with node-local answers kept per pod signature as with every plugin run on every node."""
    kept, full = _Side(True, redo_share), _Side(False, redo_share)
    setup = [storage_class("local"), *(node(f"n{i}", cpu="4", memory="16Gi") for i in range(3))]
    setup += [pvc("c0", "1Gi"), pvc("c1", "10Gi"), pv("pv0", "5Gi", on="n0"), pv("pv1", "100Gi", on="n1")]
    for raw in setup:
        for side in (kept, full):
            side.state.apply(convert(raw))
    for seq, ev in enumerate(evs, start=1):
        change = _raw(ev, seq)
        if change is not None:
            obj = convert(change[0])
            for side in (kept, full):
                side.state.apply(obj, change[1])
            continue
        _, (cpu, memory), claim, minute = ev
        claims = () if claim is None else (f"c{claim}",)
        p = convert(pod(f"p{seq}", claims, cpu=cpu, memory=memory, created=rfc(NOW)))
        assert kept.decide(p, minute) == full.decide(p, minute), ev


@pytest.mark.parametrize("log", LOGS, ids=lambda p: p.name)
@pytest.mark.parametrize("nodes", [(), ("--all-nodes",)], ids=["top", "all"])
def test_sample_logs_decide_the_same_without_incremental(
    log: Path, nodes: tuple[str, ...], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = {}
    for flag in ((), ("--no-incremental",)):
        path = tmp_path / f"d{len(flag)}.jsonl"
        assert main(["replay", str(log), *nodes, *flag, "--no-progress", "--decisions", str(path)]) in (0, 1)
        capsys.readouterr()
        out[flag] = path.read_bytes()
    assert out[()] == out[("--no-incremental",)]
    assert out[()]


@pytest.mark.parametrize("log", LOGS, ids=lambda p: p.name)
def test_sample_logs_decide_the_same_with_every_answer_kept(log: Path) -> None:
    """As above with Filters kept too at these small sizes (berth keeps them from 16,384 slots up) and
    every changed slot computed again, however many."""
    out = []
    for incremental in (True, False):
        engine = ScorerEngine(parse_config(None), incremental=incremental)
        if engine.scheduler.answers is not None:
            engine.scheduler.answers.filter_min_slots = 0
            engine.scheduler.answers.redo_share = 1.0
        records = [r for ev in read_events(str(log), []) for r in engine.handle(ev)]
        out.append(msgspec.json.encode(records))
    assert out[0] == out[1]


@pytest.mark.parametrize(
    ("since", "most", "want"),
    [
        (10, 100, []),
        (8, 100, [8, 9]),
        (6, 100, [6, 7, 8, 9]),
        (5, 100, None),  # its touches are no longer in the journal
        (8, 1, None),  # more touches than asked for
    ],
)
def test_touched_since(monkeypatch: pytest.MonkeyPatch, since: int, most: int, want: list[int] | None) -> None:
    monkeypatch.setattr(state_module, "_JOURNAL", 4)
    state = ClusterState()
    for slot in range(10):
        state.touch(slot)
    assert state.touched_since(since, most) == want
