"""The worker loop: a message that cannot be read, or that the handler finds bad, is dead-lettered
and the loop goes on; any other error the handler raises (a bug) ends the loop with the batch
uncommitted, so the group gets the message again."""

from __future__ import annotations

import asyncio
import json
import logging
import uuid

import msgspec
import pytest

from berth.adapters.bus.kafka import KafkaBus
from berth.adapters.bus.memory import MemoryBus
from berth.adapters.runtime.bootstrap import rebuild
from berth.adapters.runtime.worker import StreamHandler, run
from berth.core.api.watch import Event
from berth.core.errors import InputError
from berth.core.ports import DEAD_LETTER
from tests.builders import node
from tests.servers import Server

GOOD = json.dumps({"type": "ADDED", "object": node("n1")}).encode()
BOOM = GOOD.replace(b'"n1"', b'"boom"', 1)
BAD = [
    ("deep nesting", b'{"type": "ADDED", "object": ' + b"[" * 3000 + b"]" * 3000 + b"}", "nested too deeply"),
    ("not UTF-8 in a string", GOOD.replace(b'"n1"', b'"\xff"', 1), "not UTF-8"),
    ("a 5,000-digit quantity", GOOD.replace(b'"cpu": "8"', b'"cpu": "1' + b"0" * 5000 + b'"', 1), "at most 100"),
    ("ts past year 9999", b'{"ts": "9999-12-31T23:59:59-23:59", ' + GOOD[1:], "outside years 0001..9999"),
    ("the handler finds it bad", BOOM, "cannot handle: Node boom: spec: bad"),
]


def bad() -> InputError:
    return InputError("Node boom", "spec", "bad")


class Handler(StreamHandler):
    """Notes the names it handles; a node named boom makes it raise `error` (None: handled too).
    `done` is set once `until` events are handled."""

    def __init__(self, error: Exception | None, until: int = 0) -> None:
        self.error = error
        self.until = until
        self.handled: list[str] = []
        self.done = asyncio.Event()

    async def handle(self, ev: Event) -> None:
        if ev.model.name == "boom" and self.error is not None:
            raise self.error
        self.handled.append(ev.model.name)
        if len(self.handled) == self.until:
            self.done.set()


async def _run(values: list[bytes]) -> tuple[list[str], list[dict[str, object]]]:
    bus = MemoryBus()
    await bus.create_topics({"events": 1})
    for v in values:
        await bus.send("events", v)
    handler = Handler(bad())
    done = asyncio.Event()
    done.set()
    await run(bus, "events", "g", handler, done, service="test")
    dead = [msgspec.json.decode(m.value) for m in bus.topics.get(DEAD_LETTER, [[]])[0]]
    return handler.handled, dead


@pytest.mark.parametrize(("value", "reason"), [c[1:] for c in BAD], ids=[c[0] for c in BAD])
def test_bad_input_is_dead_lettered_at_its_position_and_the_loop_goes_on(value: bytes, reason: str) -> None:
    handled, dead = asyncio.run(_run([GOOD, value, GOOD]))
    assert handled == ["n1", "n1"]
    assert len(dead) == 1 and reason in str(dead[0]["reason"])
    assert dead[0]["position"] == 2


def test_a_batch_is_decoded_first_and_its_side_effects_keep_message_order() -> None:
    """The loop decodes a whole batch before handling it: handled events and dead letters (unreadable,
    or found bad by the handler) still come one message after another, as if each were decoded just
    before its turn."""
    named = [GOOD.replace(b'"n1"', f'"n{i}"'.encode(), 1) for i in range(4)]
    values = [named[0], b"junk", named[1], BOOM, named[2], BAD[0][1], named[3]]
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

        class Logging(Handler):
            async def handle(self, ev: Event) -> None:
                await super().handle(ev)
                log.append(ev.model.name)

        done = asyncio.Event()
        done.set()
        await run(bus, "events", "g", Logging(bad()), done, service="test", batch=len(values))

    asyncio.run(go())
    assert log == ["n0", "dead 2", "n1", "dead 4", "n2", "dead 6", "n3"]


def test_a_restart_rebuilds_past_a_message_the_handler_found_bad() -> None:
    """The rebuild replays what the group committed, bad input included: skipped again, no crash loop.
    Any other error is not skipped: the message was never committed past."""

    async def rebuilt(error: Exception) -> list[str]:
        bus = MemoryBus()
        await bus.create_topics({"events": 1})
        for v in [GOOD, BOOM, b"junk", GOOD]:
            await bus.send("events", v)
        bus.committed[("g", "events", 0)] = 4
        seen: list[str] = []

        def handle(ev: Event) -> None:
            if ev.model.name == "boom":
                raise error
            seen.append(ev.model.name)

        assert await rebuild(bus, "events", "g", handle) == 2
        return seen

    assert asyncio.run(rebuilt(bad())) == ["n1", "n1"]
    with pytest.raises(RuntimeError, match="a bug"):
        asyncio.run(rebuilt(RuntimeError("a bug")))


def test_a_resource_version_of_unicode_digits_is_dead_lettered_not_a_crash() -> None:
    """issue 20: a resourceVersion of `²` crash-looped the scorer. Since issue 34 a resourceVersion that is
    not a decimal uint64 (the API server's ParseResourceVersion) is bad input: dead-lettered, the rest handled."""
    odd = GOOD.replace(b'"name": "n1"', '"name": "n1", "resourceVersion": "\u00b2"'.encode(), 1)
    assert odd != GOOD
    handled, dead = asyncio.run(_run([GOOD, odd, GOOD]))
    assert handled == ["n1", "n1"] and len(dead) == 1
    assert "metadata.resourceVersion: '\u00b2' is not a decimal uint64" in dead[0]["reason"]


def test_before_batch_runs_before_each_batch_is_handled() -> None:
    """The scorer checks that Redis still holds its state there, before anything is decided."""

    async def go() -> list[str]:
        bus = MemoryBus()
        await bus.create_topics({"events": 1})
        for _ in range(5):
            await bus.send("events", GOOD)
        steps: list[str] = []

        class Checking(StreamHandler):
            async def handle(self, ev: Event) -> None:
                steps.append("handle")

            async def before_batch(self) -> None:
                steps.append("check")

        done = asyncio.Event()
        done.set()
        await run(bus, "events", "g", Checking(), done, batch=2)
        return steps

    assert asyncio.run(go()) == ["check", "handle", "handle", "check", "handle", "handle", "check", "handle"]


def test_a_handler_bug_ends_the_loop_uncommitted_and_is_not_dead_lettered() -> None:
    """A bug is not the message's fault (as kopf and quix-streams see it): it is raised."""

    async def go() -> None:
        bus = MemoryBus()
        await bus.create_topics({"events": 1})
        for v in [GOOD, BOOM, GOOD]:
            await bus.send("events", v)
        done = asyncio.Event()
        done.set()
        with pytest.raises(ValueError, match="a bug"):
            await run(bus, "events", "g", Handler(ValueError("a bug")), done, service="test")
        assert DEAD_LETTER not in bus.topics and bus.committed == {}

    asyncio.run(go())


@pytest.mark.parametrize("error", [bad(), ValueError("a bug"), RuntimeError("a bug")], ids=repr)
def test_on_the_broker_bad_input_is_dead_lettered_and_a_bug_comes_again(
    broker: Server, error: Exception, caplog: pytest.LogCaptureFixture
) -> None:
    """A real broker (Tansu). Bad input: dead-lettered with its reason, the batch committed, no error
    logged. A bug: it propagates out of the loop after one log line saying where, nothing is
    committed, and the next member of the group gets the message again."""
    events, dead, group = f"test.{uuid.uuid4().hex[:8]}", f"test.dead.{uuid.uuid4().hex[:8]}", "g"

    async def go() -> None:
        bus = KafkaBus(broker.address, client_id="test-worker", session_timeout_ms=6000)
        await bus.start()
        try:
            await bus.create_topics({events: 1, dead: 1})
            for v in [GOOD, BOOM, GOOD]:
                await bus.send(events, v)
            await bus.flush()
            first = Handler(error, until=2)
            loop = run(bus, events, group, first, first.done, dead_letter_topic=dead, drain=False)
            if isinstance(error, InputError):
                await asyncio.wait_for(loop, 60)
                assert first.handled == ["n1", "n1"]
                assert await bus.committed_offsets(events, group) == {0: 3}
                (letter,) = await bus.records(dead)
                assert msgspec.json.decode(letter.value)["reason"] == "cannot handle: Node boom: spec: bad"
                return
            with pytest.raises(type(error), match="a bug"):
                await asyncio.wait_for(loop, 60)
            assert first.handled == ["n1"]
            assert await bus.committed_offsets(events, group) == {} and await bus.records(dead) == []
            again = Handler(None, until=3)  # a second member of the same group
            await asyncio.wait_for(run(bus, events, group, again, again.done, dead_letter_topic=dead, drain=False), 60)
            assert again.handled == ["n1", "boom", "n1"]
            assert await bus.committed_offsets(events, group) == {0: 3}
        finally:
            await bus.stop()

    with caplog.at_level(logging.ERROR, "berth.worker"):
        asyncio.run(go())
    lines = [r for r in caplog.records if r.name == "berth.worker"]
    if isinstance(error, InputError):
        assert lines == []
        return
    (line,) = lines
    assert (line.topic, line.partition, line.offset) == (events, 0, 1)
    assert line.traceback.startswith("Traceback") and f"{type(error).__name__}: a bug" in line.traceback


def test_a_consumer_of_an_ended_memory_bus_does_not_wait_for_more() -> None:
    """The embedded pipeline ends its bus once the log is read: a consumer with nothing left gets an
    empty batch at once, where it waited out its timeout before (each replay's last batch), and one
    woken while waiting returns too."""

    async def go() -> list[list[str]]:
        bus = MemoryBus()
        await bus.create_topics({"events": 1})
        await bus.send("events", GOOD)
        consumer = bus.consumer(["events"], "g")
        await consumer.start()
        got = [[m.value.decode()[:8] for m in await consumer.getmany(10, timeout=3600)]]
        waiting = asyncio.create_task(consumer.getmany(10, timeout=3600))
        await asyncio.sleep(0)
        bus.end()
        got.append(await asyncio.wait_for(waiting, 20))
        got.append(await asyncio.wait_for(consumer.getmany(10, timeout=3600), 20))
        return got

    assert asyncio.run(go()) == [['{"type":'], [], []]
