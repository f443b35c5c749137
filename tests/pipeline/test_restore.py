"""Engines that start from the indexer's objects and their own checkpoint decide as an uninterrupted
run does: the scorer (waiting pods, reservations, nominations) and the buffer controller (last
statuses, timers). Pure: the objects are what the indexer's operations write (berth.core), no Redis."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest

from berth.adapters.files.eventlog import read_events
from berth.core.api.watch import Event, encode_line, parse_event
from berth.core.config.kubeschedulerconfig import parse_config
from berth.core.pipeline.buffers import BufferEngine
from berth.core.pipeline.indexer import IndexerEngine
from berth.core.pipeline.relist import snapshot_events
from berth.core.pipeline.scorer import ScorerEngine

SAMPLE = str(Path(__file__).parents[2] / "examples" / "small.jsonl.gz")


def log() -> tuple[list[bytes], list[Event]]:
    lines = [encode_line(ev, with_position=True) for ev in read_events(SAMPLE)]
    return lines, [parse_event(line, i + 1) for i, line in enumerate(lines)]


def objects(lines: list[bytes]) -> list[tuple[str, bytes]]:
    """What the indexer keeps after these lines: the bytes of each object not deleted."""
    engine = IndexerEngine()
    kept: dict[str, bytes] = {}
    for i, line in enumerate(lines):
        ops, _ = engine.handle_raw(line, i + 1)
        for op in ops:
            for action in op.actions:
                if action[0] == "OBJSET":
                    assert op.value is not None
                    kept[action[1]] = op.value
                elif action[0] == "OBJDEL":
                    kept.pop(action[1], None)
    return sorted(kept.items())


def records(engine: Any, events: list[Event]) -> list[dict[str, Any]]:
    return [msgspec.to_builtins(r) for ev in events for r in engine.handle(ev)]


@pytest.mark.parametrize(("commit", "watermark"), [(0.5, 0.5), (0.5, 0.3), (0.2, 0.1), (0.8, 0.8), (0.9, 0.6)])
def test_objects_then_events_then_the_checkpoint_decide_as_an_uninterrupted_run(
    commit: float, watermark: float
) -> None:
    """Objects as of the watermark, the events from there to the commit applied to the state only,
    then the checkpoint taken at the commit; the rest of the log handled as usual."""
    lines, events = log()
    c, w = int(len(events) * commit), int(len(events) * watermark)
    config = parse_config(None)
    for make in (lambda: ScorerEngine(config), lambda: BufferEngine(config)):
        want = records(make(), events)
        first = make()
        got = records(first, events[:c])
        saved = first.checkpoint()
        again = make()
        snapshot, bad = snapshot_events(objects(lines[:w]))
        assert not bad
        again.restore(snapshot, events[w - 1].ts)
        for ev in events[w:c]:
            again.apply(ev)
        again.resume(saved)
        got += records(again, events[c:])
        assert len(want) > 4
        assert got == want


def test_without_a_checkpoint_a_reservation_the_store_holds_is_taken_back() -> None:
    """decide_pending: a pod the store holds a reservation for is placed on that node, not decided
    again; the other pending pods are decided, as a restarted kube-scheduler does."""
    lines, events = log()
    config = parse_config(None)
    first = ScorerEngine(config)
    for ev in events[:900]:
        first.handle(ev)
    held = {k: r.node for k in first.reservations.pods() if (r := first.state.reserved(k)) is not None}
    assert held
    again = ScorerEngine(config)
    snapshot, _ = snapshot_events(objects(lines[:900]))
    again.restore(snapshot, events[899].ts)
    decided = again.decide_pending(held)
    assert not {r.pod for r in decided} & held.keys()
    for pod, node in held.items():
        taken = again.state.reserved(pod)
        assert taken is not None and taken.node == node


@pytest.mark.parametrize(("commit", "crash"), [(0.4, 0.6), (0.6, 0.8), (0.7, 0.9), (0.8, 0.9)])
def test_a_start_ahead_of_the_commit_decides_under_ids_of_its_own(commit: float, crash: float) -> None:
    """A scorer emits decisions past its last checkpoint, then stops; the indexer goes on. Restarted
    from the indexer's objects (ahead of the commit) and that checkpoint, it decides the pending pods
    at its start and goes on: no decision id repeats one emitted before with other contents (each
    start's lineage names it). Without the lineage the same run repeats ids with other contents."""
    lines, events = log()
    config = parse_config(None)
    c, k = int(len(events) * commit), int(len(events) * crash)
    first = ScorerEngine(config)
    before = records(first, events[:c])
    saved = first.checkpoint()
    before += records(first, events[c:k])  # emitted, never committed
    held = {key: r.node for key in first.reservations.pods() if (r := first.state.reserved(key)) is not None}
    clashes = []
    for diverge in (True, False):
        again = ScorerEngine(config)
        snapshot, _ = snapshot_events(objects(lines[:k]))
        again.restore(snapshot, events[k - 1].ts)
        again.resume(saved)
        if diverge:
            again.diverge(f"0:{k}:{c}")
        after = [msgspec.to_builtins(r) for r in again.decide_pending(held, waiting=True)]
        after += records(again, events[k:])
        first_of: dict[str, Any] = {}
        clashes.append([d for d in before + after if first_of.setdefault(d["decisionId"], d) != d])
    assert clashes[0] == []
    assert clashes[1], "the scenario does not repeat an id: it tests nothing"


def test_the_lineage_is_kept_by_the_checkpoint_and_an_older_checkpoint_has_none() -> None:
    config = parse_config(None)
    engine = ScorerEngine(config)
    older = engine.checkpoint()
    engine.diverge("0:10:5")
    assert engine.lineage
    again = ScorerEngine(config)
    again.resume(engine.checkpoint())
    assert again.lineage == engine.lineage
    fields = msgspec.msgpack.decode(older)
    del fields["lineage"]  # as a checkpoint written before the lineage was
    again.resume(msgspec.msgpack.encode(fields))
    assert again.lineage == ""
    same = ScorerEngine(config)
    same.diverge("0:10:5")
    assert same.lineage == engine.lineage  # the same start, the same ids
