"""`berth scorer`, `berth buffer-controller`, `berth indexer`: the stream services.

Settings come from the environment (docs/settings.md); flags only choose files and modes.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
from collections.abc import Awaitable, Callable
from typing import Any

from berth.adapters.runtime import logs
from berth.adapters.runtime.collector import COLLECTOR
from berth.core.config.kubeschedulerconfig import SchedulerConfig
from berth.settings import Settings, from_env
from berth_cli.common import load_config


def add_parsers(sub: Any) -> None:
    p = sub.add_parser(
        "scorer",
        help="decide every pending pod from the cluster-events topic",
        description="Consume berth.cluster-events and emit a decision for every pending pod to berth.decisions. "
        "Reservations are atomic in Redis, so replicas never take the same PV or overcommit a node. "
        "Settings come from BERTH_* environment variables.",
    )
    p.add_argument("--config", metavar="FILE", help="KubeSchedulerConfiguration (default: $BERTH_SCHEDULER_CONFIG)")
    p.add_argument(
        "--bind",
        action="store_true",
        help="binder mode: bind pods with schedulerName berth, and serve the extender's bind verb "
        "(PV claimRef, selected-node, pods/binding through the API)",
    )
    p.add_argument(
        "--kubeconfig", metavar="FILE", help="with --bind: kubeconfig (default: in-cluster, then ~/.kube/config)"
    )
    p.add_argument("--context", help="with --bind: kubeconfig context")
    p.set_defaults(run=run_scorer)
    p = sub.add_parser(
        "buffer-controller",
        help="emit CapacityBuffer statuses from the cluster-events topic",
        description="Consume berth.cluster-events and emit CapacityBuffer status changes to berth.buffer-status.",
    )
    p.add_argument("--config", metavar="FILE", help="KubeSchedulerConfiguration used for readyReplicas")
    p.add_argument("--write-status", action="store_true", help="also patch capacitybuffers/status through the API")
    p.add_argument(
        "--kubeconfig",
        metavar="FILE",
        help="with --write-status: kubeconfig (default: in-cluster, then ~/.kube/config)",
    )
    p.add_argument("--context", help="with --write-status: kubeconfig context")
    p.set_defaults(run=run_buffer_controller)
    p = sub.add_parser(
        "indexer",
        help="maintain the per-node PV index and node usage in Redis (a faust app)",
        description="Consume berth.cluster-events with faust and materialise the per-node PV index and node usage "
        "aggregates in Redis (docs/redis-layout.md).",
    )
    p.add_argument("--data-dir", default="/tmp/berth-indexer", metavar="DIR", help="faust's working directory")
    p.set_defaults(run=run_indexer)


def _settings() -> Settings:
    return from_env(os.environ)


def _config(settings: Settings, path: str | None) -> SchedulerConfig:
    """The scheduler config, validated once, now; each engine builds its own plugins from it."""
    return load_config(path or settings.service.scheduler_config or None, settings.service.strict_config)


def run_scorer(args: argparse.Namespace) -> int:
    from berth_scorer.main import serve

    settings = _settings()
    config = _config(settings, args.config)
    logs.setup("scorer", settings.service.log_level)
    COLLECTOR.thaw_every = settings.service.gc_thaw_every

    async def main(stop: asyncio.Event) -> None:
        if not args.bind:
            await serve(settings, config, stop)
            return
        from berth.adapters.kube.client import KubeClient
        from berth_scorer.binder import Binder

        client = await KubeClient.connect(args.kubeconfig, args.context)
        try:
            await serve(settings, config, stop, binder=Binder(client))
        finally:
            await client.close()

    asyncio.run(_until_signal(main))
    return 0


def run_buffer_controller(args: argparse.Namespace) -> int:
    from berth_buffer_controller.main import serve

    settings = _settings()
    config = _config(settings, args.config)
    logs.setup("buffer-controller", settings.service.log_level)
    COLLECTOR.thaw_every = settings.service.gc_thaw_every

    async def main(stop: asyncio.Event) -> None:
        if not args.write_status:
            await serve(settings, config, stop)
            return
        from berth.adapters.kube.client import KubeClient
        from berth_buffer_controller.service import StatusPatcher

        client = await KubeClient.connect(args.kubeconfig, args.context)
        try:
            await serve(settings, config, stop, write_status=StatusPatcher(client))
        finally:
            await client.close()

    asyncio.run(_until_signal(main))
    return 0


def run_indexer(args: argparse.Namespace) -> int:
    from berth_indexer.main import serve

    settings = _settings()
    logs.setup("indexer", settings.service.log_level)
    return serve(settings, args.data_dir)


async def _until_signal(main: Callable[[asyncio.Event], Awaitable[None]]) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(ValueError, RuntimeError, NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    await main(stop)
