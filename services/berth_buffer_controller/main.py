"""`berth buffer-controller`: CapacityBuffer statuses from Kafka onto berth.buffer-status."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from berth.adapters import worker
from berth.adapters.connect import READY_LAG, kafka_bus, rebuild, topics_of
from berth.adapters.http import HttpServer
from berth.adapters.metrics import Metrics
from berth.core.config import SchedulerConfig
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
    http = HttpServer(metrics, lambda: rebuilt and 0 <= progress.lag < READY_LAG, settings.service.http_port)
    bus = bus or kafka_bus(settings, "buffer-controller")
    t = settings.topics
    await http.start()
    await bus.start()
    try:
        await bus.create_topics(topics_of(settings))
        controller = BufferController(engine, bus, t.buffer_status, metrics, write_status)

        async def take_over() -> None:
            nonlocal rebuilt
            fresh = BufferEngine(config)
            n = await rebuild(bus, t.cluster_events, settings.groups.buffer_controller, fresh.handle)
            controller.engine = fresh
            rebuilt = True
            log.info("state rebuilt", extra={"events": n, "buffers": len(fresh.store.buffers)})

        await worker.run(
            bus, t.cluster_events, settings.groups.buffer_controller, controller.handle, stop, progress,
            dead_letter_topic=t.dead_letter, service="buffer-controller", drain=False, metrics=metrics,
            on_assign=take_over,
        )  # fmt: skip
    finally:
        await bus.stop()
        await http.stop()
