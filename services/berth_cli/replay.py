"""`berth replay`: recorded cluster event logs through the embedded pipeline (no broker, no Redis)."""

from __future__ import annotations

import argparse
import asyncio
import gc
import multiprocessing
import os
import sys
import time
from collections.abc import Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import msgspec
from rich.console import Console

from berth.adapters.files.eventlog import Reject, initial_state_end, open_log, read_events, write_rejects
from berth.core.api.watch import Event
from berth.core.errors import InputError
from berth.core.pipeline.clock import ObjectClock
from berth.core.pipeline.metrics import distinct, run_labels
from berth.core.pipeline.podtrace import PodTrace, pod_traces
from berth.core.pipeline.records import DecisionRecord, Record, RejectRecord, encode_record
from berth.core.pipeline.stats import RunStats
from berth_cli.common import (
    STRICT_HELP,
    check_dir_target,
    check_file_target,
    config_label,
    load_config,
    non_negative_float,
    non_negative_int,
    placement_diff,
    rfc3339,
    speed,
)
from berth_cli.pipeline import Lane, Pipeline
from berth_cli.progress import Board, board_bars, watch

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
    p.add_argument("--strict-config", action="store_true", help=STRICT_HELP)
    pace = p.add_mutually_exclusive_group()
    pace.add_argument("--speed", type=speed, metavar="X", help="replay in log time divided by X (0.001 to 1000000)")
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
    p.add_argument(
        "--compare",
        nargs="+",
        metavar="CONFIG",
        help="replay the same logs under these configs too, each in its own process, side by side",
    )
    p.add_argument("--jobs", type=int, metavar="N", help="replays run at once with --compare (default: all of them)")
    p.add_argument(
        "--diff",
        metavar="OUT.jsonl",
        help="the pods any --compare run placed differently from the first, with every run's placement",
    )
    p.add_argument(
        "--rejects",
        metavar="FILE",
        help="where rejected lines go (default: next to --decisions, else ./berth-rejects.jsonl)",
    )
    p.add_argument("--strict", action="store_true", help="the first bad line is fatal")
    nodes = p.add_mutually_exclusive_group()
    nodes.add_argument(
        "--top-nodes",
        type=non_negative_int,
        default=TOP_NODES,
        metavar="N",
        help=f"list the N best feasible nodes, with their scores, in each decision (default {TOP_NODES})",
    )
    nodes.add_argument(
        "--all-nodes",
        action="store_true",
        help="list every node in each decision, with its reasons or scores, as berth evaluate does",
    )
    p.add_argument(
        "--preemption-grace",
        type=non_negative_float,
        default=0.0,
        metavar="SECONDS",
        help="a preemption's victims are deleted this long (log time) after its decision, and the "
        "preemptor is retried then (default 0)",
    )
    p.add_argument(
        "--no-incremental",
        action="store_true",
        help="run every plugin on every node in each cycle instead of keeping node-local plugins' "
        "answers per pod shape (the same decisions, slower; docs/framework.md)",
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
    clock = ObjectClock()  # for lines without ts: the newest time their objects carry
    for path in paths:
        last = 0
        for ev in read_events(path, rejects, strict, unreadable):
            last = ev.position
            if ev.ts is None:
                ts = clock.time(ev) if ev.type != "BOOKMARK" else clock.now
                ev = msgspec.structs.replace(ev, ts=ts)
            if until is not None and ev.ts is not None and ev.ts > until:
                return
            yield msgspec.structs.replace(ev, position=ev.position + offset) if offset else ev
        read = [r.line for r in (*rejects, *(unreadable or ())) if r.source == path]
        offset += max(last, *read) if read else last


@dataclass
class RunResult:
    """What one replay under one config gives back (from its own process with --compare)."""

    stats: RunStats
    published: int
    rejects: list[Reject]
    unreadable: list[Reject]  # events whose object does not decode: counted as events, and rejected
    dead: list[RejectRecord]
    placements: dict[str, tuple[str, list[str]] | None]  # pod -> (node, PVs) of its last decision, None if not placed
    pods: list[PodTrace]  # each pod's decisions, for the report (only with --report)


def run(args: argparse.Namespace) -> int:
    for path in args.logs:
        if not Path(path).is_file():
            raise InputError(path, "", "No such file")
    for path in args.logs:
        _not_a_snapshot(path)
    _check_outputs(args)
    if args.bootstrap_servers:
        return publish(args)
    configs = [args.config, *(args.compare or [])]
    for config in configs:
        load_config(config, args.strict_config)  # every config's problems (and warnings) before any replay starts
    # nothing is decided before the logs' initial lists are read, as kube-scheduler waits for its caches
    args.initial_end = initial_state_end(args.logs)
    results = _replay_all(args, configs)
    first = results[0]
    if args.strict and first.dead:  # an event the engine found bad: fatal too, at its line
        bad = min(first.dead, key=lambda r: r.position)
        raise InputError(", ".join(args.logs), f"line {bad.position}", bad.reason)
    rejects_path = _write_rejects(args, [*first.rejects, *first.unreadable], first.dead)
    if not first.published and not first.unreadable and first.rejects:
        print(nothing_read(args.logs, first.rejects, rejects_path), file=sys.stderr)
        return 2
    all_stats = [r.stats for r in results]
    diff: list[dict[str, Any]] = []
    if len(results) > 1:
        diff = placement_diff(run_labels(all_stats), [r.placements for r in results])
        if args.diff:
            Path(args.diff).parent.mkdir(parents=True, exist_ok=True)
            Path(args.diff).write_bytes(b"".join(msgspec.json.encode(d) + b"\n" for d in diff))
    from berth_cli.summary import render_summary, write_summary

    render_summary(all_stats, Console(width=max(120, Console().width)))
    if args.summary:
        write_summary(all_stats, args.summary)
    if args.report:
        from berth.adapters.files.report import write_report

        try:
            sources = [c or "kube's default profile" for c in configs]
            index = write_report(all_stats, args.report, diff, [r.pods for r in results], sources)
        except OSError as e:
            raise InputError(args.report, "", f"cannot write the report: {e.strerror or e}") from None
        print(f"report: {index}", file=sys.stderr)
    return 0


def _replay_all(args: argparse.Namespace, configs: list[str | None]) -> list[RunResult]:
    """One replay per config. With several, the logs are read and decoded once, here, and up to
    --jobs replays run at once (default: all of them): the first in this process, the others each
    in a process forked from it, which inherits the decoded events instead of decoding them again.
    All at once, not one per CPU: three replays on two idle CPUs then take about 1.5 times one
    replay, not two rounds (docs/performance/replay.md)."""
    if len(configs) == 1:
        return [replay_one(args, configs[0], 0)]
    log = read_log(args)
    jobs = max(1, args.jobs or len(configs))
    names = _names(configs)
    global _LOG, _BOARD
    ctx = multiprocessing.get_context("fork")  # no thread or event loop runs yet in this process
    board = _BOARD = Board(len(configs), ctx)
    bars = Console(stderr=True)
    shown = not args.no_progress
    if jobs == 1:
        out = []
        with board_bars(board, names, len(log.events), bars, shown):
            for i, c in enumerate(configs):
                out.append(replay_one(args, c, i, True, log, names[i], board))
                _done(args, names[i], out[-1])
        return out
    _LOG = log
    try:
        with ProcessPoolExecutor(max_workers=min(jobs, len(configs)) - 1, mp_context=ctx) as pool:
            futures = [pool.submit(_replay_forked, args, c, i) for i, c in enumerate(configs) if i]
            # the replays have forked: now a thread may draw their bars
            with board_bars(board, names, len(log.events), bars, shown):
                first = replay_one(args, configs[0], 0, True, log, names[0], board)  # meanwhile, here
                _done(args, names[0], first)
                rest = []
                for i, f in enumerate(futures, 1):
                    rest.append(f.result())
                    _done(args, names[i], rest[-1])
            return [first, *rest]
    finally:
        _LOG = _BOARD = None


@dataclass
class Log:
    """The logs read and decoded once, for every replay of a --compare."""

    events: list[Event]
    rejects: list[Reject]
    unreadable: list[Reject]


_LOG: Log | None = None  # the decoded logs, inherited by the forked replays
_BOARD: Board | None = None  # where every replay of a --compare writes its progress


def read_log(args: argparse.Namespace) -> Log:
    """The events are kept for every replay: the collector would only walk them again and again while
    they pile up, so it waits; then they are frozen (left out of collections, so that the forked
    replays share their pages: berth.adapters.runtime.collector)."""
    rejects: list[Reject] = []
    unreadable: list[Reject] = []
    gc.disable()
    try:
        kept = list(events(args.logs, rejects, args.strict, args.until, unreadable))
    finally:
        gc.enable()
    gc.freeze()
    return Log(kept, rejects, unreadable)


def _names(configs: list[str | None]) -> list[str]:
    return distinct([config_label(c) for c in configs])


def _done(args: argparse.Namespace, name: str, result: RunResult) -> None:
    """With --compare and not on a terminal (where the bars say it): one plain line on stderr as each run ends."""
    if args.no_progress or sys.stderr.isatty():
        return
    s = result.stats
    print(f"berth replay: {name}: {len(s.decisions):,} decisions in {s.seconds:.1f} s", file=sys.stderr)


def _replay_forked(args: argparse.Namespace, config: str | None, index: int) -> RunResult:
    assert _LOG is not None  # set before the fork
    return replay_one(args, config, index, False, _LOG, board=_BOARD)


def replay_one(
    args: argparse.Namespace,
    config: str | None,
    index: int,
    progress: bool = True,
    log: Log | None = None,
    name: str | None = None,
    board: Board | None = None,
) -> RunResult:
    """The logs replayed under one config, in this process; its decisions written if asked.
    log: the logs already decoded (--compare), else they are read as the replay goes."""
    top_nodes = None if args.all_nodes else args.top_nodes
    lane = Lane(
        config_label(config),
        load_config(config, args.strict_config, warn=False),
        top_nodes=top_nodes,
        preemption_grace=args.preemption_grace,
        incremental=not args.no_incremental,
    )
    if args.start is not None:
        lane.scorer.hold_until(args.start)
    if args.initial_end:
        lane.scorer.hold_through(args.initial_end)
    pipeline = Pipeline([lane], args.speed)
    started = time.perf_counter()
    if log is None:
        log = Log([], [], [])
        stream: Iterable[Event] = events(args.logs, log.rejects, args.strict, args.until, log.unreadable)
    else:
        stream = log.events
    total = len(log.events) if log.events else None
    asyncio.run(
        watch(
            pipeline,
            stream,
            Console(stderr=True),
            enabled=progress and not args.no_progress,
            total=(lambda: total) if total else lambda: count_lines(args.logs),
            name=name,
            board=board,
            run=index,
        )
    )
    stats = pipeline.stats(lane, time.perf_counter() - started)
    stats.rejects += len(log.rejects) + len(log.unreadable)
    stats.events = pipeline.published + len(log.unreadable)
    records = pipeline.records(lane)
    if args.decisions:
        _write_records(_decisions_path(args.decisions, index, _configs(args)), records)
    placements: dict[str, tuple[str, list[str]] | None] = {}
    for r in records:
        if isinstance(r, DecisionRecord):
            placed = r.status == "Scheduled" and r.node is not None
            placements[r.pod] = (r.node or "", [b.pv for b in r.volume_bindings if b.pv]) if placed else None
    dead = [r for r in pipeline.dead_letters(lane) if isinstance(r, RejectRecord)]
    pods = pod_traces(records, lane.scorer.overrun.waits()) if args.report else []
    return RunResult(stats, pipeline.published, log.rejects, log.unreadable, dead, placements, pods)


def count_lines(paths: list[str]) -> int | None:
    """The lines of the logs (the progress bar's total): a quick pass over the bytes before the replay."""
    n = 0
    try:
        for path in paths:
            with open_log(path) as f:
                while chunk := f.read(1 << 20):
                    n += chunk.count(b"\n")
    except (OSError, EOFError, InputError):
        return None
    return n or None


def publish(args: argparse.Namespace) -> int:
    """Send the log's events to Kafka, keyed per object, each carrying its log position."""
    from berth.adapters.runtime.connect import kafka_bus, topics_of
    from berth.core.api.watch import encode_line
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
        for index in range(1 + len(args.compare or [])):
            check_file_target(_decisions_path(args.decisions, index, _configs(args)))
    check_file_target(_rejects_path(args))
    for path in (args.summary, args.diff):
        if path:
            check_file_target(path)
    if args.report:
        check_dir_target(args.report)


def _configs(args: argparse.Namespace) -> list[str | None]:
    return [args.config, *(args.compare or [])]


def _decisions_path(path: str, index: int, configs: list[str | None]) -> str:
    """The decisions file of the run at `index`: OUT.jsonl for the first, then OUT.<config's name>.jsonl
    for each --compare config (`most-free`; made distinct as the summary's columns are: `most-free-1`)."""
    if index == 0:
        return path
    names = [label.replace(" #", "-") for label in distinct([config_label(c) for c in configs])]
    name = names[index]
    if name in ("rejects", *names[:index]) or name == "":
        name = f"{name}-{index}"
    return _sibling(path, "." + name.replace("/", "_"))


def _rejects_path(args: argparse.Namespace) -> str:
    return str(args.rejects or (_sibling(args.decisions, ".rejects") if args.decisions else "berth-rejects.jsonl"))


def _sibling(path: str, tag: str) -> str:
    p = Path(path)
    return str(p.with_name(p.name.removesuffix(".jsonl") + tag + ".jsonl"))


def _write_records(path: str, records: list[Record]) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        for r in records:
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


def _not_a_snapshot(path: str) -> None:
    """A YAML document (a snapshot, a config) given as a log: fail before reading it, and write no
    rejects file for it."""
    try:
        with open_log(path) as f:
            head = f.read(4096)
    except (OSError, EOFError):
        return  # read_events reports it
    first = next(
        (line.strip() for line in head.splitlines() if line.strip() and not line.lstrip().startswith(b"#")), b""
    )
    if first in (b"{", b"["):  # a pretty-printed JSON document: `kubectl get -o json`
        raise InputError(
            path,
            "",
            "is one JSON document over many lines, not an event log of JSON lines",
            hint=f"a snapshot (objects as `kubectl get -o json` prints them) goes to `berth evaluate --snapshot {path}`",
        )
    if not first or first.startswith((b"{", b"[")):
        return
    yaml_like = first == b"---" or first.split(b":", 1)[0].strip() in (b"apiVersion", b"kind", b"items", b"metadata")
    if yaml_like or path.endswith((".yaml", ".yml")):
        raise InputError(
            path,
            "",
            "is YAML, not an event log of JSON lines",
            hint=f"a snapshot (objects as `kubectl get -o yaml` prints them) goes to `berth evaluate --snapshot {path}`",
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
    path = _rejects_path(args)
    records = [Reject(r.source, r.line, r.reason, r.text) for r in read]
    logs = ", ".join(args.logs)
    records += [Reject(logs, r.position, r.reason, r.text) for r in applied]
    write_rejects(path, sorted(records, key=lambda r: (r.source, r.line)))
    print(f"{len(records)} rejected line(s) written to {path}", file=sys.stderr)
    return path
