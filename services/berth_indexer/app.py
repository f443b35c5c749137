"""The indexer as a faust-streaming app: a thin agent over the pure IndexerEngine.

Per batch (stream.take_events), in this order, so a crash at any point loses nothing and repeats harmlessly:
  1. Redis: the batch's operations, each guarded by its object's resourceVersion, and the watermark
     (Lua, one round trip);
  2. downstream: a watermark record (topic, partition, next offset) on berth.index-watermarks, and
     the node-usage table (changelog-backed) for changed nodes;
  3. commit: faust commits acknowledged offsets, after flushing the producer. The first two events
     of each partition in a batch are held (their messages' refcount raised) until 1 and 2 are
     done, so no offset of the batch can be committed before them.

The engine works out batch N+1 while batch N's writes are under way (Redis runs the Lua on its own
core); writes stay in order, one batch at a time.

Redis losing the index (a restart without persistence, a failover to a replica that lagged) is
noticed at start, by a watermark behind what the group committed, and on every write, by the epoch
key or a watermark not being what this process wrote (berth.adapters.store.epoch). The index is then
written again from the topic, from where Redis still has it, before the batch goes on.
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
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import faust
import msgspec
from faust.exceptions import ConsumerNotStarted
from faust.streams import _current_event
from faust.types import TP

from berth.adapters.runtime import worker
from berth.adapters.runtime.collector import COLLECTOR
from berth.adapters.runtime.connect import kafka_bus, redis_client, unreachable
from berth.adapters.runtime.metrics import Metrics
from berth.adapters.store.epoch import index_behind
from berth.adapters.store.redisindex import IndexLost, RedisIndex
from berth.core.api.meta.normalise import parse_time
from berth.core.api.watch import format_time
from berth.core.errors import InputError
from berth.core.pipeline.indexer import IndexerEngine, Op
from berth.core.pipeline.relist import snapshot_events
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
    # The topic's messages before the given offset of each partition, from the start: what the
    # index is written again from when Redis lost it (None: it cannot be, IndexLost ends the worker).
    read_topic: Callable[[dict[int, int]], Awaitable[list[Message]]] | None = None
    epoch: str | None = None  # the token of the index in Redis, once claimed (berth.adapters.store.epoch)
    written: dict[int, int] = field(default_factory=dict)  # partition -> watermark Redis must have at least
    caught_up: bool = False
    batches: int = 0
    marks: dict[int, int] = field(default_factory=dict)  # partition -> watermark written
    written_at: float = 0.0  # the producer's time stamp of the last event written (s since epoch)
    steps: deque[str] = field(default_factory=lambda: deque(maxlen=60))  # the latest side effects, in order
    highwater: Callable[[int], int | None] = lambda partition: None  # the partition's end (build() sets it)
    # Per partition, the offset of the next event the index needs (rebuild() sets it, each event
    # handled raises it), and how to read a partition's events [start, end) when faust left some out.
    needed: dict[int, int] = field(default_factory=dict)
    read_range: Callable[[int, int, int], Awaitable[list[Message]]] | None = None
    refetched: int = 0  # events faust left out, read from the topic

    async def in_order(self, values: list[tuple[bytes, int, int]]) -> list[tuple[bytes, int, int]]:
        """A batch as faust delivered it ((message bytes, partition, offset)), made whole: each
        partition's events from where the index stands, each once, in order. Around its start-up
        recovery faust can deliver events twice and leave others out (records fetched before it
        seeks back to the committed offset are still delivered, and move its read position past the
        ones it dropped). An event before `needed` is in the index already and is dropped; events left
        out are read from the topic, so that no watermark passes an event that was not indexed."""
        out: list[tuple[bytes, int, int]] = []
        for value, partition, offset in values:
            want = self.needed.get(partition)
            if want is not None and offset < want:
                continue
            if want is not None and offset > want and self.read_range is not None:
                missing = await self.read_range(partition, want, offset)
                log.warning(
                    "events left out by the consumer: read from the topic",
                    extra={"partition": partition, "start": want, "end": offset, "count": len(missing)},
                )
                self.refetched += len(missing)
                out += [(m.value, partition, m.offset) for m in missing]
            out.append((value, partition, offset))
            self.needed[partition] = offset + 1
        return out

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
            except InputError as e:  # bad input: dead-lettered, and the indexer goes on
                found, reject = [], (worker.cannot_handle(e), offset + 1)
            except Exception as e:  # a bug: logged here, and the agent ends the worker
                worker.failed(Message(self.topic, partition, offset, None, value), e)
                raise
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
        if self.epoch is None:
            self.epoch = await self.index.claim_epoch()
        marks = {(WATERMARKS, p): offset for p, offset in batch.watermarks.items()}
        try:
            await self.index.apply(batch.ops, marks, batch.clock, epoch=self.epoch, expect=self.expected())
        except IndexLost:  # this batch's ops were worked out against the index Redis no longer has
            await self.recover(batch.watermarks)
        self.written.update(batch.watermarks)
        self.steps.append("redis")
        for partition, offset in batch.watermarks.items():
            await self.send_watermark(msgspec.json.encode({"partition": partition, "offset": offset}))
        self.steps.append("produce")
        self.metrics.events.labels("indexer").inc(batch.size)
        self.caught_up = not batch.full
        self.batches += 1
        self.marks.update(batch.watermarks)
        return batch.usage

    def expected(self) -> dict[tuple[str, int], int]:
        """The watermarks Redis must have at least: what this process wrote or found there."""
        return {(WATERMARKS, p): offset for p, offset in self.written.items()}

    def lost(self, behind: dict[int, int]) -> None:
        """One line and the metric: Redis lost (part of) the index. behind: partition -> offset it has."""
        log.warning(
            "Redis lost the index: writing it again from the topic",
            extra={"partitions": {str(p): offset for p, offset in behind.items()}},
        )
        self.metrics.redis_lost.labels("indexer").inc()

    async def recover(self, upto: dict[int, int]) -> None:
        """Redis lost the index while this process ran: write it again from the topic, up to what this
        process has written and `upto` (the batch in hand), from where Redis still has each partition.
        A fresh engine works it out; the agent's own engine is already past that point."""
        if self.read_topic is None:
            raise IndexLost("Redis lost the index, and this indexer cannot read the topic to write it again")
        while True:
            targets = {**self.written, **upto}
            found = await self.index.watermarks(WATERMARKS, sorted(targets))
            self.lost(index_behind(found, targets))
            self.epoch = await self.index.claim_epoch()
            messages = await self.read_topic(targets)
            try:
                await restore(IndexerEngine(), self.index, messages, found, self.epoch)
            except IndexLost:  # lost again meanwhile: once more
                continue
            self.written.update(targets)
            return

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

    async def read_topic(ends: dict[int, int], start: dict[int, int] | None = None) -> list[Message]:
        bus = kafka_bus(settings, "indexer-rebuild")
        await bus.start()
        try:
            return await bus.read_until(t.cluster_events, ends, start)
        finally:
            await bus.stop()

    async def read_range(partition: int, start: int, end: int) -> list[Message]:
        return await read_topic({partition: end}, {partition: start})

    indexer = Indexer(
        IndexerEngine(),
        RedisIndex(client, settings.redis.key_prefix),
        metrics,
        send_watermark or produce_watermark,
        dead_letter or produce_dead_letter,
        t.cluster_events,
        read_topic if from_history else None,
        read_range=read_range if from_history else None,
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
        end_if_unreachable(exc)
        log.error("indexer write failed", exc_info=exc)
        crashing.add(asyncio.ensure_future(app.crash(exc)))

    @app.agent(events)
    async def index(stream: faust.StreamT[bytes]) -> None:
        nonlocal rebuilt, writing
        async for batch in stream.take_events(BATCH, within=0.2):  # type: ignore[attr-defined]
            if not rebuilt:  # what this group committed before: rebuild the in-memory view from it
                try:
                    source, n = await rebuild(settings, indexer)
                except Exception as exc:  # Redis away (it is read now) or the broker: as a failed write
                    end_if_unreachable(exc)
                    raise
                rebuilt = True
                log.info(f"state rebuilt from {source}", extra={"source": source, "count": n})
            # The first two events per partition hold back the commit: faust commits the first run
            # of acknowledged offsets unless it starts more than one offset past its commit, so one
            # event held there is passed over. Before its first commit of a partition (a fresh
            # group) faust skips any gap at the head, so until a batch of a partition is written
            # here, every event of it is held.
            seen: dict[TP, int] = {}
            held = []
            for e in batch:
                tp = e.message.tp
                seen[tp] = seen.get(tp, 0) + 1
                if tp not in settled or seen[tp] <= 2:
                    held.append(e)
            for event in held:
                event.message.incref()  # take_events' own ack leaves it unacknowledged
            values = await indexer.in_order([(e.value, e.message.partition, e.message.offset) for e in batch])
            try:
                prepared = indexer.prepare(values, len(batch) >= BATCH)
            except Exception as exc:  # not the data's: the worker ends, the batch held back from the commit
                await app.crash(exc)
                return
            if writing is not None:
                await writing
            writing = asyncio.ensure_future(finish(batch, held, prepared))
            writing.add_done_callback(failed)
            COLLECTOR.handled(len(batch))  # freeze what the engine kept (berth.adapters.runtime.collector)

    def highwater(partition: int) -> int | None:
        try:
            end = app.consumer.highwater(TP(t.cluster_events, partition))
        except (AttributeError, KeyError, ConsumerNotStarted):  # not consuming yet
            return None
        return int(end) if end is not None else None

    indexer.highwater = highwater
    return app, indexer


def end_if_unreachable(exc: BaseException) -> None:
    """Redis (past its client's backoff) or the broker gone: one line and exit 1, as every service
    ends; faust's own shutdown would log the error again and again, with tracebacks."""
    gone = unreachable(exc)
    if gone is not None:
        logging.shutdown()
        print(f"berth indexer: cannot go on: {gone}", file=sys.stderr, flush=True)
        os._exit(1)


async def rebuild(settings: Settings, indexer: Indexer) -> tuple[str, int]:
    """The engine's view at start. From the objects Redis holds when its index is as far as the group
    committed (no writes: Redis has it already; events the group committed below the watermarks
    come again and change nothing, by resourceVersion). Else, by replaying what the group
    committed; where Redis's index is behind that (Redis lost it), those events are written to
    Redis again too. Returns (source, objects or events)."""
    topic, group = settings.topics.cluster_events, settings.groups.indexer
    bus = kafka_bus(settings, "indexer-rebuild")
    await bus.start()
    try:
        committed = await bus.committed_offsets(topic, group)
        if not index_behind(await indexer.index.watermarks(WATERMARKS, sorted(committed)), committed):
            snap = await indexer.index.snapshot(WATERMARKS, settings.topics.partitions)
            if snap.watermarks:
                events, _ = snapshot_events(snap.objects)
                engine = indexer.engine
                engine.clock = parse_time(snap.clock) if snap.clock else None
                for ev in events:
                    engine.handle(ev)
                engine.end_batch()
                engine.take_touched()
                indexer.epoch = await indexer.index.claim_epoch()
                indexer.written = dict(snap.watermarks)
                indexer.needed = dict(snap.watermarks)
                return "redis", len(events)
        history = await bus.history(topic, group)
    finally:
        await bus.stop()
    ends: dict[int, int] = {}
    for msg in history:
        ends[msg.partition] = msg.offset + 1
    while True:
        found = await indexer.index.watermarks(WATERMARKS, sorted(ends))
        behind = index_behind(found, ends)
        if behind:
            indexer.lost(behind)
        indexer.epoch = await indexer.index.claim_epoch()
        indexer.engine = IndexerEngine()
        try:
            await restore(indexer.engine, indexer.index, history, {**ends, **behind}, indexer.epoch)
        except IndexLost:  # lost again meanwhile: once more
            continue
        indexer.written = ends
        indexer.needed = dict(ends)
        return "history", len(history)


async def restore(
    engine: IndexerEngine, index: RedisIndex, messages: list[Message], start: Mapping[int, int], epoch: str
) -> int:
    """Feed a topic's messages (from its start, in partition order) to the engine; from start[p] on
    they are written to Redis too, in batches, each with its watermarks. Returns how many were written.
    Redis's index must be what these messages made of it up to start[p] (nothing, at 0)."""
    later: list[Message] = []
    for msg in messages:
        if msg.offset < start.get(msg.partition, 0):
            _ops_of(engine, msg)  # Redis has them already
        else:
            later.append(msg)
    done = engine.end_batch()  # the index as it was when the last of those was written
    if not later:
        return 0
    clock = "" if engine.clock is None else format_time(engine.clock)
    if done:
        await index.apply(done, None, clock, epoch=epoch)
    for i in range(0, len(later), BATCH):
        ops: list[Op] = []
        marks: dict[tuple[str, int], int] = {}
        for msg in later[i : i + BATCH]:
            ops += _ops_of(engine, msg)
            marks[(WATERMARKS, msg.partition)] = msg.offset + 1
        clock = "" if engine.clock is None else format_time(engine.clock)
        await index.apply(ops + engine.end_batch(), marks, clock, epoch=epoch)
    return len(later)


def _ops_of(engine: IndexerEngine, msg: Message) -> list[Op]:
    """A message's operations; none for one that was dead-lettered the first time."""
    with contextlib.suppress(InputError):
        return engine.handle_raw(msg.value, msg.offset + 1)[0]
    return []
