"""The indexer as a faust-streaming app: a thin agent over the pure IndexerEngine.

Per batch (stream.take_events), in this order, so a crash at any point loses nothing and repeats harmlessly:
  1. Redis: the batch's operations, each guarded by its object's resourceVersion, and the watermark
     (Lua, one round trip);
  2. downstream: a watermark record (topic, partition, next offset) on berth.index-watermarks, and
     the node-usage table (changelog-backed) for changed nodes;
  3. commit: faust commits acknowledged offsets, after flushing the producer. The first event of
     each partition in a batch is held (its message's refcount raised) until 1 and 2 are done, so
     no offset of the batch can be committed before them.

The engine works out batch N+1 while batch N's writes are under way (Redis runs the Lua on its own
core); writes stay in order, one batch at a time.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
import time
import weakref
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import faust
import msgspec
from faust.exceptions import ConsumerNotStarted
from faust.streams import _current_event
from faust.types import TP

from berth.adapters import worker
from berth.adapters.collector import COLLECTOR
from berth.adapters.connect import kafka_bus, redis_client, unreachable
from berth.adapters.metrics import Metrics
from berth.adapters.redisindex import RedisIndex
from berth.core.amounts import parse_time
from berth.core.events import format_time, snapshot_events
from berth.core.pipeline.indexer import IndexerEngine, Op
from berth.core.ports import CLUSTER_EVENTS, INDEX_WATERMARKS, Message
from berth.settings import Settings
from berth_indexer.tuning import LeanMonitor, RawBytes, transport_for

log = logging.getLogger("berth.indexer")
BATCH = 1000
# Events faust may hold for the agent. When it is full faust pauses the partition until it has
# drained to 40%: each pause costs a fetch round trip, so with faust's 4096 a backlog paused every
# 0.1 s of work. 20 batches of the bench log's 1.2 kB events are 25 MB of values.
BUFFER = 20 * BATCH
WATERMARKS = INDEX_WATERMARKS


@dataclass
class Indexer:
    """What the agent does with one batch; the same code in tests (faust test_context) and for real."""

    engine: IndexerEngine
    index: RedisIndex
    metrics: Metrics
    send_watermark: Callable[[bytes], Awaitable[None]]
    dead_letter: Callable[[bytes], Awaitable[None]]  # sends a dead-letter record
    topic: str = CLUSTER_EVENTS  # where the events come from, for the dead-letter records
    caught_up: bool = False
    batches: int = 0
    marks: dict[int, int] = field(default_factory=dict)  # partition -> watermark written
    written_at: float = 0.0  # the producer's time stamp of the last event written (s since epoch)
    steps: deque[str] = field(default_factory=lambda: deque(maxlen=60))  # the latest side effects, in order
    highwater: Callable[[int], int | None] = lambda partition: None  # the partition's end (build() sets it)

    async def handle(self, values: list[tuple[bytes, int, int]], full: bool) -> dict[str, dict[str, int]]:
        """values: (message bytes, partition, offset). Returns the usage of nodes the batch changed."""
        return await self.write(self.prepare(values, full))

    def prepare(self, values: list[tuple[bytes, int, int]], full: bool) -> Prepared:
        """The engine's part of a batch: no I/O, so it can run while the previous batch is written."""
        ops: list[Op] = []
        rejected: list[bytes] = []
        marks: dict[int, int] = {}  # partition -> offset after its last event
        handle = self.engine.handle_raw
        self.engine.take_touched()
        for value, partition, offset in values:
            try:
                found, reject = handle(value, offset + 1)
            except worker.POISON as e:  # the message, not a dependency: dead-lettered, and the indexer goes on
                found, reject = [], (worker.cannot_handle(e), offset + 1)
            if reject is not None:
                msg = Message(self.topic, partition, offset, None, value)
                rejected.append(worker.dead_letter("indexer", msg, *reject))
            if found:
                ops += found
            marks[partition] = offset + 1
        ops += self.engine.end_batch()
        touched = self.engine.take_touched()
        usage = self.engine.usage(touched) if touched else {}
        clock = "" if self.engine.clock is None else format_time(self.engine.clock)
        return Prepared(ops, rejected, dict(sorted(marks.items())), len(values), full, usage, clock)

    async def write(self, batch: Prepared) -> dict[str, dict[str, int]]:
        """Dead letters, Redis, then the watermark record. Returns the usage of nodes the batch changed."""
        for record in batch.rejected:
            await self.dead_letter(record)
        marks = {(WATERMARKS, p): offset for p, offset in batch.watermarks.items()}
        await self.index.apply(batch.ops, marks, batch.clock)
        self.steps.append("redis")
        for partition, offset in batch.watermarks.items():
            await self.send_watermark(msgspec.json.encode({"partition": partition, "offset": offset}))
        self.steps.append("produce")
        self.metrics.events.labels("indexer").inc(batch.size)
        self.caught_up = not batch.full
        self.batches += 1
        self.marks.update(batch.watermarks)
        return batch.usage

    def lag(self, highwater: Callable[[int], int | None], now: float) -> tuple[int, float]:
        """(events, seconds) behind the topic's end: events on the partitions it has written that it
        has not written yet (highwater: the partition's end, None if not known), and how old the
        last event written is while any remain (a bound on the oldest one not written); (0, 0) when
        caught up."""
        events = 0
        for partition, mark in self.marks.items():
            end = highwater(partition)
            if end is not None:
                events += max(0, end - mark)
        seconds = max(0.0, now - self.written_at) if events and self.written_at else 0.0
        self.metrics.indexer_lag_events.set(events)
        self.metrics.indexer_lag_seconds.set(seconds)
        return events, seconds


@dataclass
class Prepared:
    """One batch as the engine worked it out, waiting to be written."""

    ops: list[Op]
    rejected: list[bytes]  # dead-letter records
    watermarks: dict[int, int]  # per partition in the batch, the offset after its last event
    size: int
    full: bool
    usage: dict[str, dict[str, int]]
    clock: str = ""  # the newest event time the engine has seen


def credentials(settings: Settings) -> Any:
    k = settings.kafka
    kw = k.client_kwargs()
    if k.security_protocol.startswith("SASL"):
        return faust.SASLCredentials(
            username=k.sasl_username,
            password=k.sasl_password.value,
            mechanism=k.sasl_mechanism,
            ssl_context=kw.get("ssl_context"),
        )
    if k.security_protocol == "SSL":
        return faust.SSLCredentials(kw["ssl_context"])
    return None


def new_app(settings: Settings, name: str, data_dir: str, tuned: bool = True) -> faust.App:
    """The indexer's faust app, before its topics, tables and agent. tuned=False leaves out
    berth_indexer.tuning: faust as shipped, the streaming benchmark's baseline."""
    tuning: dict[str, Any] = {"stream_buffer_maxsize": BUFFER, "Monitor": LeanMonitor} if tuned else {}
    app = faust.App(
        name,
        broker=[f"kafka://{b.strip()}" for b in settings.kafka.bootstrap_servers.split(",")],
        broker_credentials=credentials(settings),
        store="memory://",
        datadir=data_dir,
        topic_partitions=settings.topics.partitions,
        topic_replication_factor=1,
        broker_session_timeout=max(6, settings.kafka.session_timeout_ms // 1000),
        broker_heartbeat_interval=1,
        consumer_auto_offset_reset="earliest",
        web_enabled=False,
        producer_acks=-1,
        **tuning,
    )
    if tuned:
        app.transport = transport_for(app, settings.kafka.fetch_max_wait_ms)
    return app


def build(
    settings: Settings,
    metrics: Metrics,
    data_dir: str = "/tmp/berth-indexer",
    from_history: bool = True,
    send_watermark: Callable[[bytes], Awaitable[None]] | None = None,
    dead_letter: Callable[[bytes], Awaitable[None]] | None = None,
) -> tuple[faust.App, Indexer]:
    """The app and its Indexer. For faust's test_context, which has no broker: from_history=False
    skips the start-up rebuild, and send_watermark and dead_letter replace the producers."""
    t = settings.topics
    app = new_app(settings, settings.groups.indexer, data_dir)
    events = app.topic(t.cluster_events, schema=RawBytes(), partitions=t.partitions)
    watermarks = app.topic(WATERMARKS, value_type=bytes, value_serializer="raw", partitions=1)
    dead = app.topic(t.dead_letter, value_type=bytes, value_serializer="raw", partitions=1)
    usage = app.Table("node-usage", default=dict, partitions=t.partitions)
    client = redis_client(settings)

    sent: list[Awaitable[Any]] = []

    async def produce_watermark(value: bytes) -> None:
        # Sent before the batch is acknowledged; faust flushes the producer before it commits
        # offsets, so a batch is never committed ahead of its watermark. The previous batch's
        # delivery is awaited here: one in flight, and a failed one stops the agent.
        if sent:
            await sent.pop()
        sent.append(await watermarks.send(value=value))

    async def produce_dead_letter(record: bytes) -> None:
        await dead.send(value=record)
        metrics.dead_letters.labels("indexer").inc()

    indexer = Indexer(
        IndexerEngine(),
        RedisIndex(client, settings.redis.key_prefix),
        metrics,
        send_watermark or produce_watermark,
        dead_letter or produce_dead_letter,
        t.cluster_events,
    )
    rebuilt = not from_history
    # The batch being written. Kept out here: faust restarts the agent on a rebalance, and the new
    # one must wait for the old one's last write, so that writes stay in order.
    writing: asyncio.Future[None] | None = None

    async def finish(batch: list[faust.EventT[bytes]], held: list[faust.EventT[bytes]], prepared: Prepared) -> None:
        changed = await indexer.write(prepared)
        indexer.written_at = batch[-1].message.timestamp or 0.0
        indexer.lag(indexer.highwater, time.time())
        # Table writes take their changelog partition from the current event. This runs in its
        # own task, so setting it here cannot change what take_events files the next event under.
        _current_event.set(weakref.ref(batch[-1]))
        for node, amounts in changed.items():
            usage[node] = amounts
        indexer.steps.append("table")
        for event in held:
            event.ack()  # the batch's offsets may be committed now
        settled.update(event.message.tp for event in held)

    crashing: set[asyncio.Future[None]] = set()
    settled: set[Any] = set()  # partitions (faust TPs) with a batch written by this process

    def failed(done: asyncio.Future[None]) -> None:
        exc = None if done.cancelled() else done.exception()
        if exc is None:
            return
        # Its events stay unacknowledged: nothing of the batch is committed, whatever ends the worker.
        gone = unreachable(exc)
        if gone is not None:  # Redis (past its client's backoff) or the broker
            give_up(gone)
        log.error("indexer write failed", exc_info=exc)
        crashing.add(asyncio.ensure_future(app.crash(exc)))

    @app.agent(events)
    async def index(stream: faust.StreamT[bytes]) -> None:
        nonlocal rebuilt, writing
        async for batch in stream.take_events(BATCH, within=0.2):  # type: ignore[attr-defined]
            if not rebuilt:  # what this group committed before: rebuild the in-memory view from it
                try:
                    source, n = await rebuild(settings, indexer.engine, indexer.index)
                except Exception as e:  # Redis or the broker gone: one line and exit 1, as a failed write
                    if unreachable(e) is None:
                        raise
                    give_up(str(unreachable(e)))
                rebuilt = True
                log.info(f"state rebuilt from {source}", extra={"source": source, "count": n})
            # The first event per partition holds back the commit: faust commits up to the first
            # unacknowledged offset. But before its first commit of a partition (a fresh group)
            # faust skips a gap at the head, so until a batch of a partition is written here,
            # every event of it is held.
            first = {e.message.tp: e for e in reversed(batch)}
            held = [e for e in batch if e.message.tp not in settled or first[e.message.tp] is e]
            for event in held:
                event.message.incref()  # take_events' own ack leaves it unacknowledged
            prepared = indexer.prepare(
                [(e.value, e.message.partition, e.message.offset) for e in batch], len(batch) >= BATCH
            )
            if writing is not None:
                await writing
            writing = asyncio.ensure_future(finish(batch, held, prepared))
            writing.add_done_callback(failed)
            COLLECTOR.handled(len(batch))  # freeze what the engine kept (berth.adapters.collector)

    def highwater(partition: int) -> int | None:
        try:
            end = app.consumer.highwater(TP(t.cluster_events, partition))
        except (AttributeError, KeyError, ConsumerNotStarted):  # not consuming yet
            return None
        return int(end) if end is not None else None

    indexer.highwater = highwater
    return app, indexer


def give_up(gone: str) -> None:
    """One line and exit 1, as every service ends; faust's own shutdown would log the error again
    and again, with tracebacks."""
    logging.shutdown()
    print(f"berth indexer: cannot go on: {gone}", file=sys.stderr, flush=True)
    os._exit(1)


async def rebuild(settings: Settings, engine: IndexerEngine, index: RedisIndex) -> tuple[str, int]:
    """The engine's view from what Redis holds (its objects), else by replaying what the group
    committed (no writes either way: Redis has it already). Returns (source, objects or events).
    Events the group committed below the watermarks come again and change nothing (resourceVersions)."""
    snap = await index.snapshot(WATERMARKS, settings.topics.partitions)
    if snap.watermarks:
        events, _ = snapshot_events(snap.objects)
        engine.clock = parse_time(snap.clock) if snap.clock else None
        for ev in events:
            engine.handle(ev)
        engine.end_batch()
        engine.take_touched()
        return "redis", len(events)
    return "history", await replay(settings, engine)


async def replay(settings: Settings, engine: IndexerEngine) -> int:
    """Replay what the group committed into the engine."""
    bus = kafka_bus(settings, "indexer-rebuild")
    await bus.start()
    try:
        history = await bus.history(settings.topics.cluster_events, settings.groups.indexer)
    finally:
        await bus.stop()
    for msg in history:
        with contextlib.suppress(*worker.POISON):  # it went to the dead-letter topic the first time
            engine.handle_raw(msg.value, msg.offset + 1)
    engine.end_batch()
    return len(history)
