"""`berth replay`: recorded cluster event logs through the embedded pipeline (no broker, no Redis)."""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import msgspec
from rich.console import Console

from berth.adapters.eventlog import Reject, read_events, write_rejects
from berth.core.errors import InputError
from berth.core.events import Event
from berth.core.pipeline.records import RejectRecord, encode_record
from berth_cli.common import load_config, positive_float, rfc3339
from berth_cli.pipeline import Lane, Pipeline
from berth_cli.progress import watch

TOP_NODES = 3  # feasible nodes listed in a compact decision


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "replay",
        help="replay recorded event logs through the embedded pipeline",
        description="Replay cluster event logs (JSON Lines, optionally .gz) in log order through berth's "
        "scorer and buffer controller, wired in one process. Prints a summary; writes decisions and a report on request.",
    )
    p.add_argument("logs", nargs="+", metavar="LOG", help="event logs, replayed one after another")
    p.add_argument("--config", metavar="FILE", help="KubeSchedulerConfiguration-style YAML")
    pace = p.add_mutually_exclusive_group()
    pace.add_argument("--speed", type=positive_float, metavar="X", help="replay in log time divided by X")
    pace.add_argument("--as-fast-as-possible", action="store_true", help="no pacing (the default)")
    p.add_argument(
        "--from", dest="start", type=rfc3339, metavar="TS", help="events before TS only build the starting state"
    )
    p.add_argument("--until", type=rfc3339, metavar="TS", help="stop at the first event after TS")
    p.add_argument(
        "--decisions", metavar="OUT.jsonl", help="write decisions and buffer status changes, one JSON line each"
    )
    p.add_argument("--report", metavar="DIR", help="write a self-contained HTML report with plots")
    p.add_argument("--summary", metavar="FILE.json", help="write the metrics as JSON, one object per run")
    p.add_argument("--compare", metavar="OTHER_CONFIG", help="replay the same log under a second config, side by side")
    p.add_argument(
        "--rejects",
        metavar="FILE",
        help="where rejected lines go (default: next to --decisions, else ./berth-rejects.jsonl)",
    )
    p.add_argument("--strict", action="store_true", help="the first bad line is fatal")
    nodes = p.add_mutually_exclusive_group()
    nodes.add_argument(
        "--top-nodes",
        type=int,
        default=TOP_NODES,
        metavar="N",
        help=f"list the N best feasible nodes, with their scores, in each decision (default {TOP_NODES})",
    )
    nodes.add_argument(
        "--all-nodes",
        action="store_true",
        help="list every node in each decision, with its reasons or scores, as berth evaluate does",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument(
        "--bootstrap-servers",
        metavar="HOST:PORT",
        help="publish the log into the cluster-events topic of this Kafka (other BERTH_KAFKA_* settings apply) "
        "instead of replaying it here: the services then process it as if a watcher had seen it",
    )
    p.set_defaults(run=run)


def events(
    paths: list[str],
    rejects: list[Reject],
    strict: bool,
    until: datetime | None,
    unreadable: list[Reject] | None = None,
) -> Iterator[Event]:
    """The logs' events one after another. `position` runs on across logs: a later log's lines are
    numbered after the last line read from the logs before it (rejects keep their own file's numbers)."""
    offset = 0
    for path in paths:
        last = 0
        for ev in read_events(path, rejects, strict, unreadable):
            if until is not None and ev.ts is not None and ev.ts > until:
                return
            last = ev.position
            yield msgspec.structs.replace(ev, position=ev.position + offset) if offset else ev
        read = [r.line for r in (*rejects, *(unreadable or ())) if r.source == path]
        offset += max(last, *read) if read else last


def run(args: argparse.Namespace) -> int:
    for path in args.logs:
        if not Path(path).is_file():
            raise InputError(path, "", "No such file")
    if args.bootstrap_servers:
        return publish(args)
    top_nodes = None if args.all_nodes else args.top_nodes
    lanes = [Lane(_label(args.config), load_config(args.config), top_nodes=top_nodes)]
    if args.compare:
        lanes.append(Lane(_label(args.compare), load_config(args.compare), ".compare", top_nodes))
    if args.start is not None:
        for lane in lanes:
            lane.scorer.hold_until(args.start)
    rejects: list[Reject] = []
    unreadable: list[Reject] = []  # events whose object does not decode: counted as events, and rejected
    pipeline = Pipeline(lanes, args.speed)
    console = Console(stderr=True)
    started = time.perf_counter()
    stream = events(args.logs, rejects, args.strict, args.until, unreadable)
    asyncio.run(watch(pipeline, stream, console, enabled=not args.no_progress))
    seconds = time.perf_counter() - started
    all_stats = []
    for i, lane in enumerate(lanes):
        stats = pipeline.stats(lane, seconds)
        stats.rejects += len(rejects) + len(unreadable)
        stats.events = pipeline.published + len(unreadable)
        all_stats.append(stats)
        if args.decisions:
            out = args.decisions if i == 0 else _sibling(args.decisions, ".compare")
            _write_records(out, pipeline, lane)
    dead = [r for r in pipeline.dead_letters(lanes[0]) if isinstance(r, RejectRecord)]
    rejects_path = _write_rejects(args, [*rejects, *unreadable], dead)
    if not pipeline.published and not unreadable and rejects:
        print(nothing_read(args.logs, rejects, rejects_path), file=sys.stderr)
        return 2
    from berth_cli.summary import render_summary, write_summary

    render_summary(all_stats, Console(width=max(120, Console().width)))
    if args.summary:
        write_summary(all_stats, args.summary)
    if args.report:
        from berth.adapters.report import write_report

        try:
            index = write_report(all_stats, args.report)
        except OSError as e:
            raise InputError(args.report, "", f"cannot write the report: {e.strerror or e}") from None
        print(f"report: {index}", file=sys.stderr)
    return 0


def publish(args: argparse.Namespace) -> int:
    """Send the log's events to Kafka, keyed per object, each carrying its log position."""
    import os

    from berth.adapters.connect import kafka_bus, topics_of
    from berth.core.events import encode_line
    from berth.settings import from_env

    settings = from_env(os.environ, kafka__bootstrap_servers=args.bootstrap_servers)
    rejects: list[Reject] = []

    async def main() -> int:
        bus = kafka_bus(settings, "replay")
        await bus.start()
        sent = 0
        try:
            await bus.create_topics(topics_of(settings))
            for ev in events(args.logs, rejects, args.strict, args.until):
                await bus.send(settings.topics.cluster_events, encode_line(ev, with_position=True), ev.key)
                sent += 1
            await bus.flush()
        finally:
            await bus.stop()
        return sent

    sent = asyncio.run(main())
    _write_rejects(args, rejects, [])
    print(f"published {sent} events to {settings.topics.cluster_events} at {args.bootstrap_servers}", file=sys.stderr)
    return 0


def _label(path: str | None) -> str:
    return Path(path).stem if path else "default"


def _sibling(path: str, tag: str) -> str:
    p = Path(path)
    return str(p.with_name(p.name.removesuffix(".jsonl") + tag + ".jsonl"))


def _write_records(path: str, pipeline: Pipeline, lane: Lane) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        for r in pipeline.records(lane):
            f.write(encode_record(r) + b"\n")


FORMATS = (
    "berth reads JSON Lines of watch events, one per line: "
    '{"type": "ADDED", "object": {...}} as `kubectl get --watch --output-watch-events -o json` prints them '
    '(with an optional "ts"), and the scheduler simulator\'s {"time", "event", "resource"}'
)
HINT = (
    "these lines are bare objects or Lists (`kubectl get -o json` output), not watch events: record one watch per "
    "resource, e.g. `kubectl get pods -A --watch --output-watch-events -o json >> cluster.jsonl &` and the same "
    "for nodes, pv, pvc, storageclasses, or run `berth watcher --record cluster.jsonl.gz --no-publish`; "
    "a snapshot as it stands goes to `berth evaluate --snapshot`"
)


def nothing_read(logs: list[str], rejects: list[Reject], path: str | None) -> str:
    """The message of a run in which every line was rejected (exit 2)."""
    where = f"; the reasons are in {path}" if path else ""
    text = f"berth replay: every line of {', '.join(logs)} was rejected ({len(rejects):,} line(s){where}). {FORMATS}"
    if any(_bare_object(r.text) for r in rejects[:20]):
        text += f". {HINT[0].upper()}{HINT[1:]}"
    return text


def _bare_object(text: str) -> bool:
    """A line that is a Kubernetes object or List rather than a watch event (or a pretty-printed one's first line)."""
    if text.strip() == "{":
        return True
    try:
        obj = msgspec.json.decode(text)
    except msgspec.DecodeError:
        return False
    return isinstance(obj, dict) and "kind" in obj and "object" not in obj and "resource" not in obj


def _write_rejects(args: argparse.Namespace, read: list[Reject], applied: list[RejectRecord]) -> str | None:
    if not read and not applied:
        return None
    path = args.rejects or (_sibling(args.decisions, ".rejects") if args.decisions else "berth-rejects.jsonl")
    records = [Reject(r.source, r.line, r.reason, r.text) for r in read]
    logs = ", ".join(args.logs)
    records += [Reject(logs, r.position, r.reason, r.text) for r in applied]
    write_rejects(path, sorted(records, key=lambda r: (r.source, r.line)))
    print(f"{len(records)} rejected line(s) written to {path}", file=sys.stderr)
    return path
