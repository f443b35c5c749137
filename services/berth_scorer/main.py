"""`berth scorer`: decisions for every pending pod, from Kafka, with reservations in Redis."""

from __future__ import annotations

import asyncio

from berth.adapters.runtime.connect import check_redis, kafka_bus, redis_store
from berth.adapters.runtime.metrics import Metrics
from berth.adapters.runtime.service import StreamService
from berth.core.config.kubeschedulerconfig import SchedulerConfig
from berth.core.pipeline.scorer import ScorerEngine
from berth.core.ports import Bus, ReservationStore
from berth.settings import Settings
from berth_scorer.binder import Binder
from berth_scorer.extender import ExtenderBindingArgs, Routes, extra_weights
from berth_scorer.service import Scorer


async def serve(
    settings: Settings,
    config: SchedulerConfig,
    stop: asyncio.Event,
    bus: Bus | None = None,
    store: ReservationStore | None = None,
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

    plugins = settings.service.extender_plugins
    extra_weights(make_engine(), plugins)  # fail fast: a plugin the profile does not score
    if store is None:
        await check_redis(settings)  # fail fast: reservations need Redis from the first decision
        store = redis_store(settings)
    bus = bus or kafka_bus(settings, "scorer")
    scorer = Scorer(make_engine(), bus, store, settings.topics.decisions, metrics, binder)
    service = StreamService(settings, settings.groups.scorer, make_engine, scorer, bus, metrics)

    async def bind(args: ExtenderBindingArgs) -> str:
        return await scorer.bind(args.pod_namespace, args.pod_name, args.pod_uid, args.node)

    # the extender API; the engine is looked up per request (a take-over swaps it)
    Routes(lambda: scorer.engine, bind if binder is not None else None, plugins).add_to(service.http.app)
    try:
        await service.run(stop)
    finally:
        await store.close()
