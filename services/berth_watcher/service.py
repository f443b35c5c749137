"""The watcher's publisher: every event the Kubernetes adapter sees goes onto the cluster-events topic,
keyed by kind/namespace/name so one object's events stay in order, and, with a recorder, into an
event log `berth replay` reads. One task sends (the bus is not shared between concurrent senders)."""

from __future__ import annotations

import contextlib
from typing import Protocol

from berth.adapters.kube.watch import Watcher
from berth.adapters.runtime.metrics import Metrics
from berth.core.api.watch import WatchEvent, encode_event, event_key
from berth.core.ports import CLUSTER_EVENTS, Bus


class Record(Protocol):
    """Where events are recorded: an EventWriter, or the watcher's Recorder (opened at the first event)."""

    def write(self, ev: WatchEvent) -> None: ...


class WatcherService:
    def __init__(
        self,
        watcher: Watcher,
        bus: Bus | None,
        topic: str = CLUSTER_EVENTS,
        record: Record | None = None,
        flush_every: int = 1000,
        metrics: Metrics | None = None,
    ) -> None:
        self.watcher = watcher
        self.bus = bus
        self.topic = topic
        self.record = record
        self.flush_every = flush_every
        self.metrics = metrics
        self.published = 0
        self._unflushed = 0

    async def publish(self, ev: WatchEvent) -> None:
        if self.bus is not None:
            await self.bus.send(self.topic, encode_event(ev), event_key(ev))
            self._unflushed += 1
        if self.record is not None:
            self.record.write(ev)
        self.published += 1
        if self.metrics is not None:
            self.metrics.events.labels(self.metrics.service).inc()

    async def flush(self) -> None:
        if self.bus is not None and self._unflushed:
            await self.bus.flush()  # raises if a send failed: the watcher stops rather than lose events
            self._unflushed = 0

    async def run(self) -> None:
        """Until cancelled (or every kind is skipped). Flushes whenever it has caught up, and every
        `flush_every` events while it has not (the initial lists)."""
        try:
            async with contextlib.aclosing(self.watcher.events()) as events:
                async for ev in events:
                    await self.publish(ev)
                    if self.watcher.backlog == 0 or self._unflushed >= self.flush_every:
                        await self.flush()
        finally:
            await self.flush()
