"""`berth indexer`: run the faust worker, with berth's HTTP server (health, readiness, metrics)."""

from __future__ import annotations

import asyncio
import logging
import time

import faust

from berth.adapters.runtime.connect import check_redis, kafka_bus, topics_of
from berth.adapters.runtime.http import HttpServer
from berth.adapters.runtime.metrics import Metrics
from berth.settings import Settings
from berth_indexer.app import WATERMARKS, build

log = logging.getLogger("berth.indexer")


async def create_topics(settings: Settings) -> None:
    """faust does not create source topics (and Tansu would give them the wrong partition count)."""
    bus = kafka_bus(settings, "indexer-setup")
    await bus.start()
    try:
        await bus.create_topics({**topics_of(settings), WATERMARKS: 1})
    finally:
        await bus.stop()


def serve(settings: Settings, data_dir: str) -> int:
    asyncio.run(check_redis(settings))  # before faust starts: a clear line, not a worker crash
    asyncio.run(create_topics(settings))
    metrics = Metrics("indexer")
    app, indexer = build(settings, metrics, data_dir)
    most = settings.service.indexer_max_lag_seconds

    def ready() -> bool:
        """Written a batch, and no further behind the topic's end than the setting allows."""
        return indexer.batches > 0 and indexer.lag(indexer.highwater, time.time())[1] <= most

    def detail() -> str:
        events, seconds = indexer.lag(indexer.highwater, time.time())
        return f"lag: {events} events, {seconds:.0f} s (at most {most} s)"

    http = HttpServer(metrics, ready, settings.service.http_port, detail=detail)

    @app.task  # type: ignore[untyped-decorator]
    async def serve_http() -> None:
        port = await http.start()
        log.info("serving /healthz, /readyz and /metrics", extra={"port": port})

    # override_logging=False keeps berth's JSON lines (berth.adapters.runtime.logs): faust's own set-up
    # replaces the root handler and disables every logger made before it, berth's included
    worker = faust.Worker(
        app, loglevel=settings.service.log_level, quiet=True, redirect_stdouts=False, override_logging=False
    )
    worker.execute_from_commandline()
    return 0
