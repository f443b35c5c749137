"""The embedded bus hands each reader the event the reader parsed, instead of parsing it again."""

from __future__ import annotations

import asyncio

import msgspec

from berth.adapters.memory import MemoryBus
from berth.core.events import encode_event, parse_event
from tests.builders import node


def test_parsed_event_is_handed_out_then_parsing_takes_over() -> None:
    async def go() -> None:
        bus = MemoryBus()
        ev = parse_event(b'{"ts":"2026-11-01T10:00:00Z","type":"ADDED","object":' + _raw() + b"}", 7)
        value = encode_event(ev, with_position=True)
        await bus.send("t", value, b"k", event=ev, readers=2)
        await bus.send("t", value, b"k")  # nothing kept: parsed from the bytes
        first, second = bus.topics["t"][0]
        assert bus.parse(first) is ev and bus.parse(first) is ev
        again = bus.parse(first)  # both reads used: parsed from the bytes, and equal
        assert again is not ev and again == ev
        assert bus.parse(second) == ev

    asyncio.run(go())


def _raw() -> bytes:
    return msgspec.json.encode(node("n1"))
