"""`berth watcher`: list and watch the cluster, publish every event to Kafka (and record it on request)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import sys
from typing import Any

from berth.adapters.kube.client import KINDS, select_kinds
from berth.adapters.kube.watch import GaveUp
from berth.adapters.runtime import logs
from berth.core.errors import ConfigError
from berth.settings import Settings, from_env
from berth_cli.common import positive_float
from berth_watcher.main import Options, serve


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "watcher",
        help="watch a cluster and publish its events to Kafka (the watcher service)",
        description="List and watch every kind berth reads and publish each event to the cluster-events topic "
        "in the event-log format, keyed by kind/namespace/name. Kafka, topics, the HTTP port (/healthz, /readyz, "
        "/metrics) and the log level come from BERTH_* settings. See docs/watcher.md.",
    )
    p.add_argument(
        "--kubeconfig",
        metavar="FILE",
        help="kubeconfig file (default: the in-cluster service account, else $KUBECONFIG or ~/.kube/config)",
    )
    p.add_argument("--context", metavar="NAME", help="kubeconfig context (default: its current context)")
    p.add_argument(
        "--namespace",
        metavar="NS",
        help="watch namespaced kinds in NS only (cluster-scoped kinds such as nodes are always watched whole)",
    )
    p.add_argument(
        "--kinds",
        metavar="LIST",
        help="comma-separated plurals or kind names to watch (default: every kind berth reads)",
    )
    p.add_argument(
        "--record", metavar="FILE", help="also write the events to an event log berth replay reads (.gz compresses)"
    )
    p.add_argument(
        "--no-publish", action="store_true", help="do not publish to Kafka (with --record: record a cluster)"
    )
    p.add_argument(
        "--once", action="store_true", help="list every kind once and exit, without watching (a snapshot as a log)"
    )
    p.add_argument(
        "--duration", type=positive_float, metavar="SECONDS", help="stop after SECONDS (default: run until stopped)"
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    settings = from_env(os.environ)
    if args.no_publish and not args.record:
        raise ConfigError(["--no-publish: needs --record (the events would go nowhere)"])
    options = Options(
        kubeconfig=args.kubeconfig,
        context=args.context,
        namespace=args.namespace,
        kinds=select_kinds(args.kinds.split(",")) if args.kinds else KINDS,
        record=args.record,
        publish=not args.no_publish,
        once=args.once,
    )
    logs.setup("watcher", settings.service.log_level)
    try:
        asyncio.run(_main(settings, options, args.duration))
    except GaveUp as e:  # --once: a list kept failing; the retries were logged, one line each
        print(f"berth watcher: cannot go on: {e}", file=sys.stderr)
        return 1
    return 0


async def _main(settings: Settings, options: Options, duration: float | None) -> None:
    """Until SIGTERM or SIGINT (or `duration` seconds): then flush, close the record and exit 0."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    handled: list[signal.Signals] = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(ValueError, RuntimeError, NotImplementedError):  # only in the main thread
            loop.add_signal_handler(sig, stop.set)
            handled.append(sig)
    timer = loop.call_later(duration, stop.set) if duration else None
    try:
        await serve(settings, stop, options)
    finally:
        if timer is not None:
            timer.cancel()
        for sig in handled:
            loop.remove_signal_handler(sig)
