"""berth's changes to faust for the indexer (berth_indexer.tuning), without a broker: message
delivery run in place or raced against a flow suspension, the lean monitor and the raw schema."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from mode import Service
from mode.services import WaitResults

from berth_indexer.tuning import LeanMonitor, RawBytes, first_of

pytestmark = pytest.mark.timeout(10)


class Flow(Service):
    """Stands in for faust's consumer: a mode service with a suspend_flow event."""

    def __init__(self) -> None:
        super().__init__()
        self.suspend_flow = asyncio.Event()
        self.general_calls = 0

    async def general(self, *coros: Any, timeout: Any = None) -> WaitResults:
        self.general_calls += 1
        return await self.wait_first(*coros, timeout=timeout)


async def deliver_at_once(log: list[str]) -> int:
    log.append("delivered")
    return 5


async def deliver_after(gate: asyncio.Future[int], log: list[str]) -> int:
    try:
        got = await gate
    finally:
        log.append("left")
    log.append("delivered")
    return got


async def deliver_fails(log: list[str]) -> int:
    raise ValueError("bad message")


async def run(flow: Flow, deliver: Callable[..., Awaitable[int]], *args: Any) -> asyncio.Task[WaitResults]:
    task = asyncio.ensure_future(first_of(flow, flow.general, (deliver(*args), flow.suspend_flow.wait()), None))
    await asyncio.sleep(0.01)
    return task


@pytest.mark.asyncio
async def test_a_delivery_that_needs_no_wait_runs_in_place() -> None:
    flow, log = Flow(), []
    task = await run(flow, deliver_at_once, log)
    got = await task
    assert (got.results, got.stopped, log, flow.general_calls) == ([5], False, ["delivered"], 0)


@pytest.mark.parametrize("outcome", ["result", "exception"])
@pytest.mark.asyncio
async def test_a_delivery_that_waits_is_resumed_when_its_wait_ends(outcome: str) -> None:
    flow, log = Flow(), []
    gate: asyncio.Future[int] = asyncio.get_running_loop().create_future()
    task = await run(flow, deliver_after, gate, log)
    assert not task.done() and flow.general_calls == 1 and log == []
    if outcome == "result":
        gate.set_result(7)
        got = await task
        assert got.results == [7] and log == ["left", "delivered"]
    else:
        gate.set_exception(KeyError("gone"))
        with pytest.raises(KeyError):
            await task
        assert log == ["left"]


@pytest.mark.asyncio
async def test_a_waiting_delivery_is_abandoned_when_the_flow_is_suspended() -> None:
    flow, log = Flow(), []
    gate: asyncio.Future[int] = asyncio.get_running_loop().create_future()
    task = await run(flow, deliver_after, gate, log)
    flow.suspend_flow.set()
    got = await task
    await asyncio.sleep(0.01)
    assert got.results == [True] and log == ["left"]  # the delivery was cancelled, not completed
    assert gate.cancelled()


@pytest.mark.asyncio
async def test_a_suspended_flow_takes_the_general_path_from_the_start() -> None:
    flow, log = Flow(), []
    flow.suspend_flow.set()
    task = await run(flow, deliver_at_once, log)
    await task
    assert flow.general_calls == 1


@pytest.mark.asyncio
async def test_a_delivery_that_fails_at_once_raises() -> None:
    flow, log = Flow(), []
    task = await run(flow, deliver_fails, log)
    with pytest.raises(ValueError, match="bad message"):
        await task
    assert flow.general_calls == 0


class Msg:
    key = b"Pod/ns/a"
    value = b'{"type":"ADDED"}'


def test_raw_bytes_hands_over_the_wire_bytes() -> None:
    schema = RawBytes()
    assert schema.loads_key(None, Msg()) == Msg.key
    assert schema.loads_value(None, Msg()) == Msg.value


@pytest.mark.asyncio
async def test_the_lean_monitor_still_notes_when_a_partition_last_reached_a_stream() -> None:
    monitor = LeanMonitor()
    tp = ("t", 0)
    monitor.on_message_in(tp, 41, Msg())
    assert monitor.on_stream_event_in(tp, 41, None, None) is None
    assert monitor.tp_read_offsets[tp] == 41 and tp in monitor.stream_inbound_time
    assert monitor.events_total == 0  # the per-event statistics are not kept
