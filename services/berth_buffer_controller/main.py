"""`berth buffer-controller`: CapacityBuffer statuses from Kafka onto berth.buffer-status."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from berth.adapters.runtime import worker
from berth.adapters.runtime.bootstrap import Checkpoints, Early, begin, start_state
from berth.adapters.runtime.connect import READY_LAG, kafka_bus, redis_index, topics_of
from berth.adapters.runtime.http import HttpServer
from berth.adapters.runtime.metrics import Metrics
from berth.core.config.kubeschedulerconfig import SchedulerConfig
from berth.core.pipeline.buffers import BufferEngine
from berth.core.ports import Bus
from berth.settings import Settings
from berth_buffer_controller.service import BufferController

log = logging.getLogger("berth.buffer-controller")
StatusWriter = Callable[[str, dict[str, Any]], Awaitable[None]]


async def serve(
    settings: Settings,
    config: SchedulerConfig,
    stop: asyncio.Event,
    bus: Bus | None = None,
    write_status: StatusWriter | None = None,
) -> None:
    metrics = Metrics("buffer-controller")
    engine = BufferEngine(config)
    progress = worker.Progress()
    rebuilt = False
    source = "not started yet"
    http = HttpServer(
        metrics,
        lambda: rebuilt and 0 <= progress.lag < READY_LAG,
        settings.service.http_port,
        detail=lambda: f"state: {source}",
    )
    bus = bus or kafka_bus(settings, "buffer-controller")
    index = redis_index(settings)
    t = settings.topics
    checkpoints = Checkpoints(index.r, settings.redis.key_prefix, settings.groups.buffer_controller)
    # the state is built for every partition while the group is joined; the first take_over takes
    # it if those are the partitions it is given (bootstrap.prepare)
    early: asyncio.Future[Early[BufferEngine]] | None = begin(
        bus, index, checkpoints, t.cluster_events, list(range(t.partitions)), BufferEngine(config)
    )
    await http.start()
    await bus.start()
    try:
        await bus.create_topics(topics_of(settings))
        controller = BufferController(engine, bus, t.buffer_status, metrics, write_status)

        held_partitions: list[int] = []
        base: dict[int, int] = {}

        async def take_over(partitions: list[int]) -> dict[int, int]:
            """Partitions assigned: state from the indexer's in Redis, this group's checkpoint and
            the events in between (or the whole history); then go on."""
            nonlocal rebuilt, source, held_partitions, base, early
            pre, early = early, None
            begun = time.monotonic()
            got = await start_state(bus, index, checkpoints, t.cluster_events, partitions, BufferEngine(config), pre)
            fresh = got.engine
            controller.engine = fresh
            held_partitions, base = partitions, dict(got.committed)
            await save({})  # the state as of the commit: a standby after this one need not rebuild it
            seconds = time.monotonic() - begun
            metrics.started(got.source, got.objects, got.events, seconds)
            source = f"from {got.source} ({got.objects} objects, {got.events} events, {seconds:.1f} s)"
            rebuilt = True
            log.info(
                f"state built from {got.source}",
                extra={
                    "source": got.source, "objects": got.objects, "events": got.events, "watermarks": got.watermarks,
                    "resumed": got.resumed, "ahead": got.ahead, "buffers": len(fresh.store.buffers),
                    "seconds": round(seconds, 3),
                },
            )  # fmt: skip
            return got.passed

        async def save(positions: dict[int, int]) -> None:
            base.update(positions)
            await checkpoints.save(held_partitions, dict(base), controller.engine.checkpoint())

        await worker.run(
            bus, t.cluster_events, settings.groups.buffer_controller, controller.handle, stop, progress,
            dead_letter_topic=t.dead_letter, service="buffer-controller", drain=False, metrics=metrics,
            on_assign=take_over, apply_only=lambda ev: controller.engine.apply(ev), checkpoint=save,
        )  # fmt: skip
    finally:
        if early is not None:
            early.cancel()
        await bus.stop()
        await index.r.aclose()
        await http.stop()
