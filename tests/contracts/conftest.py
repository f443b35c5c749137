"""Each implementation of a port runs the same contract tests: the in-memory twins, and the real
adapters against a real broker (Tansu) and a real redis-server, isolated by prefix and names."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from berth.adapters.kafka import KafkaBus
from berth.adapters.memory import MemoryBus, MemoryStore
from berth.adapters.redisstore import RedisStore
from berth.core.ports import Bus, Store


@pytest_asyncio.fixture(params=["memory", "kafka"])
async def bus(request: pytest.FixtureRequest) -> AsyncIterator[Bus]:
    b: Bus
    if request.param == "kafka":
        broker = request.getfixturevalue("broker")
        b = KafkaBus(broker.address, client_id=f"test-{uuid.uuid4().hex[:6]}", session_timeout_ms=6000)
    else:
        b = MemoryBus()
    await b.start()
    yield b
    await b.stop()


@pytest_asyncio.fixture(params=["memory", "redis"])
async def store(request: pytest.FixtureRequest) -> AsyncIterator[Store]:
    s: Store
    if request.param == "redis":
        server = request.getfixturevalue("redis_server")
        s = RedisStore.from_url(f"redis://{server.address}/0", prefix=f"test:{uuid.uuid4().hex[:8]}:")
    else:
        s = MemoryStore()
    yield s
    await s.close()
