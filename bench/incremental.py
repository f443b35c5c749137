"""Issue 21: incremental evaluation on the replay bench's log. Two scorer engines, one keeping
node-local plugins' answers per pod signature and one not, each fed every event in turn (so a busy
machine slows both alike), decide each pod of the log; prints CPU per decision and, per plugin and
extension point, the time per decision of each (wall clock, read as shares). Figures only.

`python -m bench incremental`; BERTH_BENCH_LINES=N: only the log's first N lines.
"""

from __future__ import annotations

import gc
import os
import time
from collections import defaultdict

from bench.replay import TOP_NODES, log_path
from bench.util import one_core
from berth.adapters.files.eventlog import open_log
from berth.adapters.runtime.collector import Collector
from berth.core.api.watch import parse_event
from berth.core.config.kubeschedulerconfig import parse_config
from berth.core.pipeline.scorer import ScorerEngine
from berth.core.scheduler.schedule_one import Scheduler


def run() -> None:
    print(f"== incremental evaluation, kept and full side by side ({one_core()}) ==")
    limit = int(os.environ["BERTH_BENCH_LINES"]) if os.environ.get("BERTH_BENCH_LINES") else None
    engines = {kept: ScorerEngine(parse_config(None), top_nodes=TOP_NODES, incremental=kept) for kept in (True, False)}
    spent: dict[bool, dict[tuple[str, str], float]] = {kept: defaultdict(float) for kept in engines}
    cpu: dict[bool, float] = defaultdict(float)
    for kept, engine in engines.items():
        engine.scheduler.observe = _observer(spent[kept])
        engine.scheduler.decide = _cpu_timed(engine.scheduler, cpu, kept)  # type: ignore[method-assign]
    with open_log(log_path()) as log:
        lines = [(n, line) for n, line in enumerate(log, start=1) if line.strip()][:limit]
    collector = Collector()
    gc.freeze()
    for n, line in lines:
        ev = parse_event(line, n, wire=False)
        for engine in engines.values():
            engine.handle(ev)
        collector.handled(1)
    collector.close()
    decisions = [len(e.stats.decisions) for e in engines.values()]
    assert decisions[0] == decisions[1]
    per = max(decisions[0], 1)
    print(f"{len(lines):,} events, {per:,} decisions each")
    print(f"  decide, CPU per decision: kept {cpu[True] / per * 1e3:.2f} ms, full {cpu[False] / per * 1e3:.2f} ms")
    print("  per plugin and point, us per decision (wall):       kept     full")
    points = sorted(spent[False], key=lambda k: -spent[False][k])
    for plugin, point in points[:16]:
        k, f = (spent[x][(plugin, point)] / per * 1e6 for x in (True, False))
        print(f"    {plugin or '(whole cycle)':33s} {point:15s} {k:8.0f} {f:8.0f}")


def _observer(spent: dict[tuple[str, str], float]):  # type: ignore[no-untyped-def]
    def observe(plugin: str, point: str, seconds: float) -> None:
        spent[(plugin, point)] += seconds

    return observe


def _cpu_timed(scheduler: Scheduler, cpu: dict[bool, float], kept: bool):  # type: ignore[no-untyped-def]
    decide = scheduler.decide

    def timed(*args):  # type: ignore[no-untyped-def]
        t = time.thread_time()
        out = decide(*args)
        cpu[kept] += time.thread_time() - t
        return out

    return timed


if __name__ == "__main__":
    run()
