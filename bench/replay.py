"""Issue 5 benchmark: embedded replay of a generated log with 5,000 nodes, 100,000 PVs and about
200,000 events, 20,000 of them pending pods. Prints events/s and decisions/s, and where the time goes.

The log is generated once into $BERTH_BENCH_DIR (default /tmp/berth-bench) and reused.
"""

from __future__ import annotations

import asyncio
import gc
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.util import one_core
from berth.adapters.files.eventlog import EventWriter, open_log, read_events
from berth.adapters.runtime.collector import Collector
from berth.core.api.watch import parse_event
from berth.core.config.kubeschedulerconfig import parse_config
from berth.core.generate import PRESETS, generate
from berth.core.pipeline.scorer import ScorerEngine
from berth_cli.pipeline import Lane, Pipeline

TOP_NODES = 10
BATCH = 500  # the worker loop's batch (berth.adapters.runtime.worker.run)


def log_path() -> str:
    path = Path(os.environ.get("BERTH_BENCH_DIR", "/tmp/berth-bench")) / "bench-seed1.jsonl"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        t = time.perf_counter()
        with EventWriter(str(path) + ".tmp") as w:
            for ev in generate(PRESETS["bench"], 1):
                w.write(ev)
        os.replace(str(path) + ".tmp", path)
        print(f"generated {path} in {time.perf_counter() - t:.1f} s")
    return str(path)


def run() -> None:
    print(f"== replay, embedded pipeline ({one_core()}) ==")
    path = log_path()
    lane = Lane("default", parse_config(None), top_nodes=TOP_NODES)
    pipeline = Pipeline([lane])
    t, cpu = time.perf_counter(), time.process_time()
    asyncio.run(pipeline.run(read_events(path)))
    seconds, cpu = time.perf_counter() - t, time.process_time() - cpu
    stats = lane.scorer.stats
    decided = len(stats.decisions)
    pods = len(stats.final())
    print(
        f"{pipeline.published:,} events, {decided:,} decisions ({pods:,} pods), {stats.rejects} rejects, top {TOP_NODES} nodes per decision"
    )
    print(
        f"whole pipeline (reader, bus, scorer, buffer controller): {seconds:.1f} s = {pipeline.published / seconds:,.0f} events/s, {decided / seconds:,.0f} decisions/s  (target >= 20,000 events/s)"
    )
    print(f"  CPU time: {cpu:.1f} s = {pipeline.published / cpu:,.0f} events per CPU-second")
    where_the_time_goes(path)


def where_the_time_goes(path: str) -> None:
    """The scorer engine alone, with timers around its stages (no profiler overhead). "convert +
    apply" is a line's decode (bytes to the model, at the edge) and its application to the state.
    As in the worker loop, lines are decoded a batch of 500 at a time, then handled one by one; and
    garbage collection follows its policy (freeze what survives every 1,000 events), so the stages
    are not charged for full passes over the growing state that the pipeline avoids.

    The timers read the wall clock (a CPU clock costs microseconds per read); on a shared machine
    each stage is also given as its share of the loop's CPU time ("cpu"), which is what to compare."""
    engine = ScorerEngine(parse_config(None), top_nodes=TOP_NODES)
    spent = {"convert + apply": 0.0, "decide": 0.0}
    apply = engine.applier.apply

    def timed_apply(ev):  # type: ignore[no-untyped-def]
        t = time.perf_counter()
        out = apply(ev)
        spent["convert + apply"] += time.perf_counter() - t
        return out

    engine.applier.apply = timed_apply  # type: ignore[method-assign]
    spent["over-the-run metrics"] = 0.0
    for name in ("advance", "pod", "node", "decided"):  # the observer's hooks, each timed
        setattr(engine.overrun, name, _timed(getattr(engine.overrun, name), spent, "over-the-run metrics"))
    engine.scheduler.observe = lambda plugin, point, s: (
        spent.__setitem__("decide", spent["decide"] + s) if point == "Decide" else None
    )
    with open_log(path) as f:
        evs = [(n, line) for n, line in enumerate(f, start=1) if line.strip()]
    collector = Collector()  # as the worker loop does: the growing state is left out of collections
    gc.freeze()
    clock = time.perf_counter
    only = engine.reads()  # as the scorer service's worker loop: kinds the engine does not read stay undecoded
    t, cpu = clock(), time.thread_time()
    for i in range(0, len(evs), BATCH):  # as the worker loop does: a batch decoded, then handled
        t0 = clock()
        with collector.building():  # as the worker loop decodes a batch: no collection meanwhile
            batch = [parse_event(line, n, only, wire=False) for n, line in evs[i : i + BATCH]]
        spent["convert + apply"] += clock() - t0
        for ev in batch:
            engine.handle(ev)
            collector.handled(1)
    total, cpu = clock() - t, time.thread_time() - cpu
    collector.close()
    decisions = len(engine.stats.decisions)
    n = len(evs)
    print(f"scorer engine alone: {total:.1f} s for {n:,} events = {n / total:,.0f} events/s (CPU time {cpu:.1f} s)")
    share = cpu / total  # wall seconds to CPU seconds: time the process was not running is spread evenly
    c, d = spent["convert + apply"], spent["decide"]
    print(
        f"  convert + apply to state   {c:6.1f} s  ({c / n * 1e6:.1f} us per event; cpu {c * share / n * 1e6:.1f} us)"
    )
    per = max(decisions, 1)
    print(
        f"  decide (all plugins)       {d:6.1f} s  ({d / per * 1e3:.2f} ms per decision; cpu {d * share / per * 1e3:.2f} ms)"
    )
    t = clock()
    engine.overrun.result([])
    metrics = spent["over-the-run metrics"] + clock() - t
    rest = total - c - d - spent["over-the-run metrics"]
    print(f"  reserve, queue, records    {rest:6.1f} s  (cpu {rest * share:.1f} s)")
    print(f"  over-the-run metrics       {metrics:6.1f} s  ({100 * metrics / total:.1f}% of the engine's time)")


def _timed(fn: Callable[..., Any], spent: dict[str, float], key: str) -> Callable[..., Any]:
    def call(*args: Any) -> Any:
        t = time.perf_counter()
        out = fn(*args)
        spent[key] += time.perf_counter() - t
        return out

    return call


if __name__ == "__main__":
    run()
