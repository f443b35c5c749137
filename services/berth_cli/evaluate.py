"""`berth evaluate`: decide every pending pod in a snapshot, one after another."""

from __future__ import annotations

import argparse
import difflib
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from berth.core.cache.state import ClusterState
from berth.core.errors import InputError
from berth.core.pipeline.metrics import distinct
from berth.core.plugins.loadawarescheduling.store import NodeMetricStore
from berth.core.scheduler.results import Decision, RejectedGroup
from berth.core.scheduler.schedule_one import Scheduler
from berth_cli.common import (
    STRICT_HELP,
    config_label,
    hint,
    load_config,
    load_state,
    now_or,
    placement_diff,
    print_json,
    rfc3339,
)
from berth_cli.show import BEST_SHOWN, NODES_SHOWN, OUTPUTS, print_yaml, render_table


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
    p.add_argument(
        "--compare",
        nargs="+",
        metavar="CONFIG",
        help="decide the same pods under these configs too, and list the pods placed differently",
    )
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
        metavar="[NS/]NAME",
        help="decide only these pods, in this order (a bare NAME is in --namespace)",
    )
    add_namespace_flags(p)
    p.add_argument(
        "-o",
        "--output",
        choices=OUTPUTS,
        default="json",
        help="json (default), yaml, table, or wide: the table with every node's reasons, "
        "each naming its plugin, the scores per plugin, nomination and victims",
    )
    p.set_defaults(run=run)


def add_namespace_flags(p: argparse.ArgumentParser) -> None:
    """-n/--namespace and -A/--all-namespaces, as kubectl has them."""
    ns = p.add_mutually_exclusive_group()
    ns.add_argument(
        "-n",
        "--namespace",
        metavar="NS",
        help="bare --pod names are in NS (default: default); without --pod, only NS's pending pods",
    )
    ns.add_argument("-A", "--all-namespaces", action="store_true", help="every namespace's pending pods (the default)")


def find_pod(state: ClusterState, key: str, namespace: str | None, source: str) -> Any:
    """The pod NS/NAME, or NAME in `namespace` (default: default); not found: an InputError that
    names the namespace looked in and lists close matches."""
    full = key if "/" in key else f"{namespace or 'default'}/{key}"
    pod = state.pods.get(full)
    if pod is not None:
        return pod
    name = full.split("/", 1)[1]
    same = sorted(k for k in state.pods if k.split("/", 1)[1] == name)
    close = same or difflib.get_close_matches(full, list(state.pods), n=5, cutoff=0.6)
    where = f"in namespace {full.split('/', 1)[0]}" if "/" not in key else "in the snapshot"
    problem = f"not found {where}"
    if close:
        problem += f"; did you mean {', '.join(close[:5])}?"
    if "/" not in key:
        problem += " Write NS/NAME, or give -n NAMESPACE"
    raise InputError(source, f"Pod {key}", problem)


@dataclass
class Run:
    """The pending pods of a snapshot decided under one config."""

    state: ClusterState
    decisions: list[Decision]
    skipped: list[dict[str, str]]  # pods of schedulers the config has no profile for
    gated: list[dict[str, str]]  # pods a PreEnqueue plugin holds back (scheduling gates)
    rejected: list[list[RejectedGroup]] = field(default_factory=list)  # a table's: each decision's rejected nodes

    def placements(self) -> dict[str, tuple[str, list[str]] | None]:
        """pod -> (node, PVs) where it was placed, None where it was not."""
        return {
            d.pod: (d.node, [b.pv for b in d.volume_bindings if b.pv]) if d.status == "Scheduled" and d.node else None
            for d in self.decisions
        }


def decide(args: argparse.Namespace, config_path: str | None, now: datetime) -> Run:
    state = ClusterState()
    config = load_config(config_path, args.strict_config)
    # a table shows the best nodes and the rejected ones: no result is built for every feasible node
    table = args.output in ("table", "wide")
    top = BEST_SHOWN if table else None
    schedulers = {
        p.scheduler_name: Scheduler(p.build(state), top_nodes=top, rejected_groups=NODES_SHOWN if table else 0)
        for p in config.profiles
    }
    bar = _bar()
    try:
        with bar:
            reading = bar.add_task(f"reading {args.snapshot}", total=None)
            load_state(args.snapshot, state)
            bar.remove_task(reading)
    except InputError as e:
        e.hint = e.hint or log_hint(args.snapshot, e)
        raise
    source = "<stdin>" if args.snapshot == "-" else args.snapshot
    if args.pod:
        pods = []
        for key in args.pod:
            pod = find_pod(state, key, args.namespace, source)
            if not pod.pending:
                raise InputError(
                    args.snapshot,
                    f"Pod {key}",
                    f"is not pending (node {pod.node_name or '-'}, phase {pod.phase})",
                )
            pods.append(pod)
    else:
        # kube's PrioritySort (priority depends on the state alone: any profile's queue orders alike)
        pending = state.pending_pods()
        if args.namespace and not args.all_namespaces:
            pending = [p for p in pending if p.namespace == args.namespace]
        pods = next(iter(schedulers.values())).queue(pending)
        if not pods:
            _hint_empty(state, source, args.namespace)
    run = Run(state, [], [], [])
    with _bar() as bar:
        deciding = bar.add_task("deciding pending pods", total=len(pods))
        for pod in pods:
            bar.advance(deciding)
            scheduler = schedulers.get(pod.scheduler_name)
            if scheduler is None:
                run.skipped.append({"pod": pod.key, "schedulerName": pod.scheduler_name})
                continue
            held = scheduler.pre_enqueue(pod)
            if held.rejects:
                run.gated.append({"pod": pod.key, "plugin": held.plugin, "message": held.message})
            else:
                for outcome in scheduler.run_outcomes([pod], now):
                    run.decisions.append(outcome.decision)
                    run.rejected.append(outcome.rejected_groups or [])
    return run


def run(args: argparse.Namespace) -> int:
    if args.compare and args.snapshot == "-":
        raise InputError("<stdin>", "", "--compare reads the snapshot once per config: give it as a file")
    configs = [args.config, *(args.compare or [])]
    for config in configs[1:]:
        load_config(config, args.strict_config)  # every config's problems before any run starts
    now = now_or(args.now)
    first = decide(args, args.config, now)
    if args.now is None and first.decisions:
        hint_now(first.state, now)
    diff: list[dict[str, Any]] = []
    labels = distinct([config_label(c) for c in configs])
    if args.compare:
        others = [decide(args, c, now) for c in args.compare]
        diff = placement_diff(labels, [r.placements() for r in (first, *others)])
    if args.output in ("json", "yaml"):
        out: dict[str, Any] = {"decisions": first.decisions}
        if first.skipped:
            out["skipped"] = first.skipped
        if first.gated:
            out["gated"] = first.gated
        if args.compare:
            out["compare"] = {"runs": labels, "differ": diff}
        print_json(out) if args.output == "json" else print_yaml(out)
    else:
        render_table(first.decisions, first.rejected, wide=args.output == "wide")
        for s in first.skipped:
            print(f"skipped {s['pod']}: schedulerName {s['schedulerName']} has no profile in the config")
        for g in first.gated:
            print(f"gated {g['pod']}: {g['message']}")
        if args.compare:
            print_diff(labels, diff, len(first.decisions))
    return 0


def print_diff(labels: list[str], diff: list[dict[str, Any]], decided: int) -> None:
    """The pods placed differently, one column per config: node, and the PVs in brackets."""
    print(f"\nplaced differently under {', '.join(labels)}: {len(diff)} of {decided} pod(s)")
    if not diff:
        return
    cells = [[d["pod"], *(_placed(r) for r in d["runs"])] for d in diff]
    widths = [max(len(row[i]) for row in [["POD", *labels], *cells]) for i in range(len(labels) + 1)]
    for row in [["POD", *labels], *cells]:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())


def _placed(r: dict[str, Any]) -> str:
    if r["node"] is None:
        return "-"
    return f"{r['node']} [{', '.join(r['pvs'])}]" if r["pvs"] else str(r["node"])


def _bar() -> Progress:
    """A transient bar on stderr, drawn only on a terminal and only for a step past 2 s."""
    console = Console(stderr=True)
    columns = (
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    return _LateProgress(*columns, console=console, transient=True, disable=not console.is_terminal)


class _LateProgress(Progress):
    """Progress that draws nothing for its first 2 seconds: quick runs print no bar at all."""

    def get_renderables(self) -> Any:
        if self.tasks and all((t.elapsed or 0) < 2 for t in self.tasks):
            return []
        return super().get_renderables()


def log_hint(path: str, e: InputError) -> str | None:
    """An event log given as a snapshot: point at berth replay."""
    log = path.endswith((".jsonl", ".jsonl.gz", ".gz"))
    if "Extra data" in e.problem or (log and e.obj == path):
        return f"{path} looks like an event log (JSON Lines, one watch event per line): replay it with `berth replay {path}`"
    return None


def _hint_empty(state: ClusterState, source: str, namespace: str | None) -> None:
    pending = len(state.pending_pods())
    found = f"{len(state.nodes)} node(s), {len(state.pods)} pod(s), {pending} pending"
    if namespace and pending:
        hint(
            "evaluate",
            f"{source}: no pending pod in namespace {namespace} ({found}); drop -n to decide every namespace's",
        )
    elif not state.nodes and not state.pods:
        hint(
            "evaluate",
            f"{source}: found 0 nodes and 0 pending pods: a snapshot holds the cluster's objects, e.g. "
            "`kubectl get nodes,pods,pv,pvc,storageclasses,priorityclasses,poddisruptionbudgets -A -o yaml`",
        )
    else:
        hint("evaluate", f"{source}: {found}: nothing to decide; berth evaluate decides pods with no spec.nodeName")


def hint_now(state: ClusterState, now: datetime, command: str = "evaluate") -> None:
    """--now, when the clock makes every NodeMetric expired: the snapshot is older than its metrics' expiry."""
    for ext in state.extensions:
        if not isinstance(ext, NodeMetricStore) or ext.args.enable_schedule_when_node_metrics_expired:
            continue
        if not ext.args.filter_expired_node_metrics:
            continue
        st = ext.views()
        times = st.time_us[st.has_time]
        if not len(times):
            continue
        newest = int(times.max())
        limit = ext.args.node_metric_expiration_seconds
        if now.timestamp() * 1e6 - newest >= limit * 1e6:
            at = datetime.fromtimestamp(newest / 1e6, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            hint(
                command,
                f"every NodeMetric is older than its expiry ({limit} s) at the wall clock; the newest is from "
                f"{at}: to evaluate the snapshot as of then, add --now {at}",
            )
            return
