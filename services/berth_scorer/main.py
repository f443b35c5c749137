"""`berth scorer`: decisions for every pending pod, from Kafka, with reservations in Redis."""

from __future__ import annotations

import asyncio
import logging

from berth.adapters import worker
from berth.adapters.connect import READY_LAG, check_redis, kafka_bus, rebuild, redis_store, topics_of
from berth.adapters.http import HttpServer
from berth.adapters.metrics import Metrics
from berth.core.config import SchedulerConfig
from berth.core.pipeline.scorer import ScorerEngine
from berth.core.ports import Bus, Store
from berth.settings import Settings
from berth_scorer.binder import Binder
from berth_scorer.extender import ExtenderBindingArgs, Routes
from berth_scorer.service import Scorer

log = logging.getLogger("berth.scorer")


async def serve(
    settings: Settings,
    config: SchedulerConfig,
    stop: asyncio.Event,
    bus: Bus | None = None,
    store: Store | None = None,
    binder: Binder | None = None,
) -> None:
    """Each (re)built engine makes its own plugins from config (their state is per view).
    binder: binder mode (--bind), berth binds pods and their volumes."""
    metrics = Metrics("scorer")

    def make_engine() -> ScorerEngine:
        engine = ScorerEngine(config, top_nodes=settings.service.top_nodes or None)
        if binder is not None:
            engine.serve(binder.scheduler_name)
        for scheduler in engine.schedulers.values():  # every profile's decisions are timed
            scheduler.observe = lambda plugin, point, s: (
                metrics.decision_seconds.observe(s) if point == "Decide" else metrics.plugin(plugin, point, s)
            )
        return engine

    engine = make_engine()
    progress = worker.Progress()
    rebuilt = False
    http = HttpServer(metrics, lambda: rebuilt and 0 <= progress.lag < READY_LAG, settings.service.http_port)
    if store is None:
        await check_redis(settings)  # fail fast: reservations need Redis from the first decision
        store = redis_store(settings)
    bus = bus or kafka_bus(settings, "scorer")
    t = settings.topics
    scorer = Scorer(engine, bus, store, t.decisions, metrics, binder)

    async def bind(args: ExtenderBindingArgs) -> str:
        return await scorer.bind(args.pod_namespace, args.pod_name, args.pod_uid, args.node)

    # the extender API; the engine is looked up per request (take_over swaps it)
    Routes(lambda: scorer.engine, bind if binder is not None else None).add_to(http.app)
    await http.start()
    await bus.start()
    try:
        await bus.create_topics(topics_of(settings))

        async def take_over() -> None:
            """Partitions assigned: rebuild from what the group committed, then go on from there."""
            nonlocal rebuilt
            fresh = make_engine()
            n = await rebuild(bus, t.cluster_events, settings.groups.scorer, fresh.handle)
            fresh.take_released()
            scorer.engine = fresh
            rebuilt = True
            log.info("state rebuilt", extra={"events": n, "pods": len(fresh.state.pods)})

        await worker.run(
            bus, t.cluster_events, settings.groups.scorer, scorer.handle, stop, progress,
            dead_letter_topic=t.dead_letter, service="scorer", drain=False, metrics=metrics, on_assign=take_over,
            on_flushed=scorer.flushed, before_batch=scorer.check_store,
        )  # fmt: skip
    finally:
        await bus.stop()
        await store.close()
        await http.stop()
