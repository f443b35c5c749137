"""What berth needs from a store: decisions marked as emitted, and atomic reservations."""

from __future__ import annotations

import uuid

import pytest

from berth.core.ports import ReservationStore


def name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


@pytest.mark.asyncio
async def test_decided_once_marked(store: ReservationStore) -> None:
    d, e = name("d"), name("d")
    assert not await store.decided(d)
    await store.mark_decided([d, e])
    assert await store.decided(d) and await store.decided(e)
    await store.mark_decided([d])  # marked again: no change
    assert await store.decided(d)
    assert not await store.decided(name("d"))


@pytest.mark.asyncio
async def test_a_pv_is_reserved_once(store: ReservationStore) -> None:
    a, b, pv = name("pod"), name("pod"), name("pv")
    assert await store.reserve(a, "n1", [pv], {})
    assert not await store.reserve(b, "n1", [pv, name("pv")], {})
    assert await store.reservation(b) is None
    assert await store.reserve(a, "n1", [pv], {})  # the same reservation again is fine
    await store.release(a)
    assert await store.reserve(b, "n1", [pv], {})
    assert await store.reservation(b) == ("n1", [pv])


@pytest.mark.asyncio
async def test_reservations_never_overcommit_a_node(store: ReservationStore) -> None:
    node = name("node")
    budget = {"cpu": 3000, "memory": 8}  # allocatable less what is bound, as the scorer sees it
    a, b = name("pod"), name("pod")
    assert await store.reserve(a, node, [], {"cpu": 2000}, budget)
    assert not await store.reserve(b, node, [], {"cpu": 1500}, budget)
    assert await store.reserve(b, node, [], {"cpu": 1000, "memory": 8}, budget)
    assert await store.reserved(node) == {"cpu": 3000, "memory": 8}
    await store.release(a)
    assert await store.reserved(node) == {"cpu": 1000, "memory": 8}
    assert await store.reserve(name("pod"), node, [], {"cpu": 2000}, budget)


@pytest.mark.asyncio
async def test_without_a_budget_only_pvs_are_checked(store: ReservationStore) -> None:
    assert await store.reserve(name("pod"), name("node"), [], {"cpu": 10**9})


@pytest.mark.asyncio
async def test_big_numbers_stay_exact(store: ReservationStore) -> None:
    node, big = name("node"), 2**50 + 1
    assert await store.reserve(name("pod"), node, [], {"memory": big}, {"memory": big})
    assert await store.reserved(node) == {"memory": big}
    assert not await store.reserve(name("pod"), node, [], {"memory": 1}, {"memory": big})


@pytest.mark.asyncio
async def test_releasing_nothing_is_harmless(store: ReservationStore) -> None:
    await store.release(name("pod"))


@pytest.mark.asyncio
async def test_the_epoch_is_set_once(store: ReservationStore) -> None:
    assert await store.epoch() is None
    token = await store.claim_epoch()
    assert token and await store.epoch() == token
    assert await store.claim_epoch() == token


@pytest.mark.asyncio
async def test_holdings_lists_every_reservation(store: ReservationStore) -> None:
    """What a scorer starting from Redis takes back: pod -> node."""
    assert await store.holdings() == {}
    assert await store.reserve("ns/a", "n1", ["pv-1"], {"cpu": 1})
    assert await store.reserve("ns/b", "n2", [], {"cpu": 1})
    assert await store.holdings() == {"ns/a": "n1", "ns/b": "n2"}
    await store.release("ns/a")
    assert await store.holdings() == {"ns/b": "n2"}
