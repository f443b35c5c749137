"""Work the embedded pipeline's engines share: the decoded events and the collector's freezing."""

from __future__ import annotations

import asyncio
import gc

import pytest

from berth.adapters.collector import Collector
from berth.adapters.memory import MemoryBus
from berth.core.events import UnreadableObject, WatchEvent, decode_message, encode_event, parse_event
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
