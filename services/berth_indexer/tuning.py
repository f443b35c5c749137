"""What berth changes in faust for the indexer's throughput, each for a measured reason
(`python -m bench streaming`; the figures are in docs/services.md).

- The fetch wait. faust builds its worker consumer with fetch_max_wait_ms=1500 and polls for up to
  1 s, with no setting for either. One fetch carries every partition the worker has on a broker and
  the worker always has an idle one (faust's assignor topic), so the broker held each such fetch
  1.5 s and the event partition starved: the bare agent ran at a third of its CPU-bound rate.
  BERTH_KAFKA_FETCH_MAX_WAIT_MS sets both.
- Delivery in place (first_of): faust makes four tasks per message to race its delivery against
  a rebalance; delivery is run directly unless it has to wait.
- LeanMonitor and RawBytes skip per-event work berth does not use.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine, Generator
from time import monotonic
from typing import Any

import aiokafka
import faust
from faust.sensors.monitor import Monitor
from faust.transport.drivers import aiokafka as driver
from mode.services import WaitResults


def transport_for(app: faust.App, fetch_max_wait_ms: int) -> driver.Transport:
    """The consumer transport for `app`: faust's own, with the worker's fetch wait set."""

    class ConsumerThread(driver.AIOKafkaConsumerThread):
        def _create_worker_consumer(self, transport: Any) -> aiokafka.AIOKafkaConsumer:
            consumer = super()._create_worker_consumer(transport)
            # aiokafka keeps the constructor argument here until start() hands it to its Fetcher
            if not hasattr(consumer, "_fetch_max_wait_ms"):
                raise RuntimeError("this aiokafka does not keep _fetch_max_wait_ms; berth's fetch wait cannot be set")
            consumer._fetch_max_wait_ms = fetch_max_wait_ms
            return consumer

        async def getmany(self, active_partitions: Any, timeout: float) -> Any:
            # faust polls for up to 1 s; a partition paused because its stream buffer was full
            # and resumed meanwhile would wait that long to be fetched again
            return await super().getmany(active_partitions, min(timeout, fetch_max_wait_ms / 1000))

    class WaitingConsumer(driver.Consumer):
        def _new_consumer_thread(self) -> driver.AIOKafkaConsumerThread:
            return ConsumerThread(self, loop=self.loop, beacon=self.beacon)

        async def wait_first(self, *coros: Any, timeout: Any = None) -> WaitResults:
            return await first_of(self, super().wait_first, coros, timeout)

    class Transport(driver.Transport):
        Consumer = WaitingConsumer

    return Transport(app.conf.broker_consumer, app)


async def first_of(
    service: Any, general: Callable[..., Awaitable[WaitResults]], coros: tuple[Any, ...], timeout: Any
) -> WaitResults:
    """mode's wait_first for faust's delivery of one message: (deliver(message), suspend_flow.wait()).
    The general path makes four tasks and an asyncio.wait per message, a fifth of the worker's CPU.
    Delivery almost always completes without suspending (the stream's queue has room), so it is run
    in place; only if it suspends does the rest of it race suspend_flow as before. While the flow is
    suspended or the service stopping, the general path is taken from the start."""
    if len(coros) != 2 or timeout is not None or not asyncio.iscoroutine(coros[0]):
        return await general(*coros, timeout=timeout)
    deliver, other = coros
    if service.should_stop or service.suspend_flow.is_set():
        return await general(*coros, timeout=timeout)
    try:
        yielded = deliver.send(None)
    except BaseException as exc:  # done (StopIteration) or failed: `other` was never needed
        if asyncio.iscoroutine(other):
            other.close()
        if isinstance(exc, StopIteration):
            return WaitResults([deliver], [exc.value], False)
        raise
    return await general(resume(deliver, yielded), other, timeout=timeout)


class _Yield:
    """Awaiting it hands `value` to the task running us, as the coroutine being resumed did."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def __await__(self) -> Generator[Any, Any, Any]:
        return (yield self.value)


async def resume(coro: Coroutine[Any, Any, Any], yielded: Any) -> Any:
    """Go on running `coro`, which has already run up to yielding `yielded`, as a task would."""
    while True:
        try:
            sent = await _Yield(yielded)
        except BaseException as exc:  # cancellation and the rest go on into coro
            try:
                yielded = coro.throw(exc)
            except StopIteration as done:
                return done.value
            continue
        try:
            yielded = coro.send(sent)
        except StopIteration as done:
            return done.value


class LeanMonitor(Monitor):
    """faust's Monitor without its per-event statistics, which feed faust's web views (off in
    berth, whose figures are its own Prometheus metrics): a tenth of the worker's CPU. It still
    notes when each partition last reached a stream, which faust's stall warnings read."""

    def on_message_in(self, tp: Any, offset: int, message: Any) -> None:
        self.tp_read_offsets[tp] = offset

    def on_stream_event_in(self, tp: Any, offset: int, stream: Any, event: Any) -> None:
        self.stream_inbound_time[tp] = monotonic()

    def on_message_out(self, tp: Any, offset: int, message: Any) -> None:
        pass


class RawBytes(faust.Schema):  # type: ignore[type-arg]
    """Keys and values as the bytes on the wire, without a trip through faust's codec registry
    (a tenth of the worker's CPU); the indexer decodes the values itself, with msgspec."""

    def __init__(self) -> None:
        super().__init__(key_type=bytes, value_type=bytes, key_serializer="raw", value_serializer="raw")

    def loads_key(self, app: Any, message: Any, *, loads: Any = None, serializer: Any = None) -> Any:
        return message.key

    def loads_value(self, app: Any, message: Any, *, loads: Any = None, serializer: Any = None) -> Any:
        return message.value
