"""Each implementation of a port runs the same contract tests. Real adapters join these lists."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
import pytest_asyncio

from berth.adapters.memory import MemoryBus, MemoryStore
from berth.core.ports import Bus, Store

BUSES: dict[str, Callable[[], Awaitable[Bus]]] = {}
STORES: dict[str, Callable[[], Awaitable[Store]]] = {}


async def _memory_bus() -> Bus:
    return MemoryBus()


async def _memory_store() -> Store:
    return MemoryStore()


BUSES["memory"] = _memory_bus
STORES["memory"] = _memory_store


@pytest_asyncio.fixture(params=sorted(BUSES))
async def bus(request: pytest.FixtureRequest) -> AsyncIterator[Bus]:
    b = await BUSES[request.param]()
    await b.start()
    yield b
    await b.stop()


@pytest_asyncio.fixture(params=sorted(STORES))
async def store(request: pytest.FixtureRequest) -> AsyncIterator[Store]:
    s = await STORES[request.param]()
    yield s
    await s.close()
