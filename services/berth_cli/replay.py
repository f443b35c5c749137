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

from rich.console import Console

from berth.adapters.eventlog import Reject, read_events, write_rejects
from berth.core.errors import InputError
from berth.core.events import Event
from berth.core.pipeline.records import RejectRecord, encode_record
from berth_cli.common import (
    check_dir_target,
    check_file_target,
    load_config,
    non_negative_int,
    positive_float,
    rfc3339,
)
from berth_cli.pipeline import Lane, Pipeline
from berth_cli.progress import watch


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
    p.add_argument("--compare", metavar="OTHER_CONFIG", help="replay the same log under a second config, side by side")
    p.add_argument(
        "--rejects",
        metavar="FILE",
        help="where rejected lines go (default: next to --decisions, else ./berth-rejects.jsonl)",
    )
    p.add_argument("--strict", action="store_true", help="the first bad line is fatal")
    p.add_argument(
        "--top-nodes",
        type=non_negative_int,
        metavar="N",
        help="list only the N best feasible nodes in each decision (default: every node, as berth evaluate does)",
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
    for path in paths:
        for ev in read_events(path, rejects, strict, unreadable):
            if until is not None and ev.ts is not None and ev.ts > until:
                return
            yield ev


def run(args: argparse.Namespace) -> int:
    for path in args.logs:
        if not Path(path).is_file():
            raise InputError(path, "", "No such file")
    _check_outputs(args)
    if args.bootstrap_servers:
        return publish(args)
    lanes = [Lane(_label(args.config), load_config(args.config), top_nodes=args.top_nodes)]
    if args.compare:
        lanes.append(Lane(_label(args.compare), load_config(args.compare), ".compare", args.top_nodes))
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
    if args.strict and dead:  # an event the engine could not handle: fatal too, at its line
        first = min(dead, key=lambda r: r.position)
        raise InputError(", ".join(args.logs), f"line {first.position}", first.reason)
    _write_rejects(args, [*rejects, *unreadable], dead)
    from berth_cli.summary import render_summary

    render_summary(all_stats, Console(width=max(120, Console().width)))
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


def _check_outputs(args: argparse.Namespace) -> None:
    """Every file and directory the run will write can be written, checked before the run."""
    if args.decisions:
        check_file_target(args.decisions)
        if args.compare:
            check_file_target(_sibling(args.decisions, ".compare"))
    check_file_target(_rejects_path(args))
    if args.report:
        check_dir_target(args.report)


def _rejects_path(args: argparse.Namespace) -> str:
    return str(args.rejects or (_sibling(args.decisions, ".rejects") if args.decisions else "berth-rejects.jsonl"))


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


def _write_rejects(args: argparse.Namespace, read: list[Reject], applied: list[RejectRecord]) -> None:
    if not read and not applied:
        return
    path = _rejects_path(args)
    records = [Reject(r.source, r.line, r.reason, r.text) for r in read]
    logs = ", ".join(args.logs)
    records += [Reject(logs, r.position, r.reason, r.text) for r in applied]
    write_rejects(path, sorted(records, key=lambda r: (r.source, r.line)))
    print(f"{len(records)} rejected line(s) written to {path}", file=sys.stderr)
