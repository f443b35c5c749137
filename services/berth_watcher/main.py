"""`berth watcher` as a service: the Kubernetes adapter's events onto Kafka, /healthz, /readyz, /metrics."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from dataclasses import dataclass

from berth.adapters.files.eventlog import EventWriter
from berth.adapters.kube.client import KINDS, Kind, KubeClient
from berth.adapters.kube.watch import Watcher
from berth.adapters.runtime.connect import kafka_bus
from berth.adapters.runtime.http import HttpServer
from berth.adapters.runtime.metrics import Metrics
from berth.core.api.watch import WatchEvent
from berth.core.ports import Bus
from berth.settings import Settings
from berth_watcher.service import WatcherService

log = logging.getLogger("berth.watcher")


class Recorder:
    """The --record file, opened at the first event: a watcher that never reached the server leaves no
    empty file behind, and a snapshot (--once) that failed leaves none at all."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._writer: EventWriter | None = None

    def write(self, ev: WatchEvent) -> None:
        if self._writer is None:
            self._writer = EventWriter(self.path)
        self._writer.write(ev)

    def close(self, complete: bool) -> None:
        """complete: an empty cluster is an empty log (--once); else an unstarted file is not made and
        a started one is kept unless `complete` is False for a snapshot (see serve)."""
        if self._writer is None:
            if complete:
                EventWriter(self.path).close()
            return
        self._writer.close()
        self._writer = None


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
    record = Recorder(options.record) if options.record else None
    finished = False
    try:
        if http is not None:
            await http.start()
        if bus is not None:
            await bus.start()
            await bus.create_topics({settings.topics.cluster_events: settings.topics.partitions})
        service = WatcherService(watcher, bus, settings.topics.cluster_events, record, metrics=metrics)
        log.info("watching", extra={"kinds": len(options.kinds), "server": client.host})
        task = asyncio.create_task(service.run(), name="watcher")
        stopping = asyncio.create_task(stop.wait())
        try:
            done, _ = await asyncio.wait([task, stopping], return_when=asyncio.FIRST_COMPLETED)
        finally:
            for t in (task, stopping):
                t.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await stopping
            with contextlib.suppress(asyncio.CancelledError):
                await task  # re-raises what stopped the service, if not the stop
        log.info("stopped", extra={"events": service.published})
        finished = task in done or not options.once
        if not finished and record is not None:
            log.warning("stopped before every kind was listed: no snapshot written", extra={"record": record.path})
        return service
    finally:
        if record is not None:
            record.close(complete=finished and options.once)
            if options.once and not finished:  # a snapshot cut short (an error, a signal) is no snapshot
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(record.path)
        if bus is not None:
            await bus.stop()
        if http is not None:
            await http.stop()
        if own_client:
            await client.close()
