"""`berth generate`: write a synthetic event log (a seeded cluster and its history)."""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from berth.adapters.files.eventlog import EventWriter
from berth.core.api.watch import WatchEvent, encode_event
from berth.core.generate import PRESETS, Params, generate
from berth.core.generate.params import parse_mix, parse_seconds, parse_shapes
from berth_cli.common import rfc3339

PRESET_HELP = {
    "small": "the demo sample: 30 nodes in 3 zones, 330 PVs, 150 pending pods, 3 buffers, 30 minutes",
    "cold-burst": "8 warm nodes, one of them cold, then a burst of 50 pods within a second",
    "small-churn": "small, with every workload living about 5 minutes: most pods leave before the end",
    "bench": "5,000 nodes, 100,000 PVs, 20,000 pending pods, about 200,000 events",
    "bench-15k": "bench on 15,000 nodes and 300,000 PVs (20,000 pending pods)",
    "bench-churn": "bench, with every workload living about a minute: most pods leave before the end",
    "preempt": "6 full nodes, PriorityClasses and PDBs, then 12 critical pods that only preemption places",
    "steady": "5,000 nodes reporting NodeMetrics every minute for an hour, 20,000 bound pods coming and going",
    "scale": "50,000 nodes, 1,000,000 PVs, 500,000 bound pods (for memory)",
}


def _typed(fn: Callable[[str], Any]) -> Callable[[str], Any]:
    def parse(text: str) -> Any:
        try:
            return fn(text)
        except ValueError as e:
            raise argparse.ArgumentTypeError(str(e)) from None

    parse.__name__ = fn.__name__
    return parse


def _count(text: str) -> int:
    if not text.isdigit():
        raise ValueError(f"want a whole number, got {text!r}")
    return int(text)


def _share(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"want a number in [0, 1], got {text!r}") from None
    if not 0 <= value <= 1:
        raise ValueError(f"want a number in [0, 1], got {text!r}")
    return value


COUNT, SHARE = _typed(_count), _typed(_share)


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "generate",
        help="write a synthetic event log",
        description="Write a realistic synthetic event log: a cluster snapshot at t0 (nodes in zones and racks, "
        "local and zonal PVs, StorageClasses, NodeMetrics, CapacityBuffers), then workloads arriving over time "
        "with pending pods and their claims, churn, NodeMetric reports and buffer edits. Pods are pending "
        "unless --bound. "
        "Start from a preset and override any parameter; the same flags and seed give the same bytes.",
        epilog="presets:\n" + "\n".join(f"  {k:<12} {v}" for k, v in PRESET_HELP.items()),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--preset", choices=list(PRESETS), default="small", help="the starting parameters (default small)")
    p.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    p.add_argument("-o", "--output", default="-", metavar="FILE", help="the log to write; .gz compresses; - is stdout")
    p.add_argument("-q", "--quiet", action="store_true", help="no summary on stderr")

    g = p.add_argument_group("cluster (defaults come from the preset)")
    g.add_argument("--zones", type=COUNT, metavar="N")
    g.add_argument("--racks-per-zone", type=COUNT, metavar="N")
    g.add_argument("--nodes", type=COUNT, metavar="N")
    g.add_argument(
        "--node-shapes",
        type=_typed(parse_shapes),
        metavar="SHAPES",
        help="machine types as CORESxMEMORY_GI[:WEIGHT], comma-separated (small: 8x32:1,16x64:2,32x128:1)",
    )

    g = p.add_argument_group("storage")
    g.add_argument("--local-pvs", type=COUNT, metavar="N", help="local PVs, spread evenly over the nodes")
    g.add_argument("--zonal-pvs", type=COUNT, metavar="N", help="pre-provisioned zonal-ssd PVs")
    g.add_argument(
        "--pv-sizes",
        type=_typed(parse_mix),
        metavar="MIX",
        help="PV sizes as SIZE[:WEIGHT] (small: 10Gi:6,100Gi:3,1Ti:1)",
    )
    g.add_argument("--ssd-fraction", type=SHARE, metavar="F", help="share of local PVs and claims on local-ssd")

    g = p.add_argument_group("workloads")
    g.add_argument("--pods", type=COUNT, metavar="N", help="pending pods created after t0 (the burst is extra)")
    g.add_argument("--stateful-fraction", type=SHARE, metavar="F", help="share of workloads that are StatefulSets")
    g.add_argument(
        "--claim-sizes",
        type=_typed(parse_mix),
        metavar="MIX",
        help="claim sizes as SIZE[:WEIGHT] (small: 10Gi:10,20Gi:2,100Gi:5,500Gi:1,1Ti:1)",
    )
    g.add_argument("--zonal-claims", type=SHARE, metavar="F", help="share of StatefulSets claiming zonal-ssd")
    g.add_argument("--second-claim", type=SHARE, metavar="F", help="share of StatefulSets with a 10Gi logs claim")
    g.add_argument(
        "--placement",
        type=SHARE,
        metavar="F",
        help="share of StatefulSets and Deployments whose replicas are kept apart: zone spread, "
        "hostname anti-affinity (required for StatefulSets, preferred for Deployments)",
    )
    g.add_argument("--churn", type=SHARE, metavar="F", help="share of workloads deleted again before the end")
    g.add_argument(
        "--lifetime",
        type=_typed(parse_seconds),
        metavar="DURATION",
        help="mean lifetime of a churned workload (exponential, at least 30s); 0: deleted late in the run",
    )
    g.add_argument("--burst", type=COUNT, metavar="N", help="pods of one Deployment created at once")
    g.add_argument("--burst-at", type=_typed(parse_seconds), metavar="DURATION", help="when the burst comes")
    g.add_argument("--buffers", type=COUNT, metavar="N", help="CapacityBuffers (0: no buffers, quota or frontend)")
    g.add_argument("--daemonset", action=argparse.BooleanOptionalAction, help="a running DaemonSet pod per node")
    g.add_argument(
        "--priority-classes",
        action=argparse.BooleanOptionalAction,
        help="critical, serving and batch (globalDefault) PriorityClasses; pods carry theirs",
    )
    g.add_argument("--pdbs", type=SHARE, metavar="F", help="share of StatefulSets and Deployments with a PDB")
    g.add_argument(
        "--bound", action=argparse.BooleanOptionalAction, help="pods arrive running on a random node, not pending"
    )

    g = p.add_argument_group("time and metrics")
    g.add_argument("--start", type=rfc3339, metavar="RFC3339", help="t0 (default 2026-11-02T08:00:00Z, a Monday)")
    g.add_argument("--duration", type=_typed(parse_seconds), metavar="DURATION", help="activity after t0: 3600, 90m")
    g.add_argument("--report-interval", type=COUNT, metavar="SECONDS", help="NodeMetric reportIntervalSeconds")
    g.add_argument("--hot-fraction", type=SHARE, metavar="F", help="share of nodes running hot (70-85%% cpu)")
    g.add_argument("--cold-nodes", type=COUNT, metavar="N", help="nodes running almost idle (1-4%% cpu)")
    g.add_argument(
        "--aggregated", action=argparse.BooleanOptionalAction, help="NodeMetrics carry 5m/10m/30m percentiles"
    )
    p.set_defaults(run=run)


FIELDS = tuple(f.name for f in dataclasses.fields(Params))


def params_of(args: argparse.Namespace) -> Params:
    """The preset with every flag given on the command line applied; ConfigError lists what is wrong."""
    changes = {f: getattr(args, f) for f in FIELDS if getattr(args, f, None) is not None}
    return PRESETS[args.preset].replace(**changes)


def run(args: argparse.Namespace) -> int:
    params = params_of(args)
    started = time.perf_counter()
    counts: Counter[str] = Counter()
    with _progress(params, enabled=not args.quiet) as advance:
        if args.output == "-":
            out = sys.stdout.buffer
            for ev in generate(params, args.seed):
                _count_event(counts, ev)
                out.write(encode_event(ev) + b"\n")
                advance(ev)
            out.flush()
        else:
            with EventWriter(args.output) as w:
                for ev in generate(params, args.seed):
                    _count_event(counts, ev)
                    w.write(ev)
                    advance(ev)
    if not args.quiet:
        took = time.perf_counter() - started
        where = "stdout" if args.output == "-" else args.output
        print(
            f"berth generate: {counts['events']} events to {where} in {took:.1f} s: {counts['Node']} nodes, "
            f"{counts['PersistentVolume']} PVs, {counts['pending']} pending pods, {counts['DELETED']} deletions",
            file=sys.stderr,
        )
    return 0


@contextmanager
def _progress(params: Params, enabled: bool) -> Iterator[Callable[[WatchEvent], None]]:
    """A bar on stderr over the log's time (0 to --duration), on a terminal only."""
    console = Console(stderr=True)
    if not enabled or not console.is_terminal:
        yield lambda ev: None
        return
    start, total = params.start, float(max(params.duration, 1))
    columns = (BarColumn(), TextColumn("log time {task.completed:,.0f}/{task.total:,.0f} s"), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True) as bar:
        task = bar.add_task("generating", total=total)
        seen = 0

        def advance(ev: WatchEvent) -> None:
            nonlocal seen
            seen += 1
            if seen % 500 == 0 and ev.ts is not None:
                bar.update(task, completed=min(total, max(0.0, (ev.ts - start).total_seconds())))

        yield advance


def _count_event(counts: Counter[str], ev: WatchEvent) -> None:
    counts["events"] += 1
    obj = ev.object
    assert isinstance(obj, dict)  # the generator makes dicts
    kind = obj.get("kind", "")
    if ev.type == "ADDED":
        counts[kind] += 1
        if kind == "Pod" and not obj["spec"].get("nodeName"):
            counts["pending"] += 1
    elif ev.type == "DELETED":
        counts["DELETED"] += 1
