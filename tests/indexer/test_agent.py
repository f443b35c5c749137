"""The indexer's faust agent under faust's own test_context: events in through the agent, the Redis
index out (a real redis-server), and the side effects in order: Redis, then the watermark, then
the node-usage table, and only then is the batch's first event acknowledged (so faust may commit
the batch: it commits up to the first unacknowledged offset).

The test transport has no broker, so the app is built without the start-up rebuild and with
recording producers for the watermark and dead-letter records."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from redis.asyncio import Redis

from berth.adapters.runtime.metrics import Metrics
from berth.adapters.store.redisindex import RedisIndex
from berth.core.api.watch import WatchEvent, encode_event
from berth.core.pipeline.indexer import IndexerEngine
from berth.core.ports import Message
from berth.settings import from_env
from berth_indexer.app import BATCH, WATERMARKS, Indexer, build
from tests.builders import node, pod, pv, zone_affinity
from tests.servers import Server

GI = 2**30
pytestmark = pytest.mark.timeout(30)


def ev(obj: dict[str, Any], kind: str = "ADDED", rv: str = "1") -> bytes:
    obj["metadata"]["resourceVersion"] = rv
    return encode_event(WatchEvent(kind, obj), with_position=True)


class Recorder:
    """Stands in for the producers; notes what had been acknowledged when the watermark went out."""

    def __init__(self) -> None:
        self.indexer: Indexer | None = None
        self.watermarks: list[dict[str, int]] = []
        self.dead: list[dict[str, Any]] = []
        self.steps_at_send: list[list[str]] = []
        self.events: list[Any] = []  # faust events put in, to check their acks
        self.acked_at_send: list[list[bool]] = []
        self.gate: asyncio.Event | None = None  # when set up, the first send waits for it
        self.sending = asyncio.Event()

    async def send(self, value: bytes) -> None:
        assert self.indexer is not None
        self.sending.set()
        if self.gate is not None and not self.watermarks:
            await self.gate.wait()
        self.watermarks.append(json.loads(value))
        self.steps_at_send.append(list(self.indexer.steps))
        self.acked_at_send.append([bool(e.message.acked) for e in self.events])

    async def dead_letter(self, record: bytes) -> None:
        self.dead.append(json.loads(record))


@pytest_asyncio.fixture
async def built(redis_server: Server, tmp_path: Path) -> AsyncIterator[tuple[Any, Indexer, Recorder, RedisIndex]]:
    prefix = f"t{uuid.uuid4().hex[:8]}:"
    settings = from_env(
        {
            "BERTH_KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:9",  # never connected to
            "BERTH_REDIS_URL": f"redis://{redis_server.address}/0",
            "BERTH_REDIS_PREFIX": prefix,
            "BERTH_GROUP_INDEXER": f"{prefix}indexer",
        }
    )
    rec = Recorder()
    app, indexer = build(
        settings,
        Metrics("indexer"),
        str(tmp_path),
        from_history=False,
        send_watermark=rec.send,
        dead_letter=rec.dead_letter,
    )
    rec.indexer = indexer
    app.finalize()
    app.conf.store = "memory://"
    app.flow_control.resume()
    client = Redis.from_url(f"redis://{redis_server.address}/0")
    yield app, indexer, rec, RedisIndex(client, prefix)
    await client.aclose()
    await indexer.index.r.aclose()
    if app._consumer is not None:  # acks made faust create its consumer, with a loop for a thread never started
        app._consumer._thread.thread_loop.close()


async def until(check: Any, timeout: float = 10.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not check():
        assert asyncio.get_running_loop().time() < deadline, "timed out"
        await asyncio.sleep(0.01)


def referenced(tc: Any) -> None:
    """Give each message the reference faust's conductor gives it for the one stream reading it
    (the test wrapper puts events straight into the channel, without it)."""
    make = tc.to_message

    def to_message(*args: Any, **kwargs: Any) -> Any:
        message = make(*args, **kwargs)
        message.incref()
        return message

    tc.to_message = to_message


async def one_batch(agent: Any, indexer: Indexer, rec: Recorder, puts: list[tuple[bytes, int]]) -> None:
    """Put (value, partition) pairs through the agent and wait until their batch is written and
    every event acknowledged."""
    async with agent.test_context() as tc:
        referenced(tc)
        for value, partition in puts:
            rec.events.append(await tc.put(value, partition=partition))
        await until(lambda: "table" in indexer.steps)
        await until(lambda: all(e.message.acked for e in rec.events))


@pytest.mark.asyncio
async def test_the_agent_indexes_a_batch_then_produces_then_writes_the_table(
    built: tuple[Any, Indexer, Recorder, RedisIndex],
) -> None:
    app, indexer, rec, index = built
    agent = next(iter(app.agents.values()))
    values = [
        ev(node("n1", zone="z1")),
        ev(node("n2", zone="z1")),
        ev(pv("local", "10Gi", on="n1")),
        ev(pv("zonal", "1Ti", affinity=zone_affinity("z1"))),
        b"junk",
        ev(pod("p", node_name="n1", cpu="500m", memory=None), rv="5"),
        ev(pv("taken", "10Gi", on="n2", claim="db/data", phase="Bound")),
    ]
    await one_batch(agent, indexer, rec, [(v, 0) for v in values])

    assert list(indexer.steps) == ["redis", "produce", "table"]  # one batch (fewer than BATCH events)
    assert len(values) < BATCH and indexer.batches == 1
    assert rec.steps_at_send == [["redis"]]  # the watermark went out after the Redis write ...
    assert rec.acked_at_send[0][0] is False  # ... while the batch's first event was held: nothing committable
    assert rec.watermarks == [{"partition": 0, "offset": len(values)}]
    assert await index.watermark(WATERMARKS, 0) == len(values)
    assert [(d["reason"].split(":")[0], d["position"], d["text"]) for d in rec.dead] == [("line 5", 5, "junk")]

    assert await index.node_pvs("n1", "local") == [("local", 10 * GI)]
    assert await index.node_pvs("n2", "local") == []  # claimed: not in the index
    assert await index.r.zrange(f"{index.p}pvidx:*:local", 0, -1, withscores=True) == [(b"zonal", 1024.0 * GI)]
    assert await index.used("n1") == {"cpu": 500, "pods": 1}
    assert await index.r.hget(f"{index.p}node:n1", "labels") is not None
    usage = next(t for t in app.tables.values())
    assert usage["n1"] == {"cpu": 500, "pods": 1}


@pytest.mark.asyncio
async def test_events_arriving_while_a_batch_is_written_go_in_the_next_batch(
    built: tuple[Any, Indexer, Recorder, RedisIndex],
) -> None:
    """The agent must not disturb the stream's current event (take_events files the next event under
    it): an event that came while a batch was being written was once replaced by a copy of that
    batch's last event, so it was never indexed."""
    app, indexer, rec, index = built
    agent = next(iter(app.agents.values()))
    rec.gate = asyncio.Event()
    async with agent.test_context() as tc:
        await tc.put(ev(node("n1")))
        await tc.put(ev(pod("a", node_name="n1", cpu="1", memory=None), rv="2"))
        await asyncio.wait_for(rec.sending.wait(), 5)  # the first batch is being written
        await tc.put(ev(pod("b", node_name="n1", cpu="2", memory=None), rv="3"))
        rec.gate.set()
        await until(lambda: indexer.batches == 2)

    assert rec.watermarks == [{"partition": 0, "offset": 2}, {"partition": 0, "offset": 3}]
    assert await index.used("n1") == {"cpu": 3000, "pods": 2}


@pytest.mark.asyncio
async def test_the_worker_consumer_takes_the_fetch_wait_from_the_settings(tmp_path: Path) -> None:
    # faust fixes 1500 ms; an idle partition in the same fetch then stalls the event partition
    import aiokafka

    settings = from_env({"BERTH_KAFKA_FETCH_MAX_WAIT_MS": "250"})
    app, _ = build(settings, Metrics("indexer"), str(tmp_path), from_history=False)
    thread = app.consumer._thread  # type: ignore[attr-defined]
    consumer = thread._create_worker_consumer(app.transport)
    plain = aiokafka.AIOKafkaConsumer(fetch_max_wait_ms=7)
    try:
        assert consumer._fetch_max_wait_ms == 250
        assert plain._fetch_max_wait_ms == 7  # the attribute aiokafka hands to its fetcher
    finally:
        await consumer.stop()
        await plain.stop()
        thread.thread_loop.close()  # made for the thread, which never ran


@pytest.mark.asyncio
async def test_a_failed_write_leaves_the_batch_uncommittable_and_stops_the_worker(
    built: tuple[Any, Indexer, Recorder, RedisIndex], monkeypatch: pytest.MonkeyPatch
) -> None:
    app, indexer, rec, index = built
    agent = next(iter(app.agents.values()))
    crashed: list[BaseException] = []

    async def crash(reason: BaseException) -> None:
        crashed.append(reason)

    async def down(*args: Any, **kwargs: Any) -> int:
        raise ConnectionError("redis is down")

    monkeypatch.setattr(app, "crash", crash)
    monkeypatch.setattr(indexer.index, "apply", down)
    async with agent.test_context() as tc:
        referenced(tc)
        rec.events.append(await tc.put(ev(node("n1"))))
        rec.events.append(await tc.put(ev(node("n2"))))
        await until(lambda: bool(crashed))

    assert [str(e) for e in crashed] == ["redis is down"]
    assert rec.watermarks == [] and indexer.batches == 0
    assert await index.watermark(WATERMARKS, 0) == 0
    # No batch of the partition written yet: every event holds the batch back, not only the first
    # (before its first commit of a partition faust would commit past a gap at the head)
    assert [e.message.acked for e in rec.events] == [False, False]


@pytest.mark.asyncio
async def test_a_bug_in_the_engine_stops_the_worker_with_the_batch_uncommittable(
    built: tuple[Any, Indexer, Recorder, RedisIndex], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only bad input is dead-lettered: an engine that raises anything else ends the worker."""
    app, indexer, rec, index = built
    agent = next(iter(app.agents.values()))
    crashed: list[BaseException] = []

    async def crash(reason: BaseException) -> None:
        crashed.append(reason)

    def bug(*args: Any, **kwargs: Any) -> Any:
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr(app, "crash", crash)
    monkeypatch.setattr(indexer.engine, "handle_raw", bug)
    async with agent.test_context() as tc:
        referenced(tc)
        rec.events.append(await tc.put(ev(node("n1"))))
        await until(lambda: bool(crashed))

    assert [str(e) for e in crashed] == ["a bug"]
    assert rec.dead == [] and rec.watermarks == [] and indexer.batches == 0
    assert await index.watermark(WATERMARKS, 0) == 0
    assert [e.message.acked for e in rec.events] == [False]


@pytest.mark.asyncio
async def test_a_batch_from_several_partitions_advances_each_partitions_watermark(
    built: tuple[Any, Indexer, Recorder, RedisIndex],
) -> None:
    app, indexer, rec, index = built
    agent = next(iter(app.agents.values()))
    puts = [(ev(node("n1")), 0), (ev(node("n2")), 1), (ev(pv("local", "10Gi", on="n1")), 0)]  # offsets 0, 1, 2
    await one_batch(agent, indexer, rec, puts)

    assert indexer.batches == 1
    assert rec.watermarks == [{"partition": 0, "offset": 3}, {"partition": 1, "offset": 2}]
    assert (await index.watermark(WATERMARKS, 0), await index.watermark(WATERMARKS, 1)) == (3, 2)
    assert rec.acked_at_send[0][:2] == [False, False]  # each partition's first event was held


async def contents(index: RedisIndex) -> dict[str, Any]:
    """Every key of the index (prefix stripped) with its value, but the epoch token (random per run)."""
    out: dict[str, Any] = {}
    async for key in index.r.scan_iter(f"{index.p}*"):
        name = key.decode().removeprefix(index.p)
        kind = (await index.r.type(key)).decode()
        if name.startswith("epoch:"):
            continue
        if kind == "zset":
            out[name] = await index.r.zrange(key, 0, -1, withscores=True)
        elif kind == "hash":
            out[name] = await index.r.hgetall(key)
        elif kind == "set":
            out[name] = sorted(await index.r.smembers(key))
        else:
            out[name] = await index.r.get(key)
    return out


TOPIC = [  # offsets 0 to 6 of partition 0
    ev(node("n1")),
    ev(pv("a", "10Gi", on="n1"), rv="2"),
    ev(pod("p", node_name="n1", cpu="1", memory=None), rv="3"),
    ev(pv("a", "10Gi", on="n1", claim="default/p", phase="Bound"), "MODIFIED", rv="4"),
    ev(pod("p", node_name="n1", cpu="1", memory=None), "DELETED", rv="5"),
    ev(pod("q", node_name="n1", cpu="2", memory=None), rv="6"),
    ev(pv("b", "1Gi", on="n1"), rv="7"),
]


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("delivered", "read"),
    [
        pytest.param([2, 6], [(0, 3, 6)], id="left-out-in-the-middle"),
        pytest.param([5, 6], [(0, 2, 5)], id="left-out-at-the-head"),
        pytest.param([2, 3, 3, 2, 4, 6, 6], [(0, 5, 6)], id="delivered-twice-out-of-order-and-left-out"),
        pytest.param([0, 1, 2, 3, 4, 5, 6], [], id="redelivered-from-below-the-watermark"),
    ],
)
async def test_events_the_consumer_left_out_are_read_from_the_topic(
    built: tuple[Any, Indexer, Recorder, RedisIndex],
    redis_server: Server,
    delivered: list[int],
    read: list[tuple[int, int, int]],
) -> None:
    """Restarted from Redis at offset 2, the agent gets the offsets as faust delivered them around
    its start-up recovery (it left some out: records fetched before its seek back to the committed
    offset moved its read position past them). The index ends as one uninterrupted pass leaves it."""
    app, indexer, rec, index = built
    agent = next(iter(app.agents.values()))
    reads: list[tuple[int, int, int]] = []

    async def read_range(partition: int, start: int, end: int) -> list[Message]:
        reads.append((partition, start, end))
        return [Message("events", partition, o, None, TOPIC[o]) for o in range(start, end)]

    await indexer.handle([(TOPIC[o], 0, o) for o in (0, 1)], full=False)  # what the snapshot holds
    indexer.needed, indexer.read_range = {0: 2}, read_range  # as rebuild() leaves them
    async with agent.test_context() as tc:
        for offset in delivered:
            tc.sent_offset = offset
            await tc.put(TOPIC[offset])
        await until(lambda: indexer.marks == {0: len(TOPIC)})

    whole = RedisIndex(Redis.from_url(f"redis://{redis_server.address}/0"), f"t{uuid.uuid4().hex[:8]}:")
    try:
        await Indexer(IndexerEngine(), whole, Metrics("indexer"), rec.send, rec.dead_letter).handle(
            [(v, 0, o) for o, v in enumerate(TOPIC)], full=False
        )
        assert await contents(index) == await contents(whole)
    finally:
        await whole.r.aclose()
    assert reads == read


@pytest.mark.asyncio
async def test_a_batch_being_written_gives_faust_nothing_to_commit(
    built: tuple[Any, Indexer, Recorder, RedisIndex], monkeypatch: pytest.MonkeyPatch
) -> None:
    """faust commits the first run of acknowledged offsets unless it starts more than one offset past
    the commit (faust 0.15's Consumer._new_offset): one event held at the committed offset is passed
    over. So the agent holds the first two events of each partition's batch until it is written.
    (The test context's messages do not report their acks to the consumer: they are handed over.)"""
    app, indexer, rec, _ = built
    agent = next(iter(app.agents.values()))
    apply, gate, writing = indexer.index.apply, asyncio.Event(), asyncio.Event()

    async def gated(*args: Any, **kwargs: Any) -> int:
        if indexer.batches == 1:  # the second batch waits
            writing.set()
            await gate.wait()
        return await apply(*args, **kwargs)

    def commits(committed: int) -> int | None:
        """What faust would commit now, the group being at `committed`."""
        tp = rec.events[0].message.tp
        acked = sorted(e.message.offset for e in rec.events if e.message.acked and e.message.offset >= committed)
        app.consumer._committed_offset[tp] = committed
        app.consumer._acked[tp], app.consumer._acked_index[tp] = acked, set(acked)
        got: int | None = app.consumer._new_offset(tp)
        return got

    monkeypatch.setattr(indexer.index, "apply", gated)
    async with agent.test_context() as tc:
        referenced(tc)
        rec.events += [await tc.put(ev(node(f"n{i}"))) for i in range(3)]  # offsets 0-2
        await until(lambda: indexer.batches == 1 and all(e.message.acked for e in rec.events))
        rec.events += [await tc.put(ev(node(f"m{i}"))) for i in range(5)]  # offsets 3-7, being written
        await asyncio.wait_for(writing.wait(), 5)
        await until(lambda: rec.events[-1].message.acked)  # take_events acknowledged the rest
        assert commits(3) is None  # nothing of the batch may be committed before it is written
        gate.set()
        await until(lambda: indexer.batches == 2 and all(e.message.acked for e in rec.events))
        assert commits(3) == 8
