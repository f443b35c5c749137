"""Issue 5 benchmark: embedded replay of a generated log with 5,000 nodes, 100,000 PVs and about
200,000 events, 20,000 of them pending pods. Prints events/s and decisions/s, and where the time goes.

The log is generated once into $BERTH_BENCH_DIR (default /tmp/berth-bench) and reused.
"""

from __future__ import annotations

import asyncio
import cProfile
import os
import pstats
import time
from pathlib import Path

from bench.util import one_core
from berth.adapters.eventlog import EventWriter, read_events
from berth.core.config import parse_config
from berth.core.generate import PRESETS, generate
from berth.core.pipeline.scorer import ScorerEngine
from berth_cli.pipeline import Lane, Pipeline

TOP_NODES = 10


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
    profile = parse_config(None).profile()
    lane = Lane("default", profile, top_nodes=TOP_NODES)
    pipeline = Pipeline([lane])
    t = time.perf_counter()
    asyncio.run(pipeline.run(read_events(path)))
    seconds = time.perf_counter() - t
    stats = lane.scorer.stats
    decided = len(stats.decisions)
    pods = len(stats.final())
    print(
        f"{pipeline.published:,} events, {decided:,} decisions ({pods:,} pods), {stats.rejects} rejects, top {TOP_NODES} nodes per decision"
    )
    print(
        f"whole pipeline (reader, bus, scorer, buffer controller): {seconds:.1f} s = {pipeline.published / seconds:,.0f} events/s, {decided / seconds:,.0f} decisions/s  (target >= 20,000 events/s)"
    )
    where_the_time_goes(path)


def where_the_time_goes(path: str, events: int = 200_000) -> None:
    """The scorer engine alone, profiled by stage."""
    engine = ScorerEngine(parse_config(None).profile(), top_nodes=TOP_NODES)
    evs = list(read_events(path))[:events]
    prof = cProfile.Profile()
    prof.enable()
    for ev in evs:
        engine.handle(ev)
    prof.disable()
    st = pstats.Stats(prof)
    total = sum(v[2] for v in st.stats.values())  # type: ignore[attr-defined]

    def cum(fragment: str) -> float:
        return max((v[3] for k, v in st.stats.items() if fragment in f"{k[0]}:{k[2]}"), default=0.0)  # type: ignore[attr-defined]

    stages = {
        "convert raw JSON to the model": cum("core/pipeline/applier.py:apply") - cum("core/state.py:apply"),
        "apply to state and indexes": cum("core/state.py:apply"),
        "decide (filters, scores, winner)": cum("core/scheduler.py:decide"),
        "reserve": cum("core/state.py:reserve"),
    }
    print(f"scorer engine alone, profiled ({total:.1f} s of function time):")
    for name, secs in stages.items():
        print(f"  {name:34s} {secs:6.1f} s")


if __name__ == "__main__":
    run()
