"""Issue 6 benchmark: the streaming services on a real broker (Tansu) and redis-server, in one run.

  a0. a bare faust agent that only consumes the cluster events, faust as shipped;
  a. the same with the indexer's faust tuning (berth_indexer.tuning): the framework's limit here;
  b. the indexer app (berth_indexer.app.build) consuming the same events into Redis;
  c. end to end: `berth scorer` consuming the same events and emitting decisions.

The broker and redis-server are started on free ports (tests/servers.py) and pinned to every CPU but
the last; each measured worker runs as its own process pinned to the last CPU. The log is the `bench`
preset (bench/replay.py generates it once; BENCH_STREAMING_LOG picks another), published once with
`berth replay --bootstrap-servers` to a one-partition topic, then consumed from the start by a, b and
c, each in its own consumer group.

Start-up and group join are excluded the same way for a0, a and b: the clock starts once the first 1,000
events have been handled (a0, a: the 1,000th event reached the agent; b: the indexer's first batch is in
Redis and its watermark written) and stops when the last one is (b: the watermark reaches the end of
the topic); the rate counts only the events in between. For c the scorer's /metrics are polled every
0.1 s: the clock starts at the first poll with at least 1,000 events handled and stops when all are,
or after BENCH_SCORER_SECONDS (default 600). Each rate is also given per CPU-second of the worker
process, which says more than wall time on a busy machine.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from tests.integration.services import BERTH, isolated_env, run_berth, stop
from tests.servers import Server, free_port, start_broker, start_redis

from bench.replay import TOP_NODES, log_path

SKIP = 1000  # events handled before the clock starts (start-up, group join, the first batch)
TIMEOUT = 900.0  # for a0, a and b
TARGET_RATE, TARGET_SHARE = 10_000, 0.70


def cpus() -> tuple[set[int], set[int]]:
    """(the measured worker's CPU: the last one, the servers' CPUs: the others)."""
    try:
        have = sorted(os.sched_getaffinity(0))
    except AttributeError:
        return set(), set()
    return {have[-1]}, set(have[:-1]) or {have[-1]}


def pin(pid: int, where: set[int]) -> None:
    if where and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(pid, where)


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (Linux), 0 where /proc is not there."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run() -> None:
    worker_cpu, server_cpus = cpus()
    print(
        f"== streaming services: broker + Redis on cpus {sorted(server_cpus)},"
        f" each measured worker a process pinned to cpu {sorted(worker_cpu)} =="
    )
    path = os.environ.get("BENCH_STREAMING_LOG") or log_path()
    broker, redis = start_broker(), start_redis()
    pin(broker.proc.pid, server_cpus)
    pin(redis.proc.pid, server_cpus)
    before = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else set()
    pin(0, server_cpus)  # this process only publishes and polls
    try:
        measure(path, broker, redis, worker_cpu)
    finally:
        pin(0, before)
        broker.stop()
        redis.stop()


def measure(path: str, broker: Server, redis: Server, worker_cpu: set[int]) -> None:
    env = isolated_env(broker, redis)
    t = time.perf_counter()
    out = run_berth(env, "replay", path, "--bootstrap-servers", broker.address)
    if out.returncode != 0:
        raise RuntimeError(out.stderr)
    total = int(out.stderr.split("published ")[1].split()[0])
    print(
        f"log: {path}, {total:,} events, {os.path.getsize(path) / total:,.0f} bytes each on average"
        f" (uncompressed); published to one partition with `berth replay --bootstrap-servers` in {time.perf_counter() - t:.1f} s"
    )
    print(f"clock: from the {SKIP:,}th event handled to the last (start-up and group join excluded)")
    env.update(BENCH_TOTAL=str(total), BENCH_SKIP=str(SKIP))

    plain = in_worker("bare-plain", env, worker_cpu)
    print(
        f"a0. bare faust agent, faust as shipped, only consumes: {plain['rate']:,.0f} events/s"
        f"  ({plain['events']:,} events in {plain['seconds']:.1f} s; {plain['events'] / plain['cpu']:,.0f} per CPU-second)"
    )
    bare = in_worker("bare", env, worker_cpu)
    print(
        f"a. bare faust agent with the indexer's faust tuning (berth_indexer.tuning), only consumes: {bare['rate']:,.0f} events/s"
        f"  ({bare['events']:,} events in {bare['seconds']:.1f} s; {bare['events'] / bare['cpu']:,.0f} per CPU-second)"
    )
    idx = in_worker("indexer", env, worker_cpu)
    ok = idx["handled"] == total and idx["gaps"] == 0 and idx["watermark"] == total
    print(
        f"b. indexer (the app from berth_indexer.app.build, batches into Redis): {idx['rate']:,.0f} events/s"
        f"  ({idx['events']:,} events in {idx['seconds']:.1f} s, {idx['batches']} batches;"
        f" {idx['events'] / idx['cpu']:,.0f} per CPU-second)"
    )
    print(
        f"   watermark {idx['watermark']:,} of {total:,}, every event handled once and in order: {'yes' if ok else 'NO'};"
        f" Redis: {idx['pv_keys']:,} PV index keys, {idx['used_keys']:,} nodes with usage"
    )
    print(f"   target >= {TARGET_RATE:,} events/s: {'PASS' if idx['rate'] >= TARGET_RATE else 'MISS'}")
    for name, base in (("a0 (faust as shipped)", plain), ("a (tuned as the indexer)", bare)):
        share = idx["rate"] / base["rate"]
        share_cpu = (idx["events"] / idx["cpu"]) / (base["events"] / base["cpu"])
        print(
            f"   {share:.0%} of bare agent {name} ({share_cpu:.0%} per CPU-second), target >= {TARGET_SHARE:.0%}:"
            f" {'PASS' if share >= TARGET_SHARE else 'MISS'}"
        )
    cap = float(os.environ.get("BENCH_SCORER_SECONDS", "600"))
    e2e = scorer(env, total, worker_cpu, cap)
    where = "all events" if e2e["done"] else f"stopped after {cap:.0f} s at event {e2e['reached']:,} of {total:,}"
    print(
        f"c. end to end, `berth scorer` (a process, top {TOP_NODES} nodes per decision) to berth.decisions: {e2e['rate']:,.0f} events/s,"
        f" {e2e['decisions_rate']:,.1f} decisions/s  ({e2e['events']:,} events and {e2e['decisions']:,} decisions"
        f" in {e2e['seconds']:.1f} s, {where}; {e2e['events'] / max(e2e['cpu'], 1e-9):,.0f} events per CPU-second)"
    )


def in_worker(what: str, env: dict[str, str], where: set[int]) -> dict[str, Any]:
    """Run `python -m bench.streaming WHAT RESULT` pinned to `where`, until it wrote its result."""
    with tempfile.TemporaryDirectory(prefix=f"berth-bench-{what}-") as tmp:
        result = Path(tmp) / "result.json"
        log = open(Path(tmp) / "worker.log", "wb")  # noqa: SIM115 - closed below
        proc = subprocess.Popen(
            [sys.executable, "-m", "bench.streaming", what, str(result)],
            env={**env, "BENCH_DATA_DIR": tmp},
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        pin(proc.pid, where)
        try:
            deadline = time.monotonic() + TIMEOUT
            while not result.exists():
                if proc.poll() is not None or time.monotonic() > deadline:
                    log.flush()
                    raise RuntimeError(f"{what} worker failed:\n{(Path(tmp) / 'worker.log').read_text()[-3000:]}")
                time.sleep(0.1)
            got: dict[str, Any] = json.loads(result.read_text())
            return got
        finally:
            stop(proc)
            log.close()


def scorer(env: dict[str, str], total: int, where: set[int], cap: float) -> dict[str, Any]:
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="berth-bench-scorer-") as tmp:
        log = open(Path(tmp) / "scorer.log", "wb")  # noqa: SIM115 - closed below
        proc = subprocess.Popen(
            [BERTH, "scorer"],
            env={**env, "BERTH_HTTP_PORT": str(port), "BERTH_TOP_NODES": str(TOP_NODES)},  # as bench.replay
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        pin(proc.pid, where)
        try:
            start: tuple[float, float, float, float] | None = None
            give_up = time.monotonic() + TIMEOUT  # to reach the first SKIP events
            while True:
                now = time.monotonic()
                if proc.poll() is not None or (start is None and now > give_up):
                    raise RuntimeError(f"scorer failed:\n{(Path(tmp) / 'scorer.log').read_text()[-3000:]}")
                events, decisions = scrape(port)
                if start is None and events >= SKIP:
                    start = (now, events, decisions, cpu_seconds(proc.pid))
                elif start is not None and (events >= total or now >= start[0] + cap):
                    seconds = now - start[0]
                    return {
                        "rate": (events - start[1]) / seconds,
                        "decisions_rate": (decisions - start[2]) / seconds,
                        "events": int(events - start[1]),
                        "decisions": int(decisions - start[2]),
                        "seconds": seconds,
                        "cpu": cpu_seconds(proc.pid) - start[3],
                        "done": events >= total,
                        "reached": int(events),
                    }
                time.sleep(0.1)
        finally:
            stop(proc)
            log.close()


def scrape(port: int) -> tuple[float, float]:
    """(events handled, decisions emitted) from the scorer's /metrics."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as r:
            text = r.read().decode()
    except OSError:
        return 0.0, 0.0
    events = decisions = 0.0
    for line in text.splitlines():
        if line.startswith("berth_events_total{"):
            events += float(line.rsplit(" ", 1)[1])
        elif line.startswith("berth_decisions_total{"):
            decisions += float(line.rsplit(" ", 1)[1])
    return events, decisions


# ---- inside the measured worker process ------------------------------------------------------


def worker(what: str, result: str) -> None:
    import faust

    from berth.adapters.runtime.metrics import Metrics
    from berth.settings import from_env

    settings = from_env(os.environ)
    total, skip = int(os.environ["BENCH_TOTAL"]), int(os.environ["BENCH_SKIP"])
    data_dir = os.environ["BENCH_DATA_DIR"]

    def done(**figures: Any) -> None:
        tmp = result + ".tmp"
        Path(tmp).write_text(json.dumps(figures))
        os.replace(tmp, result)

    if what in ("bare", "bare-plain"):
        from berth_indexer.app import new_app
        from berth_indexer.tuning import RawBytes

        tuned = what == "bare"  # the indexer's app without its table and agent; bare-plain: faust as shipped
        app = new_app(settings, f"{settings.groups.indexer}-{what}", data_dir, tuned=tuned)
        if tuned:
            topic = app.topic(settings.topics.cluster_events, schema=RawBytes(), partitions=1)
        else:
            topic = app.topic(settings.topics.cluster_events, value_type=bytes, value_serializer="raw", partitions=1)

        @app.agent(topic)
        async def consume(stream: Any) -> None:
            seen = 0
            t0 = c0 = 0.0
            async for _ in stream:
                seen += 1
                if seen == skip:
                    t0, c0 = time.perf_counter(), time.process_time()
                elif seen == total:
                    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
                    done(rate=(total - skip) / seconds, events=total - skip, seconds=seconds, cpu=cpu)

    else:
        from redis.asyncio import Redis

        from berth_indexer.app import WATERMARKS, Prepared, build

        app, indexer = build(settings, Metrics("indexer"), data_dir)
        write = indexer.write
        clock: dict[str, float] = {}
        seen = {"next": 0, "gaps": 0, "handled": 0}

        prepare = indexer.prepare

        def counted(values: list[tuple[bytes, int, int]], full: bool) -> Prepared:
            for _, _, offset in values:
                seen["gaps"] += offset != seen["next"]
                seen["next"] = offset + 1
            seen["handled"] += len(values)
            return prepare(values, full)

        async def timed(batch: Prepared) -> dict[str, dict[str, int]]:
            out = await write(batch)
            end = batch.watermarks[0]  # the bench topic has one partition
            if "t0" not in clock and end >= skip:
                clock.update(t0=time.perf_counter(), c0=time.process_time(), start=end)
            elif end >= total:
                seconds, cpu = time.perf_counter() - clock["t0"], time.process_time() - clock["c0"]
                r = Redis.from_url(settings.redis.url)
                p = settings.redis.prefix
                watermark = await indexer.index.watermark(WATERMARKS, 0)
                pv_keys = len({k async for k in r.scan_iter(f"{p}pvidx:*", count=10_000)})
                used_keys = len({k async for k in r.scan_iter(f"{p}used:*", count=10_000)})
                await r.aclose()
                events = int(total - clock["start"])
                done(
                    rate=events / seconds,
                    events=events,
                    seconds=seconds,
                    cpu=cpu,
                    batches=indexer.batches,
                    watermark=watermark,
                    pv_keys=pv_keys,
                    used_keys=used_keys,
                    handled=seen["handled"],
                    gaps=seen["gaps"],
                )
            return out

        indexer.prepare = counted  # type: ignore[method-assign]
        indexer.write = timed  # type: ignore[method-assign]

    faust.Worker(app, loglevel="WARNING", quiet=True, redirect_stdouts=False).execute_from_commandline()


if __name__ == "__main__":
    if len(sys.argv) == 3:
        worker(sys.argv[1], sys.argv[2])
    else:
        run()
