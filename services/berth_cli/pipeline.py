"""The embedded pipeline: the services' own handlers wired through the in-memory bus and store."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime

from berth.adapters.bus.memory import MemoryBus
from berth.adapters.runtime import worker
from berth.adapters.runtime.collector import COLLECTOR
from berth.adapters.store.memory import MemoryStore
from berth.core.api.watch import Event
from berth.core.config.kubeschedulerconfig import SchedulerConfig
from berth.core.pipeline.buffers import BufferEngine
from berth.core.pipeline.records import BufferStatusRecord, Record, decode_record
from berth.core.pipeline.scorer import ScorerEngine
from berth.core.pipeline.stats import RunStats
from berth.core.ports import BUFFER_STATUS, CLUSTER_EVENTS, DEAD_LETTER, DECISIONS, Message
from berth_buffer_controller.service import BufferController
from berth_scorer.service import Scorer


@dataclass
class Lane:
    """One scheduler config's scorer and buffer controller, with their own groups and topics."""

    label: str
    config: SchedulerConfig
    suffix: str = ""
    top_nodes: int | None = None
    preemption_grace: float | None = None  # replay: carry preemptions out (ScorerEngine)
    incremental: bool = True  # keep node-local plugins' answers per pod shape (Scheduler)
    scorer: ScorerEngine = field(init=False)
    buffers: BufferEngine = field(init=False)
    progress: worker.Progress = field(default_factory=worker.Progress)

    def __post_init__(self) -> None:
        # each engine gets its own plugins: their state (NodeMetrics) belongs to one cluster view;
        # the models decoded from the events they both read are shared (they are immutable)
        self.scorer = ScorerEngine(
            self.config,
            label=self.label,
            top_nodes=self.top_nodes,
            preemption_grace=self.preemption_grace,
            incremental=self.incremental,
        )
        self.buffers = BufferEngine(self.config)

    @property
    def decisions_topic(self) -> str:
        return DECISIONS + self.suffix

    @property
    def status_topic(self) -> str:
        return BUFFER_STATUS + self.suffix


class Pipeline:
    def __init__(self, lanes: list[Lane], speed: float | None = None) -> None:
        self.lanes = lanes
        self.speed = speed
        self.bus = MemoryBus()
        self.store = MemoryStore()
        self.published = 0
        self.done = asyncio.Event()

    async def publish(self, events: Iterable[Event]) -> None:
        start = time.perf_counter()
        first: datetime | None = None
        for ev in events:
            if self.speed and ev.ts is not None:
                first = first or ev.ts
                wait = (ev.ts - first).total_seconds() / self.speed - (time.perf_counter() - start)
                if wait > 0:
                    await asyncio.sleep(wait)
            # the line's own bytes, and the event decoded once by the reader for every lane's consumers
            self.bus.put(CLUSTER_EVENTS, ev.line, ev.key, event=ev)
            self.published += 1
            if self.published % 1000 == 0:
                await asyncio.sleep(0)  # let the workers run
                self.bus.forget(CLUSTER_EVENTS, self.groups())  # no lane reads them again
        self.done.set()
        self.bus.end()

    def groups(self) -> list[str]:
        return [_group(service, lane) for lane in self.lanes for service in ("scorer", "buffer-controller")]

    async def run(self, events: Iterable[Event]) -> None:
        await self.bus.create_topics({CLUSTER_EVENTS: 1})
        tasks = [asyncio.create_task(self.publish(events))]
        scorers = []
        for i, lane in enumerate(self.lanes):
            scorer = Scorer(lane.scorer, self.bus, self.store if i == 0 else MemoryStore(), lane.decisions_topic)
            scorers.append(scorer)
            controller = BufferController(lane.buffers, self.bus, lane.status_topic)
            tasks.append(
                asyncio.create_task(
                    worker.run(self.bus, CLUSTER_EVENTS, _group("scorer", lane), scorer, self.done, lane.progress,
                               dead_letter_topic=DEAD_LETTER + lane.suffix)
                )
            )  # fmt: skip
            tasks.append(
                asyncio.create_task(
                    worker.run(self.bus, CLUSTER_EVENTS, _group("buffer-controller", lane), controller, self.done,
                               dead_letter_topic=DEAD_LETTER + ".buffer-controller" + lane.suffix)
                )
            )  # fmt: skip
        try:
            await asyncio.gather(*tasks)
            for scorer in scorers:  # the log is over: what is due now would be retried before long
                await scorer.publish(scorer.engine.end_of_log())
            await self.bus.flush()
        finally:
            COLLECTOR.close()  # the workers froze what survived (berth.adapters.runtime.collector)

    def records(self, lane: Lane) -> list[Record]:
        """Decisions and buffer statuses in log order (decisions first at the same position)."""
        return sorted(
            self._decoded(lane.decisions_topic, lane.status_topic),
            key=lambda r: (r.position, isinstance(r, BufferStatusRecord)),
        )

    def dead_letters(self, lane: Lane) -> list[Record]:
        return self._decoded(DEAD_LETTER + lane.suffix)

    def _decoded(self, *topics: str) -> list[Record]:
        """The topics' records; a kind this version does not know is skipped (docs/records.md)."""
        decoded = (decode_record(m.value) for t in topics for m in self._all(t))
        return [r for r in decoded if r is not None]

    def _all(self, topic: str) -> list[Message]:
        return [m for part in self.bus.topics.get(topic, []) for m in part]

    def stats(self, lane: Lane, seconds: float) -> RunStats:
        stats = lane.scorer.finish()
        stats.buffers = lane.buffers.stats.buffers
        stats.over_run = lane.scorer.overrun.result(stats.buffers)
        stats.seconds = seconds
        return stats


def _group(service: str, lane: Lane) -> str:
    return f"berth-{service}{lane.suffix}"
