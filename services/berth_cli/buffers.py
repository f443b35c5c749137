"""`berth buffers`: CapacityBuffer statuses, readyReplicas and fake pods for a snapshot."""

from __future__ import annotations

import argparse
from typing import Any

from rich.console import Console
from rich.table import Table

from berth.core.cache.state import ClusterState
from berth.core.controllers.capacitybuffer import fakepods
from berth.core.controllers.capacitybuffer.controller import BufferResult, reconcile
from berth.core.controllers.capacitybuffer.status import status_json
from berth.core.controllers.capacitybuffer.store import BufferStore
from berth.core.scheduler.schedule_one import Scheduler
from berth_cli.common import STRICT_HELP, load_config, load_state, now_or, print_json, rfc3339


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "buffers",
        help="compute CapacityBuffer statuses, readyReplicas and fake pods",
        description="Compute every CapacityBuffer's status as the Cluster Autoscaler buffer controller "
        "would write it, how many chunks fit in the free capacity now (readyReplicas), and the fake pods "
        "an autoscaler would inject.",
    )
    p.add_argument(
        "--snapshot", required=True, metavar="FILE", help="objects as kubectl get -o yaml|json prints them; - for stdin"
    )
    p.add_argument("--config", metavar="FILE", help="KubeSchedulerConfiguration-style YAML used for readyReplicas")
    p.add_argument("--strict-config", action="store_true", help=STRICT_HELP)
    p.add_argument(
        "--now", type=rfc3339, metavar="RFC3339", help="the clock for schedules and conditions (default: now)"
    )
    p.add_argument(
        "--max-chunks",
        type=_positive,
        default=fakepods.DEFAULT_LIMIT,
        metavar="N",
        help=f"fake pods listed and tried per buffer (default {fakepods.DEFAULT_LIMIT})",
    )
    p.add_argument("-o", "--output", choices=("json", "table"), default="json")
    p.set_defaults(run=run)


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"want a positive integer, got {text!r}")
    return int(text)


def run(args: argparse.Namespace) -> int:
    store = BufferStore()
    state = ClusterState(extensions=[store])
    scheduler = Scheduler(load_config(args.config, args.strict_config).build(state))
    load_state(args.snapshot, state)
    now = now_or(args.now)
    results = reconcile(store, now)
    place, release = fakepods.scheduler_placer(scheduler, now)
    ready = fakepods.count_ready(results, place, release, args.max_chunks)
    if args.output == "json":
        print_json({"buffers": [entry(r, ready.get(r.buffer.key, 0), args.max_chunks) for r in results]})
    else:
        render_table(results, ready)
    return 0


def entry(r: BufferResult, ready: int, limit: int) -> dict[str, Any]:
    out: dict[str, Any] = {
        "buffer": r.buffer.key,
        "status": status_json(r.status),
        "readyReplicas": ready,
        "fakePods": fakepods.manifests(r, limit),
    }
    omitted = fakepods.wanted(r) - len(out["fakePods"])
    if omitted > 0:
        out["fakePodsOmitted"] = omitted
    return out


def render_table(results: list[BufferResult], ready: dict[str, int]) -> None:
    table = Table(title=f"berth buffers: {len(results)} buffer(s)")
    for col in ("buffer", "strategy", "pod template", "replicas", "ready", "conditions", "message"):
        table.add_column(col, overflow="fold")
    for r in results:
        s = r.status
        conditions = "\n".join(f"{c.type}={c.status} ({c.reason})" for c in s.conditions)
        messages = "\n".join(c.message for c in s.conditions if c.message and c.message != "ready")
        table.add_row(
            r.buffer.key,
            s.provisioning_strategy or "-",
            s.pod_template_ref or "-",
            "-" if s.replicas is None else str(s.replicas),
            str(ready.get(r.buffer.key, 0)),
            conditions,
            messages if r.processed else "not processed: provisioning strategy " + r.buffer.spec.provisioning_strategy,
        )
    console = Console()
    if not console.is_terminal:
        console = Console(width=160)
    console.print(table)
