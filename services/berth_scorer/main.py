"""`berth scorer`: decisions for every pending pod, from Kafka, with reservations in Redis."""

from __future__ import annotations

import asyncio
import logging

from berth.adapters import worker
from berth.adapters.connect import READY_LAG, kafka_bus, rebuild, redis_store, topics_of
from berth.adapters.http import HttpServer
from berth.adapters.metrics import Metrics
from berth.core.pipeline.scorer import ScorerEngine
from berth.core.ports import Bus, Store
from berth.core.scheduler import Profile
from berth.settings import Settings
from berth_scorer.service import Scorer

log = logging.getLogger("berth.scorer")


async def serve(
    settings: Settings, profile: Profile, stop: asyncio.Event, bus: Bus | None = None, store: Store | None = None
) -> None:
    metrics = Metrics("scorer")
    engine = ScorerEngine(profile, top_nodes=settings.service.top_nodes or None)
    engine.scheduler.observe = lambda plugin, point, s: (
        metrics.decision_seconds.observe(s) if point == "Decide" else metrics.plugin(plugin, point, s)
    )
    progress = worker.Progress()
    rebuilt = False
    http = HttpServer(metrics, lambda: rebuilt and 0 <= progress.lag < READY_LAG, settings.service.http_port)
    bus = bus or kafka_bus(settings, "scorer")
    store = store or redis_store(settings)
    t = settings.topics
    await http.start()
    await bus.start()
    try:
        await bus.create_topics(topics_of(settings))
        n = await rebuild(bus, t.cluster_events, settings.groups.scorer, engine.handle)
        engine.take_released()
        rebuilt = True
        log.info("state rebuilt", extra={"events": n, "pods": len(engine.state.pods)})
        scorer = Scorer(engine, bus, store, t.decisions, metrics)
        await worker.run(
            bus, t.cluster_events, settings.groups.scorer, scorer.handle, stop, progress,
            dead_letter_topic=t.dead_letter, service="scorer", drain=False, metrics=metrics,
        )  # fmt: skip
    finally:
        await bus.stop()
        await store.close()
        await http.stop()
