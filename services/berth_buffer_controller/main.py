"""`berth buffer-controller`: CapacityBuffer statuses from Kafka onto berth.buffer-status."""

from __future__ import annotations

import asyncio

from berth.adapters.runtime.connect import kafka_bus
from berth.adapters.runtime.metrics import Metrics
from berth.adapters.runtime.service import StreamService
from berth.core.config.kubeschedulerconfig import SchedulerConfig
from berth.core.pipeline.buffers import BufferEngine
from berth.core.ports import Bus
from berth.settings import Settings
from berth_buffer_controller.service import BufferController, StatusWriter


async def serve(
    settings: Settings,
    config: SchedulerConfig,
    stop: asyncio.Event,
    bus: Bus | None = None,
    write_status: StatusWriter | None = None,
) -> None:
    metrics = Metrics("buffer-controller")
    bus = bus or kafka_bus(settings, "buffer-controller")
    controller = BufferController(BufferEngine(config), bus, settings.topics.buffer_status, metrics, write_status)
    service = StreamService(
        settings, settings.groups.buffer_controller, lambda: BufferEngine(config), controller, bus, metrics
    )
    await service.run(stop)
