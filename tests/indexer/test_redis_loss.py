"""Redis losing the index under a running indexer: emptied (a restart without persistence), or set
back to an earlier copy (a failover to a replica that lagged). The next write notices (the epoch
key, the watermarks), the index is written again from the topic, and it ends as it would have
without the loss. A real redis-server; the topic is a list, as read_topic hands it over."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from redis.asyncio import Redis

from berth.adapters.runtime.metrics import Metrics
from berth.adapters.store.epoch import claim_epoch, epoch_lost, index_behind, read_epoch
from berth.adapters.store.redisindex import IndexLost, RedisIndex
from berth.core.pipeline.indexer import IndexerEngine
from berth.core.ports import Message
from berth_indexer.app import WATERMARKS, Indexer, restore
from tests.builders import node, pod, pv
from tests.indexer.test_agent import ev
from tests.servers import Server

pytestmark = pytest.mark.timeout(30)

TOPIC = [
    ev(node("n1", zone="z1")),
    ev(node("n2", zone="z1")),
    ev(pv("a", "10Gi", on="n1")),
    ev(pv("b", "20Gi", on="n2")),
    ev(pod("p", node_name="n1", cpu="500m", memory=None), rv="5"),
    ev(pv("a", "10Gi", on="n1", claim="db/data", phase="Bound"), rv="6"),
    ev(node("n3", zone="z2")),
    ev(pod("q", node_name="n2", cpu="1", memory=None), rv="8"),
    b"junk",
    ev(pod("p", node_name="n1", cpu="500m", memory=None), kind="DELETED", rv="10"),
    ev(pv("c", "5Gi", on="n3")),
    ev(pv("b", "20Gi", on="n2"), kind="DELETED", rv="12"),
]
BATCHES = [(0, 4), (4, 8), (8, 12)]


@pytest_asyncio.fixture
async def client(redis_server: Server) -> AsyncIterator[Redis]:
    c = Redis.from_url(f"redis://{redis_server.address}/0")
    yield c
    await c.aclose()


def messages(upto: int) -> list[Message]:
    return [Message("events", 0, i, None, v) for i, v in enumerate(TOPIC[:upto])]


def indexer_on(client: Redis, metrics: Metrics | None = None) -> Indexer:
    async def nothing(_: bytes) -> None:
        return None

    async def read_topic(ends: dict[int, int]) -> list[Message]:
        return messages(ends.get(0, 0))

    prefix = f"t{uuid.uuid4().hex[:8]}:"
    return Indexer(
        IndexerEngine(),
        RedisIndex(client, prefix),
        metrics or Metrics("indexer"),
        nothing,
        nothing,
        "events",
        read_topic,
    )


async def batch(indexer: Indexer, start: int, end: int) -> None:
    await indexer.handle([(v, 0, i) for i, v in enumerate(TOPIC) if start <= i < end], False)


async def contents(client: Redis, prefix: str) -> dict[str, object]:
    """The index under a prefix, without the epoch key (its token differs from run to run)."""
    out: dict[str, object] = {}
    async for key in client.scan_iter(f"{prefix}*"):
        name = key.decode().removeprefix(prefix)
        kind = (await client.type(key)).decode()
        if name.startswith("epoch:"):
            continue
        if kind == "zset":
            out[name] = await client.zrange(key, 0, -1, withscores=True)
        elif kind == "hash":
            out[name] = {k: v for k, v in (await client.hgetall(key)).items() if v != b"0"}
        elif kind == "set":
            out[name] = sorted(await client.smembers(key))
        else:
            out[name] = await client.get(key)
    return out


async def undisturbed(client: Redis) -> dict[str, object]:
    indexer = indexer_on(client)
    for start, end in BATCHES:
        await batch(indexer, start, end)
    return await contents(client, indexer.index.p)


async def wipe(client: Redis, prefix: str) -> None:
    async for key in client.scan_iter(f"{prefix}*"):
        await client.delete(key)


@pytest.mark.asyncio
async def test_an_emptied_redis_is_noticed_and_the_index_written_again(client: Redis) -> None:
    want = await undisturbed(client)
    metrics = Metrics("indexer")
    indexer = indexer_on(client, metrics)
    await batch(indexer, *BATCHES[0])
    await batch(indexer, *BATCHES[1])
    await wipe(client, indexer.index.p)
    await batch(indexer, *BATCHES[2])

    assert await contents(client, indexer.index.p) == want
    assert metrics.redis_lost.labels("indexer")._value.get() == 1
    assert await read_epoch(client, indexer.index.p, "indexer") == indexer.epoch


@pytest.mark.asyncio
async def test_a_redis_set_back_to_an_earlier_copy_is_noticed_by_its_watermark(client: Redis) -> None:
    """A replica that lagged: it has the epoch key, and the index of the first batch only."""
    want = await undisturbed(client)
    metrics = Metrics("indexer")
    indexer = indexer_on(client, metrics)
    p = indexer.index.p
    await batch(indexer, *BATCHES[0])
    earlier = {key: await client.dump(key) async for key in client.scan_iter(f"{p}*")}
    await batch(indexer, *BATCHES[1])
    await wipe(client, p)
    for key, value in earlier.items():
        await client.restore(key, 0, value)
    await batch(indexer, *BATCHES[2])

    assert await contents(client, p) == want
    assert metrics.redis_lost.labels("indexer")._value.get() == 1


@pytest.mark.asyncio
async def test_a_write_to_a_redis_that_lost_the_index_applies_nothing(client: Redis) -> None:
    index = RedisIndex(client, f"t{uuid.uuid4().hex[:8]}:")
    engine = IndexerEngine()
    ops = engine.handle_raw(TOPIC[0])[0]
    with pytest.raises(IndexLost):  # no epoch key
        await index.apply(ops, {(WATERMARKS, 0): 1}, epoch="some-token")
    token = await index.claim_epoch()
    with pytest.raises(IndexLost):  # a watermark behind what was written
        await index.apply(ops, {(WATERMARKS, 0): 1}, epoch=token, expect={(WATERMARKS, 0): 1})
    assert await contents(client, index.p) == {}
    assert await index.apply(ops, {(WATERMARKS, 0): 1}, epoch=token, expect={(WATERMARKS, 0): 0}) == len(ops)
    await index.apply([], {(WATERMARKS, 0): 0}, epoch=token)  # a redelivered batch never takes a watermark back
    assert await index.watermark(WATERMARKS, 0) == 1


@pytest.mark.asyncio
async def test_restore_writes_from_where_redis_has_the_index(client: Redis) -> None:
    want = await undisturbed(client)
    index = RedisIndex(client, f"t{uuid.uuid4().hex[:8]}:")
    token = await index.claim_epoch()
    assert await restore(IndexerEngine(), index, messages(4), {0: 0}, token) == 4
    assert await index.watermark(WATERMARKS, 0) == 4
    assert await restore(IndexerEngine(), index, messages(len(TOPIC)), {0: 4}, token) == len(TOPIC) - 4
    assert await contents(client, index.p) == want
    assert await restore(IndexerEngine(), index, messages(len(TOPIC)), {0: len(TOPIC)}, token) == 0


@pytest.mark.asyncio
async def test_the_epoch_is_claimed_once_and_adopted_after(client: Redis) -> None:
    prefix = f"t{uuid.uuid4().hex[:8]}:"
    assert await read_epoch(client, prefix, "scorer") is None
    first = await claim_epoch(client, prefix, "scorer")
    assert await claim_epoch(client, prefix, "scorer") == first == await read_epoch(client, prefix, "scorer")
    assert await claim_epoch(client, prefix, "indexer") != first  # one key per service


@pytest.mark.parametrize(
    ("seen", "now", "lost"),
    [(None, None, False), (None, "a", False), ("a", "a", False), ("a", None, True), ("a", "b", True)],
)
def test_epoch_lost(seen: str | None, now: str | None, lost: bool) -> None:
    assert epoch_lost(seen, now) is lost


@pytest.mark.parametrize(
    ("watermarks", "committed", "behind"),
    [
        ({}, {}, {}),
        ({}, {0: 5}, {0: 0}),  # emptied
        ({0: 5}, {0: 5}, {}),
        ({0: 7}, {0: 5}, {}),  # Redis ahead of the commit: the normal case after a crash
        ({0: 3, 1: 9}, {0: 5, 1: 9, 2: 1}, {0: 3, 2: 0}),  # a replica that lagged
    ],
)
def test_index_behind(watermarks: dict[int, int], committed: dict[int, int], behind: dict[int, int]) -> None:
    assert index_behind(watermarks, committed) == behind
