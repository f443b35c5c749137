"""The worker loop: a message that cannot be read or handled is dead-lettered, and the loop goes on."""

from __future__ import annotations

import asyncio
import json

import msgspec
import pytest

from berth.adapters.bus.memory import MemoryBus
from berth.adapters.runtime.connect import rebuild
from berth.adapters.runtime.worker import StreamHandler, run
from berth.core.api.watch import Event
from berth.core.ports import DEAD_LETTER
from tests.builders import node

GOOD = json.dumps({"type": "ADDED", "object": node("n1")}).encode()
POISON = [
    ("deep nesting", b'{"type": "ADDED", "object": ' + b"[" * 3000 + b"]" * 3000 + b"}", "nested too deeply"),
    ("not UTF-8 in a string", GOOD.replace(b'"n1"', b'"\xff"', 1), "not UTF-8"),
    ("a 5,000-digit quantity", GOOD.replace(b'"cpu": "8"', b'"cpu": "1' + b"0" * 5000 + b'"', 1), "at most 100"),
    ("ts past year 9999", b'{"ts": "9999-12-31T23:59:59-23:59", ' + GOOD[1:], "outside years 0001..9999"),
    ("the handler raises", GOOD.replace(b'"n1"', b'"boom"', 1), "cannot handle: OverflowError: boom"),
]


async def _run(values: list[bytes]) -> tuple[list[str], list[dict[str, object]]]:
    bus = MemoryBus()
    await bus.create_topics({"events": 1})
    for v in values:
        await bus.send("events", v)
    handled: list[str] = []

    class Handler(StreamHandler):
        async def handle(self, ev: Event) -> None:
            if ev.model.name == "boom":
                raise OverflowError("boom")
            handled.append(ev.model.name)

    done = asyncio.Event()
    done.set()
    await run(bus, "events", "g", Handler(), done, service="test")
    dead = [msgspec.json.decode(m.value) for m in bus.topics.get(DEAD_LETTER, [[]])[0]]
    return handled, dead


@pytest.mark.parametrize(("value", "reason"), [c[1:] for c in POISON], ids=[c[0] for c in POISON])
def test_poison_is_dead_lettered_at_its_position_and_the_loop_goes_on(value: bytes, reason: str) -> None:
    handled, dead = asyncio.run(_run([GOOD, value, GOOD]))
    assert handled == ["n1", "n1"]
    assert len(dead) == 1 and reason in str(dead[0]["reason"])
    assert dead[0]["position"] == 2


def test_a_batch_is_decoded_first_and_its_side_effects_keep_message_order() -> None:
    """The loop decodes a whole batch before handling it: handled events and dead letters (unreadable
    or poison) still come one message after another, as if each were decoded just before its turn."""
    named = [GOOD.replace(b'"n1"', f'"n{i}"'.encode(), 1) for i in range(4)]
    values = [named[0], b"junk", named[1], POISON[-1][1], named[2], POISON[0][1], named[3]]
    log: list[str] = []

    class Logged(MemoryBus):
        async def send(self, topic: str, value: bytes, key: bytes | None = None, event: Event | None = None) -> None:
            if topic == DEAD_LETTER:
                log.append(f"dead {msgspec.json.decode(value)['position']}")
            await super().send(topic, value, key, event)

    async def go() -> None:
        bus = Logged()
        await bus.create_topics({"events": 1})
        for v in values:
            await bus.send("events", v)

        class Handler(StreamHandler):
            async def handle(self, ev: Event) -> None:
                if ev.model.name == "boom":
                    raise OverflowError("boom")
                log.append(ev.model.name)

        done = asyncio.Event()
        done.set()
        await run(bus, "events", "g", Handler(), done, service="test", batch=len(values))

    asyncio.run(go())
    assert log == ["n0", "dead 2", "n1", "dead 4", "n2", "dead 6", "n3"]


def test_a_restart_rebuilds_past_a_message_that_made_the_handler_raise() -> None:
    """The rebuild replays what the group committed, poison included: skipped again, no crash loop."""

    async def rebuilt() -> list[str]:
        bus = MemoryBus()
        await bus.create_topics({"events": 1})
        for v in [GOOD, POISON[-1][1], b"junk", GOOD]:
            await bus.send("events", v)
        bus.committed[("g", "events", 0)] = 4
        seen: list[str] = []

        def handle(ev: Event) -> None:
            if ev.model.name == "boom":
                raise OverflowError("boom")
            seen.append(ev.model.name)

        assert await rebuild(bus, "events", "g", handle) == 2
        return seen

    assert asyncio.run(rebuilt()) == ["n1", "n1"]


def test_a_resource_version_of_unicode_digits_is_handled_not_a_crash() -> None:
    """issue 20: a resourceVersion of `²` crash-looped the scorer; kube's resourceVersion is opaque."""
    odd = GOOD.replace(b'"name": "n1"', '"name": "n1", "resourceVersion": "\u00b2"'.encode(), 1)
    assert odd != GOOD
    handled, dead = asyncio.run(_run([GOOD, odd, GOOD]))
    assert handled == ["n1", "n1", "n1"] and dead == []


def test_before_batch_runs_before_each_batch_is_handled() -> None:
    """The scorer checks that Redis still holds its state there, before anything is decided."""

    async def go() -> list[str]:
        bus = MemoryBus()
        await bus.create_topics({"events": 1})
        for _ in range(5):
            await bus.send("events", GOOD)
        steps: list[str] = []

        class Handler(StreamHandler):
            async def handle(self, ev: Event) -> None:
                steps.append("handle")

            async def before_batch(self) -> None:
                steps.append("check")

        done = asyncio.Event()
        done.set()
        await run(bus, "events", "g", Handler(), done, batch=2)
        return steps

    assert asyncio.run(go()) == ["check", "handle", "handle", "check", "handle", "handle", "check", "handle"]
