"""`berth evaluate`: decide every pending pod in a snapshot, one after another."""

from __future__ import annotations

import argparse
from typing import Any

from rich.console import Console
from rich.table import Table

from berth.core.cache.state import ClusterState
from berth.core.errors import InputError
from berth.core.scheduler.results import Decision
from berth.core.scheduler.schedule_one import Scheduler
from berth_cli.common import STRICT_HELP, load_config, load_state, now_or, print_json, rfc3339


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "evaluate",
        help="decide pending pods in a snapshot",
        description="Decide every pending pod in a snapshot (kube's PrioritySort: higher priority first, then creation order; or --pod order). "
        "Each decision is reserved before the next pod is decided.",
    )
    p.add_argument(
        "--snapshot",
        required=True,
        metavar="FILE",
        help="objects as kubectl get -o yaml|json prints them; - for stdin",
    )
    p.add_argument("--config", metavar="FILE", help="KubeSchedulerConfiguration-style YAML")
    p.add_argument("--strict-config", action="store_true", help=STRICT_HELP)
    p.add_argument(
        "--now",
        type=rfc3339,
        metavar="RFC3339",
        help="the clock for time-dependent rules (default: now)",
    )
    p.add_argument(
        "--pod",
        action="append",
        default=[],
        metavar="NS/NAME",
        help="decide only these pods, in this order",
    )
    p.add_argument("-o", "--output", choices=("json", "table"), default="json")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    state = ClusterState()
    config = load_config(args.config, args.strict_config)
    schedulers = {p.scheduler_name: Scheduler(p.build(state)) for p in config.profiles}
    load_state(args.snapshot, state)
    if args.pod:
        pods = []
        for key in args.pod:
            pod = state.pods.get(key if "/" in key else f"default/{key}")
            if pod is None:
                raise InputError(args.snapshot, f"Pod {key}", "not found in the snapshot")
            if not pod.pending:
                raise InputError(
                    args.snapshot,
                    f"Pod {key}",
                    f"is not pending (node {pod.node_name or '-'}, phase {pod.phase})",
                )
            pods.append(pod)
    else:
        # kube's PrioritySort (priority depends on the state alone: any profile's queue orders alike)
        pods = next(iter(schedulers.values())).queue(state.pending_pods())
    now = now_or(args.now)
    decisions: list[Decision] = []
    skipped: list[dict[str, str]] = []  # pods of schedulers the config has no profile for
    gated: list[dict[str, str]] = []  # pods a PreEnqueue plugin holds back (scheduling gates)
    for pod in pods:
        scheduler = schedulers.get(pod.scheduler_name)
        if scheduler is None:
            skipped.append({"pod": pod.key, "schedulerName": pod.scheduler_name})
            continue
        held = scheduler.pre_enqueue(pod)
        if held.rejects:
            gated.append({"pod": pod.key, "plugin": held.plugin, "message": held.message})
        else:
            decisions += scheduler.run([pod], now)
    if args.output == "json":
        out: dict[str, Any] = {"decisions": decisions}
        if skipped:
            out["skipped"] = skipped
        if gated:
            out["gated"] = gated
        print_json(out)
    else:
        render_table(decisions)
        for s in skipped:
            print(f"skipped {s['pod']}: schedulerName {s['schedulerName']} has no profile in the config")
        for g in gated:
            print(f"gated {g['pod']}: {g['message']}")
    return 0


def render_table(decisions: list[Decision], top: int = 3) -> None:
    table = Table(title=f"berth evaluate: {len(decisions)} pending pod(s)")
    for col in ("pod", "status", "node", "volumes", "best nodes (total)", "message"):
        table.add_column(col, overflow="fold")
    for d in decisions:
        ranked = sorted(
            ((n, r.total or 0) for n, r in d.nodes.items() if r.feasible),
            key=lambda x: (-x[1], x[0]),
        )[:top]
        volumes = "\n".join(
            f"{b.claim} -> {b.pv}" if b.pv else f"{b.claim} -> provision on {b.provision.node if b.provision else '?'}"
            for b in d.volume_bindings
        )
        best = "\n".join(f"{n} ({t})" for n, t in ranked)
        table.add_row(d.pod, d.status, d.node or "-", volumes, best, "" if d.node else d.message)
    console = Console()
    if not console.is_terminal:
        console = Console(width=160)
    console.print(table)
