"""A state built before the group assigns partitions (bootstrap.prepare, while the join waits) is
taken only when it is the one start_state would build then: the same partitions, and neither the
group's commit nor its checkpoint moved since. Otherwise the state is built again: from the same
objects when only the partitions differ, from objects read afresh when the group moved on (a standby
taking over long after its start) or Redis held no state then. Either way the service decides the rest of the log as a start without it does. A real
redis-server; the bus is the in-memory twin."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

import msgspec
import pytest
import pytest_asyncio
from redis.asyncio import Redis

from berth.adapters.bus.memory import MemoryBus
from berth.adapters.runtime.bootstrap import Checkpoints, Start, prepare, start_state
from berth.adapters.store.redisindex import RedisIndex
from berth.core.api.watch import decode_message, format_time, parse_event
from berth.core.config.kubeschedulerconfig import parse_config
from berth.core.pipeline.buffers import BufferEngine
from berth.core.pipeline.indexer import IndexerEngine
from berth.core.pipeline.scorer import ScorerEngine
from berth.core.ports import INDEX_WATERMARKS, Message
from tests.pipeline.test_restore import log
from tests.servers import Server

pytestmark = pytest.mark.timeout(60)
TOPIC, GROUP = "events", "scorer"
CONFIG = parse_config(None)
ENGINES: dict[str, Callable[[], Any]] = {
    "scorer": lambda: ScorerEngine(CONFIG),
    "buffers": lambda: BufferEngine(CONFIG),
}


@pytest_asyncio.fixture
async def index(redis_server: Server) -> AsyncIterator[RedisIndex]:
    client = Redis.from_url(f"redis://{redis_server.address}/0")
    yield RedisIndex(client, f"t{uuid.uuid4().hex[:8]}:")
    await client.aclose()


class World:
    """The sample log on two partitions, the indexer's Redis state up to `indexed` of each, and a
    service that handled (and committed, with its checkpoint) up to `handled` of each."""

    def __init__(self, index: RedisIndex, make: Callable[[], Any]) -> None:
        self.index, self.make = index, make
        self.bus = MemoryBus()
        self.checkpoints = Checkpoints(index.r, index.p, GROUP)
        self.running = make()
        self.handled = [0, 0]

    async def publish(self) -> None:
        await self.bus.create_topics({TOPIC: 2})
        for line in log()[0]:
            await self.bus.send(TOPIC, line, parse_event(line).key)

    def messages(self, p: int) -> list[Message]:
        return self.bus.topics[TOPIC][p]

    async def index_to(self, share: float) -> None:
        engine = IndexerEngine()
        ops, marks = [], {}
        for p in (0, 1):
            upto = int(len(self.messages(p)) * share)
            for msg in self.messages(p)[:upto]:
                ops += engine.handle_raw(msg.value, msg.offset + 1)[0]
            marks[(INDEX_WATERMARKS, p)] = upto
        clock = "" if engine.clock is None else format_time(engine.clock)
        await self.index.apply(ops + engine.end_batch(), marks, clock)

    async def handle_to(self, share: float, commit: bool = True) -> None:
        """The running service handles each partition up to `share`, saves its checkpoint, commits."""
        for p in (0, 1):
            upto = int(len(self.messages(p)) * share)
            for msg in self.messages(p)[self.handled[p] : upto]:
                self.running.handle(decode_message(msg))
            self.handled[p] = upto
        await self.checkpoints.save([0, 1], dict(enumerate(self.handled)), self.running.checkpoint())
        if commit:
            for p in (0, 1):
                self.bus.committed[(GROUP, TOPIC, p)] = self.handled[p]

    async def start(self, partitions: list[int], early: Any = None) -> Start[Any]:
        return await start_state(self.bus, self.index, self.checkpoints, TOPIC, partitions, self.make(), early)

    def rest(self, got: Start[Any], partitions: list[int]) -> list[Any]:
        """What the started service emits for the rest of its partitions (redelivered events below
        `passed` only change its state)."""
        out: list[Any] = []
        for p in partitions:
            for msg in self.messages(p)[got.committed.get(p, 0) :]:
                ev = decode_message(msg)
                if msg.offset < got.passed.get(p, 0):
                    got.engine.apply(ev)
                else:
                    out += [msgspec.to_builtins(r) for r in got.engine.handle(ev)]
        return out


def same(a: Start[Any], b: Start[Any]) -> bool:
    return a._replace(engine=None) == b._replace(engine=None) and a.engine.checkpoint() == b.engine.checkpoint()


@pytest.mark.asyncio
@pytest.mark.parametrize("kind", sorted(ENGINES))
@pytest.mark.parametrize(
    ("case", "taken"),
    [
        ("as built", True),
        ("other partitions", False),
        ("commit moved", False),
        ("checkpoint moved", False),
        ("no checkpoint", True),
        ("no state in Redis", False),
        ("indexed since, commit moved", False),
        ("indexed since, no state in Redis before", False),
    ],
)
async def test_an_early_state_is_taken_only_when_it_is_the_one_built_after_the_assignment(
    index: RedisIndex, kind: str, case: str, taken: bool
) -> None:
    world = World(index, ENGINES[kind])
    await world.publish()
    if case not in ("no state in Redis", "indexed since, no state in Redis before"):
        await world.index_to(0.4)
    if case != "no checkpoint":
        await world.handle_to(0.5)
    mine = world.make()
    early = prepare(world.bus, index, world.checkpoints, TOPIC, [0, 1], mine)
    got_early = await early
    partitions = [0] if case == "other partitions" else [0, 1]
    if case == "commit moved":
        await world.handle_to(0.6)
    elif case.startswith("indexed since"):  # a standby taking over long after its start
        await world.index_to(0.8)
        await world.handle_to(0.9)
    elif case == "checkpoint moved":
        await world.handle_to(0.6, commit=False)  # a batch past the commit, its commit lost
    got = await world.start(partitions, _done(got_early))
    want = await world.start(partitions)
    assert (got.engine is mine) == taken
    assert got.source == ("history" if case == "no state in Redis" else "redis")
    assert same(got, want)  # watermarks included: a state built on the early objects would differ

    decided = world.rest(got, partitions)
    assert decided == world.rest(want, partitions)
    assert decided or kind == "buffers"


async def _done(value: Any) -> Any:
    return value
