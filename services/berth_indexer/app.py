"""The indexer as a faust-streaming app: a thin agent over the pure IndexerEngine.

Per batch (stream.take_events), in this order, so a crash at any point loses nothing and repeats harmlessly:
  1. Redis: the batch's operations, each guarded by its object's resourceVersion (Lua, one round trip);
  2. downstream: a watermark record (topic, partition, next offset) on berth.index-watermarks,
     awaited until the broker has it, and the node-usage table (changelog-backed) for changed nodes;
  3. commit: faust commits the offsets of acknowledged events, which happens after the batch.
"""

from __future__ import annotations

import logging
import weakref
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import faust
import msgspec
from faust.streams import _current_event
from redis.asyncio import Redis

from berth.adapters.connect import kafka_bus
from berth.adapters.metrics import Metrics
from berth.adapters.redisindex import RedisIndex
from berth.core.pipeline.indexer import IndexerEngine, Op
from berth.settings import Settings
from berth_indexer.tuning import LeanMonitor, RawBytes, transport_for

log = logging.getLogger("berth.indexer")
BATCH = 1000
# Events faust may hold for the agent. When it is full faust pauses the partition until it has
# drained to 40%: each pause costs a fetch round trip, so with faust's 4096 a backlog paused every
# 0.1 s of work. 20 batches of the bench log's 1.2 kB events are 25 MB of values.
BUFFER = 20 * BATCH
WATERMARKS = "berth.index-watermarks"


@dataclass
class Indexer:
    """What the agent does with one batch; the same code in tests (faust test_context) and for real."""

    engine: IndexerEngine
    index: RedisIndex
    metrics: Metrics
    send_watermark: Callable[[bytes], Awaitable[None]]
    dead_letter: Callable[[bytes, str], Awaitable[None]]
    caught_up: bool = False
    batches: int = 0
    steps: deque[str] = field(default_factory=lambda: deque(maxlen=60))  # the latest side effects, in order

    async def handle(self, values: list[tuple[bytes, int, int]], full: bool) -> dict[str, dict[str, int]]:
        """values: (message bytes, partition, offset). Returns the usage of nodes the batch changed."""
        ops: list[Op] = []
        handle = self.engine.handle_raw
        self.engine.take_touched()
        for value, _, offset in values:
            found, reason = handle(value, offset + 1)
            if reason is not None:
                await self.dead_letter(value, reason)
            if found:
                ops += found
        ops += self.engine.end_batch()
        await self.index.apply(ops)
        self.steps.append("redis")
        last = values[-1]
        await self.send_watermark(msgspec.json.encode({"partition": last[1], "offset": last[2] + 1}))
        await self.index.set_watermark(WATERMARKS, last[1], last[2] + 1)
        self.steps.append("produce")
        self.metrics.events.labels("indexer").inc(len(values))
        self.caught_up = not full
        self.batches += 1
        touched = self.engine.take_touched()
        return self.engine.usage(touched) if touched else {}


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
    dead_letter: Callable[[bytes, str], Awaitable[None]] | None = None,
) -> tuple[faust.App, Indexer]:
    """The app and its Indexer. For faust's test_context, which has no broker: from_history=False
    skips the start-up rebuild, and send_watermark and dead_letter replace the producers."""
    t = settings.topics
    app = new_app(settings, settings.groups.indexer, data_dir)
    events = app.topic(t.cluster_events, schema=RawBytes(), partitions=t.partitions)
    watermarks = app.topic(WATERMARKS, value_type=bytes, value_serializer="raw", partitions=1)
    dead = app.topic(t.dead_letter, value_type=bytes, value_serializer="raw", partitions=1)
    usage = app.Table("node-usage", default=dict, partitions=t.partitions)
    client = Redis.from_url(settings.redis.url, **settings.redis.client_kwargs())

    async def produce_watermark(value: bytes) -> None:
        fut = await watermarks.send(value=value)
        await fut  # delivered before the batch is acknowledged

    async def produce_dead_letter(value: bytes, reason: str) -> None:
        record = {
            "kind": "Reject",
            "source": f"indexer:{t.cluster_events}",
            "position": 0,
            "reason": reason,
            "text": value.decode("utf-8", "replace"),
        }
        await dead.send(value=msgspec.json.encode(record))
        metrics.dead_letters.labels("indexer").inc()

    indexer = Indexer(
        IndexerEngine(),
        RedisIndex(client, settings.redis.prefix),
        metrics,
        send_watermark or produce_watermark,
        dead_letter or produce_dead_letter,
    )
    rebuilt = not from_history

    @app.agent(events)
    async def index(stream: faust.StreamT[bytes]) -> None:
        nonlocal rebuilt
        async for batch in stream.take_events(BATCH, within=0.2):  # type: ignore[attr-defined]
            if not rebuilt:  # what this group committed before: rebuild the in-memory view from it
                n = await rebuild(settings, indexer.engine)
                rebuilt = True
                log.info("state rebuilt", extra={"events": n})
            values = [(e.value, e.message.partition, e.message.offset) for e in batch]
            changed = await indexer.handle(values, full=len(batch) >= BATCH)
            # Table writes take their changelog partition from the current event. Set it for this
            # task only: the stream's own current_event is what take_events files the next event
            # under, and changing it here made that event a copy of this batch's last one.
            token = _current_event.set(weakref.ref(batch[-1]))
            try:
                for node, amounts in changed.items():
                    usage[node] = amounts
            finally:
                _current_event.reset(token)
            indexer.steps.append("table")

    return app, indexer


async def rebuild(settings: Settings, engine: IndexerEngine) -> int:
    """Replay what the group committed into the engine (no writes: Redis has it already)."""
    bus = kafka_bus(settings, "indexer-rebuild")
    await bus.start()
    try:
        history = await bus.history(settings.topics.cluster_events, settings.groups.indexer)
    finally:
        await bus.stop()
    for msg in history:
        engine.handle_raw(msg.value, msg.offset + 1)
    engine.end_batch()
    return len(history)
