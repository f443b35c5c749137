"""Sizing (issues 35 and 36): the memory and CPU of each stream service's engine holding a generated
cluster, at 500, 5,000 and 15,000 nodes, and the scorer's decision time there.

  python -m bench sizing                          # 500, 5,000 (also without PVs) and 15,000 nodes
  python -m bench sizing --sizes 500              # one size (the names are in SIZES)

Each size's log is generated once (`berth generate`'s presets: 20 PVs and 4 pending pods per node at
500 and 5,000 nodes, `bench-15k` at 15,000, with bench's 20,000 pods). Then each engine reads the
whole log in a fresh interpreter of its own, as its service's worker loop does (a batch decoded, then
handled, collections as the loop runs them): the scorer (berth.core.pipeline.scorer, deciding every
pending pod), the buffer controller (pipeline.buffers) and the indexer (pipeline.indexer; its Redis
writes are left out). Prints each process's resident memory at the end and at its peak, its CPU
seconds, and the scorer's decision p50/p99. The services' processes add their runtime (aiokafka,
aiohttp, faust) on top: tens of MB. Figures only, never assertions; not part of `make test`.
"""

from __future__ import annotations

import argparse
import gc
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.memory import rss_bytes
from bench.util import percentile
from berth.core.api.watch import encode_event
from berth.core.generate import PRESETS, Params, generate

BATCH = 500  # lines decoded at a time, as the worker loop does
ENGINES = ("scorer", "buffer-controller", "indexer")


def _per_node(nodes: int, pvs: bool = True) -> Params:
    """bench's cluster at another size: 20 PVs (19 local, 1 zonal) and 4 pending pods per node.
    Without PVs, no StatefulSets either (their claims would find no PV and be retried all along)."""
    return PRESETS["bench"].replace(
        racks_per_zone=max(1, nodes // 125),
        nodes=nodes,
        local_pvs=19 * nodes if pvs else 0,
        zonal_pvs=nodes if pvs else 0,
        pods=4 * nodes,
        stateful_fraction=PRESETS["bench"].stateful_fraction if pvs else 0.0,
    )


SIZES: dict[str, Params] = {
    "500": _per_node(500),
    "5000": _per_node(5000),
    "5000-no-pvs": _per_node(5000, pvs=False),
    "15000": PRESETS["bench-15k"],
}


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench sizing", description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default=",".join(SIZES), help=f"comma-separated, of {', '.join(SIZES)}")
    p.add_argument("--engines", default=",".join(ENGINES), help=f"comma-separated, of {', '.join(ENGINES)}")
    p.add_argument("--keep", metavar="DIR", help="write the logs here and keep them")
    args = p.parse_args(argv)
    for name in args.sizes.split(","):
        if name not in SIZES:
            p.error(f"--sizes: unknown {name!r}; known: {', '.join(SIZES)}")
    for name in args.engines.split(","):
        if name not in ENGINES:
            p.error(f"--engines: unknown {name!r}; known: {', '.join(ENGINES)}")
    return args


def run(argv: list[str] | None = None) -> None:
    args = parse(argv)
    folder = Path(args.keep or tempfile.mkdtemp(prefix="berth-bench-sizing-"))
    folder.mkdir(parents=True, exist_ok=True)
    print("== sizing: each service's engine holding a generated cluster (one process each) ==")
    for size in args.sizes.split(","):
        params = SIZES[size]
        log = folder / f"sizing-{size}.jsonl"
        t = time.perf_counter()
        events = write_log(params, log)
        pvs = params.local_pvs + params.zonal_pvs
        print(
            f"-- {params.nodes:,} nodes, {pvs:,} PVs, {params.pods:,} pending pods: {events:,} events, "
            f"{log.stat().st_size / 1e6:,.0f} MB, generated in {time.perf_counter() - t:.0f} s",
            flush=True,
        )
        for engine in args.engines.split(","):
            out = subprocess.run(
                [sys.executable, "-m", "bench.sizing", "--child", engine, str(log)],
                check=True,
                capture_output=True,
                text=True,
            )
            show(engine, json.loads(out.stdout.splitlines()[-1]))
        if not args.keep:
            log.unlink()
    if not args.keep:
        folder.rmdir()


def write_log(params: Params, path: Path) -> int:
    n = 0
    with path.open("wb") as f:
        for wev in generate(params, 1):
            f.write(encode_event(wev) + b"\n")
            n += 1
    return n


def show(engine: str, r: dict[str, Any]) -> None:
    mb = 1024**2
    line = (
        f"  {engine:<18} RSS {r['rss'] / mb:,.0f} MB at the end, peak {r['peak'] / mb:,.0f} MB"
        f" (an empty engine: {r['empty'] / mb:,.0f} MB); {r['cpu']:.1f} CPU s for {r['events']:,} events"
    )
    if r.get("decisions"):
        line += (
            f"; {r['decisions']:,} decisions, p50 {r['p50'] * 1e3:.2f} ms, p99 {r['p99'] * 1e3:.2f} ms"
            f" (CPU, one decision)"
        )
    print(line, flush=True)


def child(engine: str, path: str) -> dict[str, Any]:
    """One engine over the whole log, in this process; its figures."""
    from berth.adapters.runtime.collector import Collector
    from berth.core.api.watch import parse_event
    from berth.core.config.kubeschedulerconfig import parse_config
    from berth.core.pipeline.buffers import BufferEngine
    from berth.core.pipeline.indexer import IndexerEngine
    from berth.core.pipeline.scorer import ScorerEngine

    config = parse_config(None)
    times: list[float] = []
    handle: Any
    if engine == "scorer":
        scorer = ScorerEngine(config, top_nodes=10)  # as the scorer service lists them (BERTH_TOP_NODES)
        handle, only = scorer.handle, scorer.reads()
        decide = scorer.scheduler.decide

        def timed(*a: Any, **k: Any) -> Any:
            t = time.thread_time()
            out = decide(*a, **k)
            times.append(time.thread_time() - t)
            return out

        scorer.scheduler.decide = timed  # type: ignore[method-assign]
    elif engine == "buffer-controller":
        buffers = BufferEngine(config)
        handle, only = buffers.handle, None
    else:
        handle, only = IndexerEngine().handle, None
    gc.collect()
    empty = rss_bytes()
    collector = Collector()  # as the worker loop: the growing state is left out of collections
    gc.freeze()
    cpu = time.process_time()
    n = 0
    with open(path, "rb") as f:
        while lines := [line for _, line in zip(range(BATCH), f, strict=False)]:
            with collector.building():
                batch = [parse_event(line, n + i, only, wire=False) for i, line in enumerate(lines, start=1)]
            n += len(lines)
            for ev in batch:
                handle(ev)
                collector.handled(1)
    cpu = time.process_time() - cpu
    collector.close()
    out: dict[str, Any] = {
        "events": n,
        "cpu": cpu,
        "empty": empty,
        "rss": rss_bytes(),
        "peak": max(rss_bytes(), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024),
    }
    if times:
        out |= {"decisions": len(times), "p50": percentile(times, 50), "p99": percentile(times, 99)}
    return out


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        print(json.dumps(child(sys.argv[2], sys.argv[3])))
    else:
        run(sys.argv[1:])
