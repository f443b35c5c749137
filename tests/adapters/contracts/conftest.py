"""Each implementation of a port runs the same contract tests: the in-memory twins, and the real
adapters against a real broker (Tansu) and a real redis-server, isolated by prefix and names."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from berth.adapters.bus.kafka import KafkaBus
from berth.adapters.bus.memory import MemoryBus
from berth.adapters.runtime.connect import redis_store
from berth.adapters.store.memory import MemoryStore
from berth.adapters.store.redis import RedisStore
from berth.core.ports import Bus, ReservationStore
from berth.settings import from_env


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


@pytest_asyncio.fixture(params=["memory", "redis", "redis-cluster"])
async def store(request: pytest.FixtureRequest) -> AsyncIterator[ReservationStore]:
    s: ReservationStore
    if request.param == "redis":
        server = request.getfixturevalue("redis_server")
        s = RedisStore.from_url(f"redis://{server.address}/0", prefix=f"test:{uuid.uuid4().hex[:8]}:")
    elif request.param == "redis-cluster":
        cluster = request.getfixturevalue("redis_cluster")
        settings = from_env(
            {"BERTH_REDIS_URL": f"redis://{cluster.address}/0", "BERTH_REDIS_CLUSTER": "1"},
            redis__prefix=f"test:{uuid.uuid4().hex[:8]}:",
        )
        s = redis_store(settings)
    else:
        s = MemoryStore()
    yield s
    await s.close()
