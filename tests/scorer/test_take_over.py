"""A scorer that dies in a batch it did not commit, after reserving and sending some of it: the one
that takes over (a restart, or a standby) decides the redelivered batch against the reservations
its first run had, not against what the dead process reserved and released further on. So a
decision that comes out again is the same record (docs/services.md, Delivery).

The take-over is the HISTORY start the integration test runs (no indexer): a fresh engine handles
the committed events silently, then the batch comes again. The in-memory store twin and a real
redis-server; the bus is the in-memory twin."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

import msgspec
import pytest
import pytest_asyncio
from hypothesis import example, given, settings
from hypothesis import strategies as st

from berth.adapters.bus.memory import MemoryBus
from berth.adapters.files.eventlog import read_events
from berth.adapters.runtime.bootstrap import HISTORY, Start
from berth.adapters.store.memory import MemoryStore
from berth.adapters.store.redis import RedisStore
from berth.core.api.watch import Event, WatchEvent
from berth.core.config.kubeschedulerconfig import parse_config
from berth.core.pipeline.scorer import ScorerEngine
from berth.core.ports import DECISIONS, ReservationStore
from berth_scorer.service import Scorer
from tests.builders import node, pod
from tests.extender.conftest import T0
from tests.servers import Server

pytestmark = pytest.mark.timeout(120)
SAMPLE = str(Path(__file__).parents[2] / "examples" / "small.jsonl.gz")

A, B, C = pod("a", cpu="1"), pod("b", cpu="1500m"), pod("c", cpu="100m")
# committed: the node. The batch: a takes half the node and c is decided beside it (its scores see
# a's room taken); then a goes and b takes most of the node. A store left as the batch ended has no
# room for a, where the batch's first run had it.
COMMITTED = [node("n1", cpu="2")]
BATCH = [("ADDED", A), ("ADDED", C), ("DELETED", A), ("ADDED", B)]


def log(committed: Sequence[dict[str, Any]], batch: Sequence[tuple[str, dict[str, Any]]]) -> list[Event]:
    raws = [("ADDED", o) for o in committed] + list(batch)
    return [WatchEvent(t, o, T0 + timedelta(seconds=i), i + 1).decoded() for i, (t, o) in enumerate(raws)]


def engine() -> ScorerEngine:
    return ScorerEngine(parse_config(None), top_nodes=10)


def sent(bus: MemoryBus) -> list[dict[str, Any]]:
    return [msgspec.json.decode(m.value) for part in bus.topics.get(DECISIONS, []) for m in part]


async def take_over(bus: MemoryBus, store: ReservationStore, events: list[Event], commit: int) -> Scorer:
    """The process after a crash: a fresh engine over the committed events, deciding nothing."""
    fresh = engine()
    for ev in events[:commit]:
        fresh.handle(ev)
    scorer = Scorer(fresh, bus, store)
    await scorer.adopt(Start(fresh, HISTORY, 0, commit, {}, False, False, {}, {}))
    return scorer


async def run(store: ReservationStore, events: list[Event], cuts: list[tuple[int, int | None, bool]]) -> list[Any]:
    """The scorer over `events` in batches: (size, None, _) is a batch committed; (size, k, marked) dies
    after handling k of its events (marked: its decisions marked as emitted too), and another scorer
    takes over from the commit. The decisions on the topic, in order."""
    bus = MemoryBus()
    scorer = Scorer(engine(), bus, store)
    await scorer.check_store()
    commit = 0
    for size, dies, marked in cuts:
        batch = events[commit : commit + size]
        await scorer.before_batch()
        for ev in batch[:dies]:
            await scorer.handle(ev)
        await bus.flush()
        if dies is None or marked:
            await scorer.on_flushed()
        if dies is None:
            commit += len(batch)
        else:
            scorer = await take_over(bus, store, events, commit)
    assert commit == len(events), "the cuts end with every event committed"
    return sent(bus)


def once_each(got: list[Any]) -> list[Any]:
    """The first of each decision id, every repeat checked to be the same record."""
    first: dict[str, Any] = {}
    for d in got:
        assert first.setdefault(d["decisionId"], d) == d, f"{d['decisionId']} came out again with other contents"
    return list(first.values())


@pytest_asyncio.fixture(params=["memory", "redis"])
async def store(request: pytest.FixtureRequest) -> AsyncIterator[ReservationStore]:
    if request.param == "memory":
        yield MemoryStore()
        return
    server: Server = request.getfixturevalue("redis_server")
    s = RedisStore.from_url(f"redis://{server.address}/0", prefix=f"t{uuid.uuid4().hex[:8]}:")
    yield s
    await s.close()


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "dies",
    [
        pytest.param(len(BATCH), id="after the whole batch"),
        pytest.param(2, id="after c, before a went"),
        pytest.param(3, id="after a went, before b"),
    ],
)
@pytest.mark.parametrize("marked", [False, True], ids=["decisions not marked", "decisions marked"])
async def test_a_redelivered_batch_is_decided_as_it_first_was(store: ReservationStore, dies: int, marked: bool) -> None:
    events = log(COMMITTED, BATCH)
    want = await run(MemoryStore(), events, [(1, None, False), (len(BATCH), None, False)])
    assert [d["pod"] for d in want] == ["default/a", "default/c", "default/b"]
    got = await run(store, events, [(1, None, False), (len(BATCH), dies, marked), (len(BATCH), None, False)])
    assert once_each(got) == want


@pytest.mark.asyncio
async def test_the_store_holds_the_engines_reservations_after_a_take_over(store: ReservationStore) -> None:
    """What the dead process reserved past the commit is released, what it released is held again,
    and a reservation the engine holds as it is stays untouched."""
    events = log(COMMITTED, BATCH)
    scorer = Scorer(engine(), MemoryBus(), store)
    await scorer.check_store()
    for ev in events:  # a reserved, c reserved, a released, b reserved: then the process dies
        await scorer.handle(ev)
    assert await store.holdings() == {"default/c": "n1", "default/b": "n1"}
    await take_over(MemoryBus(), store, events, 3)  # committed: the node, a and c
    assert await store.holdings() == {"default/c": "n1", "default/a": "n1"}
    assert await store.reserved("n1") == {"cpu": 1100, "memory": 2 * 128 * 2**20, "pods": 2}


SAMPLE_EVENTS = list(read_events(SAMPLE))
SIZES = st.sampled_from([1, 7, 20, 150, 600, len(SAMPLE_EVENTS)])


@st.composite
def cuts(draw: st.DrawFn) -> list[tuple[int, int | None, bool]]:
    """Batches over the sample log, up to three of them dying somewhere in the middle."""
    out: list[tuple[int, int | None, bool]] = []
    done, deaths = 0, draw(st.integers(0, 3))
    while done < len(SAMPLE_EVENTS):
        size = min(draw(SIZES), len(SAMPLE_EVENTS) - done)
        if deaths and draw(st.booleans()):
            deaths -= 1
            out.append((size, draw(st.integers(1, size)), draw(st.booleans())))
            continue
        out.append((size, None, False))
        done += size
    return out


@pytest.fixture(scope="module")
def uninterrupted() -> list[Any]:
    return asyncio.run(run(MemoryStore(), SAMPLE_EVENTS, [(len(SAMPLE_EVENTS), None, False)]))


@settings(max_examples=12)
@given(cuts=cuts())
# found by a search of every batch size and death: a store ahead by a batch of 600 events refused
# a reservation its first run had taken, and a later decision saw the node emptier
@example(cuts=[(600, None, False), (600, 600, False), (600, None, False), (600, None, False), (46, None, False)])
def test_the_sample_killed_anywhere_gives_each_decision_once_and_the_same(
    uninterrupted: list[Any], cuts: list[tuple[int, int | None, bool]]
) -> None:
    got = asyncio.run(run(MemoryStore(), SAMPLE_EVENTS, cuts))
    assert once_each(got) == uninterrupted
