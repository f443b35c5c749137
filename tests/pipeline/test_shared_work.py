"""Work the embedded pipeline's engines share: the decoded events and the collector's freezing."""

from __future__ import annotations

import asyncio
import gc
from pathlib import Path

import pytest

from berth.adapters.bus.memory import MemoryBus
from berth.adapters.files.eventlog import read_events
from berth.adapters.runtime.collector import Collector
from berth.core.api import watch as events
from berth.core.api.watch import UnreadableObject, WatchEvent, decode_message, encode_event, parse_event
from berth.core.config.kubeschedulerconfig import parse_config
from berth.core.generate import PRESETS, generate
from berth.core.ports import CLUSTER_EVENTS, Message
from berth_cli.pipeline import Lane, Pipeline
from tests.builders import node


def test_every_consumer_of_the_memory_bus_gets_the_one_decoded_event() -> None:
    async def go() -> None:
        bus = MemoryBus()
        line = encode_event(WatchEvent("ADDED", node("n1"), position=7), with_position=True)
        ev = parse_event(line, 7)
        await bus.send("t", line, ev.key, event=ev)
        await bus.send("t", line, ev.key)  # no event carried (as on Kafka): decoded from the bytes
        first, second = bus.topics["t"][0]
        assert first.value is line  # the line's own bytes, never encoded again
        assert decode_message(first) is ev and decode_message(first) is ev
        again = decode_message(second)
        assert again is not ev and (again.model, again.position, again.key) == (ev.model, 7, b"Node//n1")

    asyncio.run(go())


ROOT = Path(__file__).parents[2]
LOGS = [
    ROOT / "examples" / "small.jsonl.gz",
    ROOT / "examples" / "cold-burst.jsonl",
    *sorted((ROOT / "tests" / "data" / "logs").glob("*.jsonl")),
]


@pytest.mark.parametrize("one_pass", [True, False], ids=["one-pass", "step-by-step"])
@pytest.mark.parametrize("log", LOGS, ids=lambda p: p.name)
def test_engines_get_each_model_without_the_wire_struct_only_the_indexer_keeps(
    log: Path, one_pass: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The log reader and the workers' decoding leave the wire Struct off (it is freed at once, not
    with the event), and nothing else changes; parse_event keeps it by default, for the indexer."""
    if not one_pass:
        monkeypatch.setattr(events, "_typed", None)  # every line read step by step
    read = list(read_events(str(log), rejects=[]))
    assert any(ev.model is not None for ev in read)
    for ev in read:
        kept = parse_event(ev.line, ev.position)
        from_bus = decode_message(Message("t", 0, ev.position - 1, ev.key, ev.line))
        assert ev.wire is None and from_bus.wire is None
        assert (kept.wire is None) == (kept.model is None)
        for other in (kept, from_bus):
            assert (other.type, other.model, other.kind, other.key, other.line, other.ts, other.position) == (
                ev.type, ev.model, ev.kind, ev.key, ev.line, ev.ts, ev.position
            )  # fmt: skip


def test_an_object_that_does_not_decode_names_the_object_and_field() -> None:
    raw = node("n1")
    raw["status"]["allocatable"]["cpu"] = "lots"
    with pytest.raises(UnreadableObject, match=r"^Node n1: status\..*\.cpu: quantities must match") as e:
        parse_event(encode_event(WatchEvent("ADDED", raw), with_position=True), 3)
    assert e.value.position == 3
    assert e.value.canonical == encode_event(WatchEvent("ADDED", raw, position=3), with_position=True)


def test_survivors_are_frozen_per_batch_and_thawed_for_a_full_collection() -> None:
    gc.unfreeze()
    collector = Collector(freeze_every=100, thaw_every=1000)
    try:
        collector.handled(99)
        assert gc.get_freeze_count() == 0
        kept = [[i] for i in range(50)]  # noqa: F841 - alive while frozen
        collector.handled(1)
        assert gc.get_freeze_count() > 0
        collector.handled(899)
        assert gc.get_freeze_count() > 0
        collector.handled(1)  # the thaw: everything back with the collector
        assert gc.get_freeze_count() == 0
    finally:
        collector.close()
    assert gc.get_freeze_count() == 0


def test_the_memory_bus_forgets_what_every_group_committed_and_keeps_offsets() -> None:
    async def go() -> None:
        bus = MemoryBus()
        lines = [encode_event(WatchEvent("ADDED", node(f"n{i}"), position=i), with_position=True) for i in range(10)]
        for line in lines:
            await bus.send("t", line)
        fast, slow = bus.consumer(["t"], "fast"), bus.consumer(["t"], "slow")
        for consumer, n in ((fast, 6), (slow, 4)):
            await consumer.start()
            await consumer.getmany(n)
            await consumer.commit()
        bus.forget("t", ["fast", "slow"])
        assert [m.offset for m in await bus.records("t")] == list(range(4, 10))
        assert [m.offset for m in await bus.history("t", "fast")] == [4, 5]  # as retention would
        assert [m.value for m in await slow.getmany(10)] == lines[4:]  # the rest, in order
        bus.forget("t", ["fast", "slow", "new"])  # a group that committed nothing holds everything kept
        assert len(await bus.records("t")) == 6

    asyncio.run(go())


def test_the_embedded_pipeline_forgets_the_lines_every_lane_has_read() -> None:
    params = PRESETS["small-churn"].replace(pods=300, duration=6000)
    events = [parse_event(encode_event(ev, with_position=True), n) for n, ev in enumerate(generate(params, 1), 1)]
    assert len(events) > 5000
    pipeline = Pipeline([Lane("default", parse_config(None)), Lane("other", parse_config(None), suffix=".other")])
    asyncio.run(pipeline.run(events))
    kept = asyncio.run(pipeline.bus.records(CLUSTER_EVENTS))
    # forgotten every 1,000 lines published, up to what both lanes committed by then
    assert pipeline.bus.forgotten[(CLUSTER_EVENTS, 0)] > 0
    assert len(kept) <= 2500
