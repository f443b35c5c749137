"""One stream service on an engine: what the scorer and the buffer controller share.

HTTP (/healthz, /readyz, /metrics) and readiness, the state built while the group is joined
(bootstrap.begin), the take-over on each assignment (bootstrap.start_state), a checkpoint after
every batch, and the worker loop. The service's own handler makes the decisions or statuses, and
adopts the engine each take-over builds.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any, Generic, Protocol, TypeVar

from berth.adapters.runtime import worker
from berth.adapters.runtime.bootstrap import Checkpoints, Early, Engine, Start, begin, start_state
from berth.adapters.runtime.connect import READY_LAG, redis_index, topics_of
from berth.adapters.runtime.http import HttpServer
from berth.adapters.runtime.metrics import Metrics
from berth.core.api.watch import Event
from berth.core.ports import Bus
from berth.settings import Settings

E = TypeVar("E", bound=Engine)


class EngineHandler(worker.StreamHandler, Protocol[E]):
    """A service's handler: it works on `engine`, which each take-over replaces."""

    engine: E

    async def adopt(self, got: Start[E]) -> dict[str, Any]:
        """A take-over built got.engine: make it the one in use. Returns what its log line adds."""
        ...


class StreamService(worker.StreamHandler, Generic[E]):
    """The worker loop's handler too: the service's own, with the take-over and the checkpoints."""

    def __init__(
        self,
        settings: Settings,
        group: str,
        make_engine: Callable[[], E],
        handler: EngineHandler[E],
        bus: Bus,
        metrics: Metrics,
    ) -> None:
        """make_engine: a fresh engine, for each state built (its plugins' state is per view). The
        service's name is the metrics'."""
        self.name = metrics.service
        self.settings = settings
        self.group = group
        self.make_engine = make_engine
        self.handler = handler
        self.bus = bus
        self.metrics = metrics
        self.log = logging.getLogger(f"berth.{self.name}")
        self.progress = worker.Progress()
        self.rebuilt = False
        self.source = "not started yet"
        self.http = HttpServer(metrics, self.ready, settings.service.http_port, detail=lambda: f"state: {self.source}")
        self.index = redis_index(settings)
        self.checkpoints = Checkpoints(self.index.r, settings.redis.key_prefix, group)
        self.early: asyncio.Future[Early[E]] | None = None
        self.held: list[int] = []  # the partitions of the last take-over
        self.base: dict[int, int] = {}  # per partition, the offset the checkpoint is at

    def ready(self) -> bool:
        return self.rebuilt and 0 <= self.progress.lag < READY_LAG

    async def run(self, stop: asyncio.Event) -> None:
        """Until `stop` is set; then at once after the batch in hand."""
        t = self.settings.topics
        # the state is built for every partition while the group is joined; the first take-over
        # takes it if those are the partitions it is given (bootstrap.prepare)
        self.early = begin(
            self.bus, self.index, self.checkpoints, t.cluster_events, list(range(t.partitions)), self.make_engine()
        )
        await self.http.start()
        await self.bus.start()
        try:
            await self.bus.create_topics(topics_of(self.settings))
            await worker.run(
                self.bus, t.cluster_events, self.group, self, stop, self.progress,
                dead_letter_topic=t.dead_letter, service=self.name, drain=False, metrics=self.metrics,
            )  # fmt: skip
        finally:
            if self.early is not None:
                self.early.cancel()
            await self.bus.stop()
            await self.index.r.aclose()
            await self.http.stop()

    async def handle(self, ev: Event) -> None:
        await self.handler.handle(ev)

    def apply_only(self, ev: Event) -> None:
        self.handler.apply_only(ev)

    async def before_batch(self) -> None:
        await self.handler.before_batch()

    async def on_flushed(self) -> None:
        await self.handler.on_flushed()

    def kinds(self) -> frozenset[tuple[str, str]] | None:
        return self.handler.kinds()

    async def on_assign(self, partitions: list[int]) -> dict[int, int]:
        """The take-over: build the state from the indexer's in Redis, this group's checkpoint
        and the events in between (or the whole history), then go on from there."""
        pre, self.early = self.early, None
        begun = time.monotonic()
        t = self.settings.topics
        got = await start_state(
            self.bus, self.index, self.checkpoints, t.cluster_events, partitions, self.make_engine(), pre
        )
        more = await self.handler.adopt(got)
        self.held, self.base = partitions, dict(got.committed)
        await self.checkpoint({})  # the state as of the commit: a standby after this one need not rebuild it
        seconds = time.monotonic() - begun
        self.metrics.started(got.source, got.objects, got.events, seconds)
        self.source = f"from {got.source} ({got.objects} objects, {got.events} events, {seconds:.1f} s)"
        self.rebuilt = True
        self.log.info(
            f"state built from {got.source}",
            extra={
                "source": got.source, "objects": got.objects, "events": got.events, "watermarks": got.watermarks,
                "resumed": got.resumed, "ahead": got.ahead, **more, "seconds": round(seconds, 3),
            },
        )  # fmt: skip
        return got.passed

    async def checkpoint(self, positions: dict[int, int]) -> None:
        self.base.update(positions)
        await self.checkpoints.save(self.held, dict(self.base), self.handler.engine.checkpoint())
