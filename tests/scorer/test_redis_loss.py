"""Redis losing the scorer's state (dedup marks and reservations): noticed by the epoch key before the
next batch, and recovered before anything is decided again, the marks from the decisions topic and
the reservations from the scorer's engine. A real redis-server; the bus is the in-memory twin."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from redis.asyncio import Redis

from berth.adapters.bus.memory import MemoryBus
from berth.adapters.runtime.metrics import Metrics
from berth.adapters.store.redis import RedisStore
from berth.core.config.kubeschedulerconfig import parse_config
from berth.core.pipeline.scorer import ScorerEngine
from berth.core.ports import DECISIONS
from berth_scorer.service import Scorer, decision_ids
from tests.builders import node, pod, pv, pvc, storage_class
from tests.extender.conftest import events
from tests.servers import Server

pytestmark = pytest.mark.timeout(30)
OBJECTS = [
    storage_class(),
    node("n1"),
    node("n2"),
    pv("pv1", "10Gi", on="n1"),
    pv("pv2", "20Gi", on="n2"),
    pvc("a"),
    pod("web", ("a",)),
    pod("api", cpu="1"),
]


@pytest_asyncio.fixture
async def store(redis_server: Server) -> AsyncIterator[RedisStore]:
    s = RedisStore.from_url(f"redis://{redis_server.address}/0", prefix=f"t{uuid.uuid4().hex[:8]}:")
    yield s
    await s.close()


async def scorer_with(bus: MemoryBus, store: RedisStore, metrics: Metrics) -> Scorer:
    """A scorer that decided OBJECTS' pods, as after a batch: records flushed, decisions marked."""
    scorer = Scorer(ScorerEngine(parse_config(None)), bus, store, metrics=metrics)
    await scorer.check_store()
    for ev in events(*OBJECTS):
        await scorer.handle(ev)
    await bus.flush()
    await scorer.on_flushed()
    return scorer


async def state(store: RedisStore) -> dict[str, object]:
    """The scorer's keys (not the epoch), a hash without its zero fields."""
    r: Redis = store.r
    out: dict[str, object] = {}
    async for key in r.scan_iter(f"{store.p}*"):
        name = key.decode().removeprefix(store.p)
        if name.startswith("epoch:"):
            continue
        if (await r.type(key)) == b"hash":
            out[name] = {k: v for k, v in (await r.hgetall(key)).items() if v != b"0"}
        else:
            out[name] = await r.get(key)
    return out


async def wipe(store: RedisStore) -> None:
    async for key in store.r.scan_iter(f"{store.p}*"):
        await store.r.delete(key)


def lost(metrics: Metrics) -> float:
    return float(metrics.redis_lost.labels("scorer")._value.get())


@pytest.mark.asyncio
async def test_state_lost_under_a_running_scorer_is_recovered_before_the_next_batch(store: RedisStore) -> None:
    bus, metrics = MemoryBus(), Metrics("scorer")
    scorer = await scorer_with(bus, store, metrics)
    ids = decision_ids(bus.topics[DECISIONS][0])
    before = await state(store)
    assert len(ids) == 2 and {"held:default/web", "held:default/api", "pvowner:pv1"} <= set(before)
    assert lost(metrics) == 0  # a fresh start is not a loss

    await scorer.check_store()  # nothing lost: nothing done
    assert lost(metrics) == 0
    await wipe(store)
    await scorer.check_store()

    assert lost(metrics) == 1
    assert await state(store) == before
    assert all([await store.decided(d) for d in ids])
    assert await store.epoch() == scorer.epoch


@pytest.mark.asyncio
async def test_a_scorer_restarted_on_an_emptied_redis_marks_what_the_topic_holds(store: RedisStore) -> None:
    bus = MemoryBus()
    await scorer_with(bus, store, Metrics("scorer"))
    before = await state(store)
    await wipe(store)

    metrics = Metrics("scorer")
    restarted = Scorer(ScorerEngine(parse_config(None)), bus, store, metrics=metrics)
    for ev in events(*OBJECTS):  # its rebuild from what the group committed
        restarted.engine.handle(ev)
    restarted.engine.take_released()
    await restarted.check_store()

    assert lost(metrics) == 1
    assert await state(store) == before


@pytest.mark.asyncio
async def test_a_scorer_finding_another_epoch_takes_its_reservations_again(store: RedisStore) -> None:
    """Another replica found the state gone and recovered first (a new token): this one's
    reservations are gone too, and it takes them again."""
    bus, metrics = MemoryBus(), Metrics("scorer")
    scorer = await scorer_with(bus, store, metrics)
    before = await state(store)
    await wipe(store)
    await store.claim_epoch()
    await scorer.check_store()
    assert lost(metrics) == 1
    assert await state(store) == before


def test_decision_ids_pass_over_what_is_not_a_decision() -> None:
    from berth.core.ports import Message

    msgs = [Message("d", 0, i, None, v) for i, v in enumerate([b'{"decisionId": "x", "pod": "p"}', b"junk", b"{}"])]
    assert decision_ids(msgs) == ["x"]


@pytest.mark.asyncio
async def test_a_take_over_recovers_with_the_engine_it_built_before_publishing_from_it(store: RedisStore) -> None:
    """A scorer taking partitions over builds a fresh engine and recovers an emptied store with that
    engine's reservations (not those of the engine it replaces), before its start-time decisions
    are published: the marks from the topic then keep a decision from coming out twice."""
    bus = MemoryBus()
    await scorer_with(bus, store, Metrics("scorer"))
    before = await state(store)
    sent = len(bus.topics[DECISIONS][0])
    await wipe(store)

    restarted = Scorer(ScorerEngine(parse_config(None)), bus, store, metrics=Metrics("scorer"))
    fresh = ScorerEngine(parse_config(None))
    for ev in events(*OBJECTS):
        fresh.handle(ev)
    fresh.take_released()
    await restarted.check_store(fresh)
    assert await state(store) == before  # the fresh engine's reservations, taken again

    restarted.engine = fresh
    await restarted.publish(fresh.decide_pending(await store.holdings(), True))
    await bus.flush()
    assert len(bus.topics[DECISIONS][0]) == sent  # every decision was marked: none published again
