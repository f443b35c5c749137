"""`berth watcher` as a service: the Kubernetes adapter's events onto Kafka, /healthz, /readyz, /metrics."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass

from berth.adapters.files.eventlog import EventWriter
from berth.adapters.kube.client import KINDS, Kind, KubeClient
from berth.adapters.kube.watch import Watcher
from berth.adapters.runtime.connect import kafka_bus
from berth.adapters.runtime.http import HttpServer
from berth.adapters.runtime.metrics import Metrics
from berth.core.ports import Bus
from berth.settings import Settings
from berth_watcher.service import WatcherService

log = logging.getLogger("berth.watcher")


@dataclass(frozen=True)
class Options:
    """What the command line chooses."""

    kubeconfig: str | None = None
    context: str | None = None
    namespace: str | None = None
    kinds: tuple[Kind, ...] = KINDS
    record: str | None = None  # also write the events to this event log
    publish: bool = True  # False: no Kafka and no HTTP server (recording a cluster from a laptop)
    once: bool = False  # list every kind once and stop: a snapshot


async def serve(
    settings: Settings,
    stop: asyncio.Event,
    options: Options | None = None,
    client: KubeClient | None = None,
    bus: Bus | None = None,
) -> WatcherService:
    """Watch and publish until `stop` is set (or, with `once`, every kind has been listed). Ready once
    every kind has been listed. A client or bus passed in is used instead of one built from the settings."""
    options = options or Options()
    own_client = client is None
    client = client or await KubeClient.connect(options.kubeconfig, options.context)
    if bus is None and options.publish:
        bus = kafka_bus(settings, "watcher")
    metrics = Metrics("watcher")
    watcher = Watcher(client, options.kinds, namespace=options.namespace, once=options.once)
    http = HttpServer(metrics, lambda: watcher.synced, settings.service.http_port) if options.publish else None
    record: EventWriter | None = None
    try:
        if http is not None:
            await http.start()
        if bus is not None:
            await bus.start()
            await bus.create_topics({settings.topics.cluster_events: settings.topics.partitions})
        if options.record:
            record = EventWriter(options.record)
        service = WatcherService(watcher, bus, settings.topics.cluster_events, record, metrics=metrics)
        log.info("watching", extra={"kinds": len(options.kinds), "server": client.host})
        task = asyncio.create_task(service.run(), name="watcher")
        stopping = asyncio.create_task(stop.wait())
        try:
            await asyncio.wait([task, stopping], return_when=asyncio.FIRST_COMPLETED)
        finally:
            for t in (task, stopping):
                t.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await stopping
            with contextlib.suppress(asyncio.CancelledError):
                await task  # re-raises what stopped the service, if not the stop
        log.info("stopped", extra={"events": service.published})
        return service
    finally:
        if record is not None:
            record.close()
        if bus is not None:
            await bus.stop()
        if http is not None:
            await http.stop()
        if own_client:
            await client.close()
