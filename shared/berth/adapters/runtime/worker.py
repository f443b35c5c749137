"""The loop every stream service runs: take a batch, handle each event, produce, then commit.

Order of side effects per batch: store updates and produced records first, then what waits for the
broker's acknowledgement (on_flushed: the scorer's dedup marks), then the commit, so a
crash redelivers a batch rather than losing it (at-least-once); handlers are idempotent.
A message that cannot be read, or that makes the handler raise an InputError (bad input), goes to
the dead-letter topic with the reason, its position and its bytes, and the loop goes on. Any other
error is the handler's (a bug) or a dependency's: it is logged with the message's place and raised,
so the service exits with its batch uncommitted, and the message comes again after the restart.
"""

from __future__ import annotations

import asyncio
import logging
import traceback
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from berth.adapters.runtime.collector import COLLECTOR
from berth.core.api.watch import Event, UnreadableObject, decode_message
from berth.core.errors import InputError
from berth.core.pipeline.records import RejectRecord, encode_record
from berth.core.ports import DEAD_LETTER, Bus, Message

if TYPE_CHECKING:
    from berth.adapters.runtime.metrics import Metrics  # prometheus_client: the services', not an embedded replay's

log = logging.getLogger("berth.worker")


class StreamHandler(Protocol):
    """What the worker loop calls. Subclass it to take the no-op defaults: a simple handler only
    writes handle. (The defaults return None explicitly: a body of only a docstring is abstract.)"""

    async def handle(self, ev: Event) -> None: ...

    def apply_only(self, ev: Event) -> None:
        """A redelivered event this handler's checkpoint has seen (see on_assign): the state only."""
        return None

    async def on_assign(self, partitions: list[int]) -> Mapping[int, int]:
        """Before the first batch after this member's partitions change (a standby taking over): the
        partitions of the topic held. Returns, per partition, an offset below which redelivered
        events were handled already (a checkpoint past the commit): those go to apply_only."""
        return {}

    async def before_batch(self) -> None:
        """Before each batch is handled (the scorer checks that Redis still holds its state)."""
        return None

    async def on_flushed(self) -> None:
        """The broker acknowledged a batch's records; the commit comes next."""
        return None

    async def checkpoint(self, positions: dict[int, int]) -> None:
        """After on_flushed, before the commit: per partition held, the offset after the last event handled."""
        return None

    def kinds(self) -> frozenset[tuple[str, str]] | None:
        """Asked before each batch: the kinds handle reads (None: all). Messages of others are not
        decoded (their events carry no object), and one of them that would not decode is not
        dead-lettered here."""
        return None


@dataclass
class Progress:
    events: int = 0
    rejects: int = 0
    lag: int = -1  # -1 until the first batch has been handled


def dead_letter(service: str, msg: Message, reason: str, position: int | None = None) -> bytes:
    """The reason, where it came from, and the original bytes (as text)."""
    text = msg.value.decode("utf-8", "replace")
    source = f"{service}:{msg.topic}/{msg.partition}@{msg.offset}"
    at = msg.offset + 1 if position is None else position
    return encode_record(RejectRecord(source=source, position=at, reason=reason, text=text))


def _decoded(
    messages: list[Message], only: frozenset[tuple[str, str]] | None = None
) -> list[tuple[Message, Event | InputError]]:
    """The batch's events, each message's or why it cannot be read (only: the kinds to decode, the
    others left undecoded). The whole batch is decoded before the first event is handled: the
    decoder's code and caches stay warm from one message to the next (handling a pod runs the
    scheduler between them), and nothing else changes."""
    carried: list[Any] = [getattr(msg, "event", None) for msg in messages]
    if None not in carried:  # the in-memory bus's messages carry their events decoded
        return list(zip(messages, carried, strict=True))
    out: list[tuple[Message, Event | InputError]] = []
    # what is decoded lives until handled: no collection walks it meanwhile
    with COLLECTOR.building():
        for msg in messages:
            try:
                out.append((msg, decode_message(msg, only)))
            except InputError as e:
                out.append((msg, e))
    return out


def cannot_handle(e: InputError) -> str:
    """The dead-letter reason for bad input its handler found: one line."""
    return f"cannot handle: {e.line()}"


def failed(msg: Message, e: Exception) -> None:
    """A handler raised something else than bad input: one line with the message's place and the
    traceback, before the error ends the service. A broker or Redis gone is left to the service's
    own one line (berth_cli.main), without a traceback."""
    from berth.adapters.runtime.connect import unreachable  # the clients: not imported before a failure

    if unreachable(e) is None:
        trace = "".join(traceback.format_exception(e))
        place = {"topic": msg.topic, "partition": msg.partition, "offset": msg.offset}
        log.error("handler failed: the message stays uncommitted", extra={**place, "traceback": trace}, exc_info=e)


async def run(
    bus: Bus,
    topic: str,
    group: str,
    handler: StreamHandler,
    done: asyncio.Event,
    progress: Progress | None = None,
    dead_letter_topic: str = DEAD_LETTER,
    batch: int = 500,
    service: str = "",
    drain: bool = True,
    metrics: Metrics | None = None,
) -> None:
    """Consume until `done` is set: then, with drain, until nothing is left (the embedded pipeline);
    without, at once after the batch in hand (a service shutting down). The handler's methods say
    when each is called. A message is decoded here, once, unless it carries its decoded event (the
    in-memory bus): a batch's messages all before its first event is handled."""
    consumer = bus.consumer([topic], group)
    await consumer.start()
    progress = progress or Progress()
    held: frozenset[tuple[str, int]] = frozenset()
    passed: Mapping[int, int] = {}
    positions: dict[int, int] = {}
    try:
        while True:
            messages = await consumer.getmany(batch, timeout=0.05)
            if consumer.assignment() and consumer.assignment() != held:
                held = consumer.assignment()
                passed = await handler.on_assign(sorted(p for t, p in held if t == topic))
                positions = {}
            if done.is_set() and not drain:
                return
            if not messages:
                progress.lag = await consumer.lag()
                if done.is_set() and progress.lag == 0:
                    return
                continue
            await handler.before_batch()
            for msg, ev in _decoded(messages, handler.kinds()):
                if isinstance(ev, InputError):
                    progress.rejects += 1
                    if metrics is not None:
                        metrics.dead_letters.labels(metrics.service).inc()
                    at = ev.position if isinstance(ev, UnreadableObject) else None
                    await bus.send(dead_letter_topic, dead_letter(service or group, msg, ev.line(), at), msg.key)
                    continue
                try:
                    if passed and msg.offset < passed.get(msg.partition, 0):
                        handler.apply_only(ev)
                    else:
                        await handler.handle(ev)
                except InputError as e:  # bad input: dead-lettered, and the service goes on
                    progress.rejects += 1
                    if metrics is not None:
                        metrics.dead_letters.labels(metrics.service).inc()
                    at = ev.position or msg.offset + 1
                    await bus.send(dead_letter_topic, dead_letter(service or group, msg, cannot_handle(e), at), msg.key)
                except Exception as e:
                    failed(msg, e)
                    raise
                progress.events += 1
            await bus.flush()
            await handler.on_flushed()
            for msg in messages:
                positions[msg.partition] = msg.offset + 1
            await handler.checkpoint(positions)
            await consumer.commit()
            COLLECTOR.handled(len(messages))
            progress.lag = await consumer.lag()
            if metrics is not None:
                metrics.events.labels(metrics.service).inc(len(messages))
                metrics.lag.labels(metrics.service).set(progress.lag)
    finally:
        await consumer.stop()
