"""`berth scorer`: decisions for every pending pod, from Kafka, with reservations in Redis."""

from __future__ import annotations

import asyncio
import logging
import time

from berth.adapters.runtime import worker
from berth.adapters.runtime.bootstrap import REDIS, Checkpoints, Early, begin, start_state
from berth.adapters.runtime.connect import READY_LAG, check_redis, kafka_bus, redis_index, redis_store, topics_of
from berth.adapters.runtime.http import HttpServer
from berth.adapters.runtime.metrics import Metrics
from berth.core.config.kubeschedulerconfig import SchedulerConfig
from berth.core.pipeline.records import DecisionRecord
from berth.core.pipeline.scorer import ScorerEngine
from berth.core.ports import Bus, ReservationStore
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

    engine = make_engine()
    progress = worker.Progress()
    rebuilt = False
    source = "not started yet"
    http = HttpServer(
        metrics,
        lambda: rebuilt and 0 <= progress.lag < READY_LAG,
        settings.service.http_port,
        detail=lambda: f"state: {source}",
    )
    if store is None:
        await check_redis(settings)  # fail fast: reservations need Redis from the first decision
        store = redis_store(settings)
    index = redis_index(settings)
    bus = bus or kafka_bus(settings, "scorer")
    t = settings.topics
    scorer = Scorer(engine, bus, store, t.decisions, metrics, binder)

    async def bind(args: ExtenderBindingArgs) -> str:
        return await scorer.bind(args.pod_namespace, args.pod_name, args.pod_uid, args.node)

    # the extender API; the engine is looked up per request (take_over swaps it)
    Routes(lambda: scorer.engine, bind if binder is not None else None).add_to(http.app)
    checkpoints = Checkpoints(index.r, settings.redis.key_prefix, settings.groups.scorer)
    # the state is built for every partition while the group is joined; the first take_over takes
    # it if those are the partitions it is given (bootstrap.prepare)
    early: asyncio.Future[Early[ScorerEngine]] | None = begin(
        bus, index, checkpoints, t.cluster_events, list(range(t.partitions)), make_engine()
    )
    await http.start()
    await bus.start()
    try:
        await bus.create_topics(topics_of(settings))

        held_partitions: list[int] = []
        base: dict[int, int] = {}

        async def take_over(partitions: list[int]) -> dict[int, int]:
            """Partitions assigned: build the state from the indexer's in Redis, this group's
            checkpoint and the events in between (or the whole history), then go on from there."""
            nonlocal rebuilt, source, held_partitions, base, early
            pre, early = early, None
            assert store is not None
            begun = time.monotonic()
            got = await start_state(bus, index, checkpoints, t.cluster_events, partitions, make_engine(), pre)
            fresh = got.engine
            # a Redis that lost the scorer's state is recovered first: the decided marks come back from
            # the decisions topic before the start-time decisions below are published or deduplicated,
            # and the holdings they are decided against include this engine's reservations
            await scorer.check_store(fresh)
            late: list[DecisionRecord] = []
            if got.source == REDIS and (got.ahead or not got.resumed):
                # pods whose events this group has not handled (or whose waiting it does not know):
                # from here on, decisions an uninterrupted run need not have made, under ids of their own
                fresh.diverge(_positions(got.watermarks, got.committed))
                # in a thread, as the group's heartbeats go on
                decided = await asyncio.to_thread(fresh.decide_pending, await store.holdings(), got.ahead)
                if got.ahead:
                    late = decided
            fresh.take_released()
            scorer.engine = fresh
            held_partitions, base = partitions, dict(got.committed)
            if late:
                await scorer.publish(late)
                await bus.flush()
                await scorer.flushed()
            await save({})  # the state as of the commit: a standby after this one need not rebuild it
            seconds = time.monotonic() - begun
            metrics.started(got.source, got.objects, got.events, seconds)
            source = f"from {got.source} ({got.objects} objects, {got.events} events, {seconds:.1f} s)"
            rebuilt = True
            log.info(
                f"state built from {got.source}",
                extra={
                    "source": got.source, "objects": got.objects, "events": got.events, "watermarks": got.watermarks,
                    "resumed": got.resumed, "ahead": got.ahead, "pods": len(fresh.state.pods),
                    "seconds": round(seconds, 3), "decided": len(late),
                },
            )  # fmt: skip
            return got.passed

        async def save(positions: dict[int, int]) -> None:
            base.update(positions)
            await checkpoints.save(held_partitions, dict(base), scorer.engine.checkpoint())

        await worker.run(
            bus, t.cluster_events, settings.groups.scorer, scorer.handle, stop, progress,
            dead_letter_topic=t.dead_letter, service="scorer", drain=False, metrics=metrics, on_assign=take_over,
            on_flushed=scorer.flushed, before_batch=scorer.check_store,
            apply_only=lambda ev: scorer.engine.apply(ev), checkpoint=save, kinds=lambda: scorer.engine.reads(),
        )  # fmt: skip
    finally:
        if early is not None:
            early.cancel()
        await bus.stop()
        await store.close()
        await index.r.aclose()
        await http.stop()


def _positions(watermarks: dict[int, int], committed: dict[int, int]) -> str:
    """Where a start's state came from: per partition, the indexer's watermark and the group's commit."""
    return ",".join(f"{p}:{watermarks.get(p, 0)}:{committed.get(p, 0)}" for p in sorted({*watermarks, *committed}))
