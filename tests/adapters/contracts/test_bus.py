"""What berth needs from a bus: per-key order, groups, committed positions, at-least-once."""

from __future__ import annotations

import asyncio
import contextlib
import uuid

import pytest

from berth.core.ports import Bus, Message


def topic() -> str:
    return f"test.{uuid.uuid4().hex[:8]}"


async def drain(bus: Bus, topics: list[str], group: str, want: int) -> list[Message]:
    c = bus.consumer(topics, group)
    await c.start()
    got: list[Message] = []
    for _ in range(50):
        got += await c.getmany(100, timeout=0.2)
        if len(got) >= want:
            break
    await c.commit()
    await c.stop()
    return got


@pytest.mark.asyncio
async def test_one_keys_messages_stay_in_order(bus: Bus) -> None:
    t = topic()
    await bus.create_topics({t: 3})
    for i in range(30):
        await bus.send(t, str(i).encode(), key=f"k{i % 4}".encode())
    await bus.flush()
    got = await drain(bus, [t], "g", 30)
    assert len(got) == 30
    for k in range(4):
        values = [int(m.value) for m in got if m.key == f"k{k}".encode()]
        assert values == sorted(values) and len(values) in (7, 8)
        assert len({m.partition for m in got if m.key == f"k{k}".encode()}) == 1


@pytest.mark.asyncio
async def test_groups_each_see_everything(bus: Bus) -> None:
    t = topic()
    await bus.create_topics({t: 1})
    for i in range(5):
        await bus.send(t, bytes([i]))
    await bus.flush()
    a = await drain(bus, [t], "a", 5)
    b = await drain(bus, [t], "b", 5)
    assert [m.value for m in a] == [m.value for m in b] == [bytes([i]) for i in range(5)]


@pytest.mark.asyncio
async def test_committed_position_survives_and_uncommitted_is_redelivered(bus: Bus) -> None:
    t = topic()
    await bus.create_topics({t: 1})
    for i in range(6):
        await bus.send(t, bytes([i]))
    await bus.flush()
    c = bus.consumer([t], "g")
    await c.start()
    first: list[Message] = []
    while len(first) < 6:
        first += await c.getmany(3, timeout=0.2)
        if len(first) == 3:
            await c.commit()  # commit after the first three only
    await c.stop()
    again = await drain(bus, [t], "g", 3)
    assert [m.value for m in again] == [bytes([i]) for i in range(3, 6)]
    assert [m.offset for m in again] == [3, 4, 5]


@pytest.mark.asyncio
async def test_lag_counts_what_is_left(bus: Bus) -> None:
    t = topic()
    await bus.create_topics({t: 1})
    for i in range(4):
        await bus.send(t, bytes([i]))
    await bus.flush()
    c = bus.consumer([t], "g")
    await c.start()
    got = await c.getmany(1, timeout=0.5)
    assert len(got) == 1
    assert await c.lag() == 3
    await c.stop()


@pytest.mark.asyncio
async def test_history_is_what_the_group_committed(bus: Bus) -> None:
    t = topic()
    await bus.create_topics({t: 1})
    for i in range(5):
        await bus.send(t, bytes([i]))
    await bus.flush()
    assert await bus.history(t, "g") == []
    c = bus.consumer([t], "g")
    await c.start()
    got: list[Message] = []
    while len(got) < 3:
        got += await c.getmany(3 - len(got), timeout=0.2)
    await c.commit()
    await c.stop()
    assert [m.value for m in await bus.history(t, "g")] == [bytes([0]), bytes([1]), bytes([2])]


@pytest.mark.asyncio
async def test_records_are_every_message_so_far_in_partition_order(bus: Bus) -> None:
    t = topic()
    assert await bus.records(t) == []  # no such topic
    await bus.create_topics({t: 2})
    assert await bus.records(t) == []
    keys = [f"k{i}".encode() for i in range(8)]
    for i, key in enumerate(keys):
        await bus.send(t, bytes([i]), key)
    await bus.flush()
    got = await bus.records(t)
    assert sorted(m.value for m in got) == [bytes([i]) for i in range(8)]
    assert [(m.partition, m.offset) for m in got] == sorted((m.partition, m.offset) for m in got)
    await bus.send(t, bytes([8]), keys[0])
    await bus.flush()
    assert len(await bus.records(t)) == 9


@pytest.mark.asyncio
async def test_tail_gives_what_is_there_then_what_comes(bus: Bus) -> None:
    t = topic()
    await bus.create_topics({t: 2})
    for i in range(4):
        await bus.send(t, bytes([i]), f"k{i}".encode())
    await bus.flush()
    got: list[bytes] = []
    async with asyncio.timeout(30), contextlib.aclosing(bus.tail(t)) as tail:
        async for m in tail:
            got.append(m.value)
            if len(got) == 4:
                await bus.send(t, b"\x09", b"k0")  # sent while tailing: it comes too
                await bus.flush()
            if len(got) == 5:
                break
    assert sorted(got[:4]) == [bytes([i]) for i in range(4)] and got[4] == b"\x09"
    assert len(await drain(bus, [t], "nobody-committed-for-tail", 5)) == 5  # tail joined no group
