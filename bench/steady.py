"""Issue 21's steady-state log: 5,000 nodes each reporting a NodeMetric every minute for an hour
(300,000 reports), with 20,000 pods arriving already bound and leaving again (the `steady` preset).

Prints events/s for the whole embedded pipeline (wall clock, pinned to one core, and per CPU-second),
then what one NodeMetric update costs the scorer engine: its line decoded to the model and handled
(applied to the state, queue and observers), in CPU time of the thread. Runs of consecutive
NodeMetric lines are timed together, so the clock's own cost barely shows. The load-aware store
writes a node's slot rows when they are next read, which nothing here does before the end: what
reading it once then costs per node is printed too. Then the stages: CPU per event of each
kind, decoding it, the scorer engine handling it and the buffer controller's engine handling it.

The log is generated once into $BERTH_BENCH_DIR (default /tmp/berth-bench) and reused.
Run: `python -m bench steady`.
"""

from __future__ import annotations

import asyncio
import gc
import os
import time
from pathlib import Path

from bench.util import one_core
from berth.adapters.files.eventlog import EventWriter, open_log, read_events
from berth.adapters.runtime.collector import Collector
from berth.core.api.watch import parse_event
from berth.core.config.kubeschedulerconfig import parse_config
from berth.core.generate import PRESETS, generate
from berth.core.pipeline.buffers import BufferEngine
from berth.core.pipeline.scorer import ScorerEngine
from berth.core.plugins.loadawarescheduling.store import NodeMetricStore
from berth_cli.pipeline import Lane, Pipeline

TARGET = 50_000  # events/s
NODEMETRIC = b'"kind":"NodeMetric"'


def log_path(preset: str = "steady") -> str:
    path = Path(os.environ.get("BERTH_BENCH_DIR", "/tmp/berth-bench")) / f"{preset}-seed1.jsonl"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        t = time.perf_counter()
        with EventWriter(str(path) + ".tmp") as w:
            for ev in generate(PRESETS[preset], 1):
                w.write(ev)
        os.replace(str(path) + ".tmp", path)
        print(f"generated {path} in {time.perf_counter() - t:.1f} s")
    return str(path)


def run() -> None:
    print(f"== steady state: NodeMetric reports and bound pods coming and going ({one_core()}) ==")
    path = log_path()
    lane = Lane("default", parse_config(None))
    pipeline = Pipeline([lane])
    t, cpu = time.perf_counter(), time.process_time()
    asyncio.run(pipeline.run(read_events(path)))
    seconds, cpu = time.perf_counter() - t, time.process_time() - cpu
    n = pipeline.published
    print(f"{n:,} events, {len(lane.scorer.stats.decisions):,} decisions")
    print(
        f"whole pipeline (reader, bus, scorer, buffer controller): {seconds:.1f} s = {n / seconds:,.0f} events/s"
        f"  (target >= {TARGET:,})"
    )
    print(f"  CPU time: {cpu:.1f} s = {n / cpu:,.0f} events per CPU-second")
    per_update(path)
    stages(path)


def per_update(path: str) -> None:
    """The scorer engine alone over the log; NodeMetric lines timed in runs, the rest untimed."""
    engine = ScorerEngine(parse_config(None))
    with open_log(path) as f:
        lines = [(n, line) for n, line in enumerate(f, start=1) if line.strip()]
    collector = Collector()  # as the worker loop does: what survives is left out of collections
    gc.freeze()
    handle, clock = engine.handle, time.thread_time
    metrics, spent, i = 0, 0.0, 0
    total = clock()
    while i < len(lines):
        if NODEMETRIC not in lines[i][1]:
            number, line = lines[i]
            handle(parse_event(line, number, wire=False))
            collector.handled(1)
            i += 1
            continue
        j = i
        while j < len(lines) and NODEMETRIC in lines[j][1]:
            j += 1
        t = clock()
        for number, line in lines[i:j]:
            handle(parse_event(line, number, wire=False))
            collector.handled(1)
        spent += clock() - t
        metrics += j - i
        i = j
    total = clock() - total
    collector.close()
    print(
        f"scorer engine alone: {len(lines):,} events in {total:.1f} CPU s = {len(lines) / total:,.0f} events per CPU-second"
    )
    print(
        f"  one NodeMetric update, decoded and handled: {spent / metrics * 1e6:.1f} us (CPU, {metrics:,} updates)"
        "  (target <= 10 us)"
    )
    nodes = len(engine.state.nodes.slot)
    t = clock()
    for store in engine.state.extensions:
        if isinstance(store, NodeMetricStore):
            store.views()
    print(f"  the load-aware store read once after the run: {(clock() - t) / nodes * 1e6:.1f} us per node ({nodes:,})")


def _kind(line: bytes) -> str:
    at = line.find(b'"kind":"')
    return line[at + 8 : line.index(b'"', at + 8)].decode() if at >= 0 else "?"


def stages(path: str) -> None:
    """Every event decoded, then handled by a scorer engine, then by a buffer controller's engine,
    each stage timed over runs of events of one kind (CPU time of the thread)."""
    scorer, buffers = ScorerEngine(parse_config(None)), BufferEngine(parse_config(None))
    collector = Collector()
    gc.freeze()
    clock = time.thread_time
    spent: dict[str, list[float]] = {}
    run: list[tuple[int, bytes]] = []
    kind = ""

    def flush() -> None:
        t0 = clock()
        events = [parse_event(line, number, wire=False) for number, line in run]
        t1 = clock()
        for ev in events:
            scorer.handle(ev)
        t2 = clock()
        for ev in events:
            buffers.handle(ev)
        t3 = clock()
        collector.handled(len(run))
        got = spent.setdefault(kind, [0, 0.0, 0.0, 0.0])
        got[0] += len(run)
        got[1] += t1 - t0
        got[2] += t2 - t1
        got[3] += t3 - t2
        run.clear()

    with open_log(path) as f:
        for number, line in enumerate(f, start=1):
            if not line.strip():
                continue
            k = _kind(line)
            if run and (k != kind or len(run) >= 100):
                flush()
            kind = k
            run.append((number, line))
        if run:
            flush()
    collector.close()
    total = sum(sum(v[1:]) for v in spent.values())
    count = sum(v[0] for v in spent.values())
    print(f"stages, CPU per event: {count:,} events in {total:.1f} CPU s = {count / total:,.0f} events per CPU-second")
    print(f"  {'kind':<12}{'events':>9}{'decode':>9}{'scorer':>9}{'buffers':>9}  (us)")
    for k, (n, dec, sc, bu) in sorted(spent.items(), key=lambda kv: -kv[1][0]):
        print(f"  {k:<12}{int(n):>9,}{dec / n * 1e6:>9.1f}{sc / n * 1e6:>9.1f}{bu / n * 1e6:>9.1f}")


if __name__ == "__main__":
    run()
