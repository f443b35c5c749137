"""The scorer's handler: the engine decides, the store makes reservations atomic across replicas."""

from __future__ import annotations

import msgspec

from berth.core.events import Event
from berth.core.pipeline.records import RejectRecord
from berth.core.pipeline.scorer import ScorerEngine
from berth.core.ports import DECISIONS, Bus, Store


class Scorer:
    def __init__(self, engine: ScorerEngine, bus: Bus, store: Store, topic: str = DECISIONS) -> None:
        self.engine = engine
        self.bus = bus
        self.store = store
        self.topic = topic
        self._encoder = msgspec.json.Encoder()

    async def handle(self, ev: Event) -> RejectRecord | None:
        records, reject = self.engine.handle(ev)
        for r in records:
            if r.status == "Scheduled":
                held = self.engine.state.reserved(r.pod)
                pvs = [pv for _, pv in held.bindings] if held else []
                requests = held.pod.requests if held else {}
                if not await self.store.reserve(r.pod, r.node or "", pvs, requests):
                    self.engine.revoke(r.pod)  # another replica took the PVs or the room first
                    continue
            if await self.store.first_time(r.decision_id):
                await self.bus.send(self.topic, self._encoder.encode(r), r.pod.encode())
        for key in self.engine.take_released():
            await self.store.release(key)
        return reject
