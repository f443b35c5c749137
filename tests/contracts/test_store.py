"""What berth needs from a store: first-time decisions and atomic reservations."""

from __future__ import annotations

import uuid

import pytest

from berth.core.ports import Store


def name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


@pytest.mark.asyncio
async def test_first_time(store: Store) -> None:
    d = name("d")
    assert await store.first_time(d)
    assert not await store.first_time(d)
    assert await store.first_time(name("d"))


@pytest.mark.asyncio
async def test_a_pv_is_reserved_once(store: Store) -> None:
    a, b, pv = name("pod"), name("pod"), name("pv")
    assert await store.reserve(a, "n1", [pv], {})
    assert not await store.reserve(b, "n1", [pv, name("pv")], {})
    assert await store.reservation(b) is None
    assert await store.reserve(a, "n1", [pv], {})  # the same reservation again is fine
    await store.release(a)
    assert await store.reserve(b, "n1", [pv], {})
    assert await store.reservation(b) == ("n1", [pv])


@pytest.mark.asyncio
async def test_reservations_never_overcommit_a_node(store: Store) -> None:
    node = name("node")
    await store.set_node(node, {"cpu": 4000, "memory": 8})
    await store.add_usage(name("bound"), node, {"cpu": 1000})
    a, b = name("pod"), name("pod")
    assert await store.reserve(a, node, [], {"cpu": 2000})
    assert not await store.reserve(b, node, [], {"cpu": 1500})
    assert await store.reserve(b, node, [], {"cpu": 1000, "memory": 8})
    await store.release(a)
    assert await store.reserve(name("pod"), node, [], {"cpu": 2000})


@pytest.mark.asyncio
async def test_usage_moves_with_the_pod(store: Store) -> None:
    n1, n2, pod = name("node"), name("node"), name("pod")
    await store.set_node(n1, {"cpu": 1000})
    await store.set_node(n2, {"cpu": 1000})
    await store.add_usage(pod, n1, {"cpu": 1000})
    assert not await store.reserve(name("p"), n1, [], {"cpu": 1})
    await store.add_usage(pod, n2, {"cpu": 1000})
    assert await store.reserve(name("p"), n1, [], {"cpu": 1000})
    await store.add_usage(pod, None, {})
    assert await store.reserve(name("p"), n2, [], {"cpu": 1000})


@pytest.mark.asyncio
async def test_unknown_node_is_not_limited(store: Store) -> None:
    assert await store.reserve(name("pod"), name("node"), [], {"cpu": 10**9})


@pytest.mark.asyncio
async def test_releasing_nothing_is_harmless(store: Store) -> None:
    await store.release(name("pod"))
