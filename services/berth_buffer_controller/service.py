"""The buffer controller's handler: statuses as they change, onto the buffer-status topic."""

from __future__ import annotations

import msgspec

from berth.core.events import Event
from berth.core.pipeline.buffers import BufferEngine
from berth.core.pipeline.records import RejectRecord
from berth.core.ports import BUFFER_STATUS, Bus


class BufferController:
    def __init__(self, engine: BufferEngine, bus: Bus, topic: str = BUFFER_STATUS) -> None:
        self.engine = engine
        self.bus = bus
        self.topic = topic
        self._encoder = msgspec.json.Encoder()

    async def handle(self, ev: Event) -> RejectRecord | None:
        records, reject = self.engine.handle(ev)
        for r in records:
            await self.bus.send(self.topic, self._encoder.encode(r), r.buffer.encode())
        return reject
