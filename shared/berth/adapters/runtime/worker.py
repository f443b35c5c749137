"""The loop every stream service runs: take a batch, handle each event, produce, then commit.

Order of side effects per batch: store updates and produced records first, then what waits for the
broker's acknowledgement (on_flushed: the scorer's dedup marks), then the commit, so a
crash redelivers a batch rather than losing it (at-least-once); handlers are idempotent.
A message that cannot be read, or that makes the handler raise an error of its data (POISON), goes to
the dead-letter topic with the reason, its position and its bytes, and the loop goes on.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from berth.adapters.runtime.collector import COLLECTOR
from berth.adapters.runtime.metrics import Metrics
from berth.core.api.watch import Event, UnreadableObject, decode_message
from berth.core.errors import InputError
from berth.core.pipeline.records import RejectRecord, encode_record
from berth.core.ports import DEAD_LETTER, Bus, Message

Handler = Callable[[Event], Awaitable[None]]


@dataclass
class Progress:
    events: int = 0
    rejects: int = 0
    lag: int = -1  # -1 until the first batch has been handled


# What a message can make a handler raise: errors in the data, never a dependency's (a store or a
# broker that went away raises its own errors, or OSError, and the service exits to be restarted).
POISON = (ValueError, ArithmeticError, LookupError, TypeError, AttributeError, RecursionError)


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


def cannot_handle(e: BaseException) -> str:
    """The dead-letter reason for an error a message made its handler raise: one line."""
    return f"cannot handle: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"


async def run(
    bus: Bus,
    topic: str,
    group: str,
    handle: Handler,
    done: asyncio.Event,
    progress: Progress | None = None,
    dead_letter_topic: str = DEAD_LETTER,
    batch: int = 500,
    service: str = "",
    drain: bool = True,
    metrics: Metrics | None = None,
    on_assign: Callable[[list[int]], Awaitable[Mapping[int, int] | None]] | None = None,
    on_flushed: Callable[[], Awaitable[None]] | None = None,
    before_batch: Callable[[], Awaitable[None]] | None = None,
    apply_only: Callable[[Event], object] | None = None,
    checkpoint: Callable[[dict[int, int]], Awaitable[None]] | None = None,
    kinds: Callable[[], frozenset[tuple[str, str]]] | None = None,
) -> None:
    """Consume until `done` is set: then, with drain, until nothing is left (the embedded pipeline);
    without, at once after the batch in hand (a service shutting down).

    on_assign runs before the first batch after this member's partitions change (a standby taking
    over): the service rebuilds its state from what the group committed, then goes on from there.
    It gets the partitions of `topic` held, and may return, per partition, an offset below which
    redelivered events were handled already (its checkpoint is past the commit): those go to
    apply_only, which changes only the state. checkpoint(positions) runs after on_flushed, before
    the commit: per partition held, the offset after the last event handled.
    before_batch runs before each batch is handled (the scorer checks that Redis still holds its state).
    kinds, asked before each batch: the kinds the handler reads; messages of others are not decoded
    (their events carry no object), and one of them that would not decode is not dead-lettered here.
    on_flushed runs once the broker has acknowledged a batch's records, before the commit.
    A message is decoded here, once, unless it carries its decoded event (the in-memory bus): a
    batch's messages all before its first event is handled."""
    consumer = bus.consumer([topic], group)
    await consumer.start()
    progress = progress or Progress()
    held: frozenset[tuple[str, int]] = frozenset()
    passed: Mapping[int, int] = {}
    positions: dict[int, int] = {}
    try:
        while True:
            messages = await consumer.getmany(batch, timeout=0.05)
            if on_assign is not None and consumer.assignment() and consumer.assignment() != held:
                held = consumer.assignment()
                passed = await on_assign(sorted(p for t, p in held if t == topic)) or {}
                positions = {}
            if done.is_set() and not drain:
                return
            if not messages:
                progress.lag = await consumer.lag()
                if done.is_set() and progress.lag == 0:
                    return
                continue
            if before_batch is not None:
                await before_batch()
            for msg, ev in _decoded(messages, None if kinds is None else kinds()):
                if isinstance(ev, InputError):
                    progress.rejects += 1
                    if metrics is not None:
                        metrics.dead_letters.labels(metrics.service).inc()
                    at = ev.position if isinstance(ev, UnreadableObject) else None
                    await bus.send(dead_letter_topic, dead_letter(service or group, msg, ev.line(), at), msg.key)
                    continue
                try:
                    if passed and msg.offset < passed.get(msg.partition, 0) and apply_only is not None:
                        apply_only(ev)
                    else:
                        await handle(ev)
                except POISON as e:  # the message, not a dependency: dead-lettered, and the service goes on
                    progress.rejects += 1
                    if metrics is not None:
                        metrics.dead_letters.labels(metrics.service).inc()
                    at = ev.position or msg.offset + 1
                    await bus.send(dead_letter_topic, dead_letter(service or group, msg, cannot_handle(e), at), msg.key)
                progress.events += 1
            await bus.flush()
            if on_flushed is not None:
                await on_flushed()
            if checkpoint is not None:
                for msg in messages:
                    positions[msg.partition] = msg.offset + 1
                await checkpoint(positions)
            await consumer.commit()
            COLLECTOR.handled(len(messages))
            progress.lag = await consumer.lag()
            if metrics is not None:
                metrics.events.labels(metrics.service).inc(len(messages))
                metrics.lag.labels(metrics.service).set(progress.lag)
    finally:
        await consumer.stop()
