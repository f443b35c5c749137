"""Issue 21's memory figure: a scorer engine's state at 50,000 nodes, 1,000,000 PVs and 500,000
bound pods (the `scale` preset), and the resident memory of the process that holds it.

The preset's events are generated and decoded one by one (nothing is written to disk: the log
would be several gigabytes) and handed to a scorer engine, as a replay would. Prints the
resident set size (RSS) before and after, and its peak. Run: `python -m bench memory`.
"""

from __future__ import annotations

import gc
import resource
import time

from berth.core.api.watch import encode_event, parse_event
from berth.core.config.kubeschedulerconfig import parse_config
from berth.core.generate import PRESETS, generate
from berth.core.pipeline.scorer import ScorerEngine

TARGET_GB = 4.0


def rss_bytes() -> int:
    """The resident set size now (Linux /proc; 0 elsewhere)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * resource.getpagesize()
    except OSError:
        return 0


def run(preset: str = "scale") -> None:
    print(f"== memory: a scorer engine's state, `{preset}` preset ==")
    before = rss_bytes()
    engine = ScorerEngine(parse_config(None))
    counts = {"Node": 0, "PersistentVolume": 0, "Pod": 0}
    n = 0
    t, cpu = time.perf_counter(), time.process_time()
    for n, wev in enumerate(generate(PRESETS[preset], 1), start=1):
        engine.handle(parse_event(encode_event(wev, with_position=True), n))
        kind = wev.object.get("kind", "") if isinstance(wev.object, dict) else ""
        if kind in counts and wev.type == "ADDED":
            counts[kind] += 1
        if n % 100_000 == 0:
            gc.collect(1)
    seconds, cpu = time.perf_counter() - t, time.process_time() - cpu
    gc.collect()
    after = rss_bytes()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux
    state = engine.state
    print(
        f"{n:,} events generated, decoded and handled in {seconds:.0f} s ({cpu:.0f} CPU s): "
        f"{counts['Node']:,} nodes, {counts['PersistentVolume']:,} PVs, {counts['Pod']:,} pods added"
    )
    print(f"  state holds {len(state.nodes.slot):,} nodes, {len(state.pvs):,} PVs, {len(state.pods):,} pods")
    gb = 1024**3
    print(
        f"  RSS {after / gb:.2f} GB after ({before / gb:.2f} GB before), peak {peak / gb:.2f} GB"
        f"  (target <= {TARGET_GB:.0f} GB)"
    )


if __name__ == "__main__":
    run()
