"""The scorer's handler: the engine decides, the store makes reservations atomic across replicas."""

from __future__ import annotations

import logging

import msgspec

from berth.adapters.metrics import Metrics
from berth.core.events import Event
from berth.core.pipeline.records import RejectRecord
from berth.core.pipeline.scorer import ScorerEngine
from berth.core.ports import DECISIONS, Bus, Store
from berth.core.resources import PODS

log = logging.getLogger("berth.scorer")


class Scorer:
    def __init__(
        self, engine: ScorerEngine, bus: Bus, store: Store, topic: str = DECISIONS, metrics: Metrics | None = None
    ) -> None:
        self.engine = engine
        self.bus = bus
        self.store = store
        self.topic = topic
        self.metrics = metrics
        self._encoder = msgspec.json.Encoder()

    async def handle(self, ev: Event) -> RejectRecord | None:
        records, reject = self.engine.handle(ev)
        for key in self.engine.take_released():  # first: what this event freed may be taken below
            await self.store.release(key)
        for r in records:
            if r.status == "Scheduled":
                held = self.engine.state.reserved(r.pod)
                pvs = [pv for _, pv in held.bindings] if held else []
                requests = {**held.pod.requests, PODS: 1} if held else {}
                budget = self.engine.budget(r.node or "", requests)
                ok = await self.store.reserve(r.pod, r.node or "", pvs, requests, budget)
                if self.metrics is not None:
                    self.metrics.reservations.labels("taken" if ok else "conflict").inc()
                if not ok:
                    self.engine.revoke(r.pod)  # another replica took the PVs or the room first
                    log.info("reservation conflict", extra={"decision_id": r.decision_id, "pod": r.pod, "node": r.node})
                    continue
            if await self.store.first_time(r.decision_id):
                await self.bus.send(self.topic, self._encoder.encode(r), r.pod.encode())
                if self.metrics is not None:
                    self.metrics.decisions.labels(r.status).inc()
                log.info(
                    r.message, extra={"decision_id": r.decision_id, "pod": r.pod, "status": r.status, "node": r.node}
                )
        return reject
