"""Issue 19 benchmark (`python -m bench bootstrap`): a restarted scorer's time to ready, starting
from the indexer's state in Redis against replaying the topic's history; and the indexer's rate.

On a real broker (Tansu) and redis-server, with the `bench` preset log (203,825 events) published
once to a one-partition topic, as bench/streaming.py does (broker and Redis on every CPU but the
last, each measured process pinned to the last):

  1. the indexer app indexes the whole log (bench.streaming's worker (b): the clock runs from its
     1,000th event to the last); with BENCH_BASE (a tree of the code before, e.g. from `git archive`)
     the same worker of that tree indexes it too, into its own prefix and group, in the same sitting,
     alternating with this tree's for BENCH_INDEXER_ROUNDS pairs (default 1);
  2. the scorer's group is committed at the end of the topic, as a scorer that had handled it all;
  3. `berth scorer` is started five times, each timed from spawn to /readyz answering 200:
     (r1) on the indexer's Redis state, before any checkpoint of its group: objects, then the pods
     still pending decided once (no events after the watermark to replay);
     (r2) the same again, now with the checkpoint r1 wrote: a restarted scorer;
     (r3) as r2, for a scorer that joins as a static member (`BERTH_KAFKA_GROUP_INSTANCE_ID`) and
     is restarted as the same member;
     (h) with Redis holding no state for it (its own prefix): it replays the history, as before
     (given up after BENCH_HISTORY_SECONDS, default 600, on a busy machine).
     Each also reports berth_state_seconds, the state's build after the group's assignment (a
     start builds it during the join, and that part is not counted), and the CPU-seconds of the
     whole process; the rest is start-up and the group join (Tansu holds a JoinGroup for half the
     session timeout, a static member's JoinGroup and SyncGroup 3 s each: docs/services.md, "Where a
     restart's time goes"). The scorer is not pinned: it has the whole machine, as the broker and
     Redis do.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from aiokafka import AIOKafkaConsumer, TopicPartition
from tests.integration.services import BERTH, isolated_env, run_berth, stop
from tests.servers import free_port, start_broker, start_redis

from bench.replay import TOP_NODES, log_path
from bench.streaming import SKIP, cpu_seconds, cpus, pin

TIMEOUT = 900.0
TARGET_READY = 5.0
TARGET_SLOWER = 0.15


def run() -> None:
    worker_cpu, server_cpus = cpus()
    print(
        f"== bootstrap: broker + Redis on cpus {sorted(server_cpus)}, measured processes on cpu {sorted(worker_cpu)} =="
    )
    path = os.environ.get("BENCH_STREAMING_LOG") or log_path()
    broker, redis = start_broker(), start_redis()
    pin(broker.proc.pid, server_cpus)
    pin(redis.proc.pid, server_cpus)
    before = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else set()
    pin(0, server_cpus)
    try:
        env = isolated_env(broker, redis, BERTH_LOG_LEVEL="INFO")
        out = run_berth(env, "replay", path, "--bootstrap-servers", broker.address)
        if out.returncode != 0:
            raise RuntimeError(out.stderr)
        total = int(out.stderr.split("published ")[1].split()[0])
        print(f"log: {path}, {total:,} events, published to one partition")
        env.update(BENCH_TOTAL=str(total), BENCH_SKIP=str(SKIP))
        indexers(env, worker_cpu)
        asyncio.run(commit_at_end(env, total))
        print(f"scorer group committed at {total:,}: a scorer that had handled the whole log, restarted")
        fresh = {**env, "BERTH_REDIS_PREFIX": env["BERTH_REDIS_PREFIX"] + "none:"}
        report("r1. Redis, no checkpoint yet", ready(env, TIMEOUT))
        r2 = ready(env, TIMEOUT)
        report("r2. Redis, with its checkpoint (a restarted scorer)", r2)
        print(f"   target <= {TARGET_READY:.0f} s from Redis: {'PASS' if r2['seconds'] <= TARGET_READY else 'MISS'}")
        static = {**env, "BERTH_KAFKA_GROUP_INSTANCE_ID": "berth-bench-scorer"}
        ready(static, TIMEOUT)  # joins as a static member once
        report(
            "r3. the same, restarted as the same static member (BERTH_KAFKA_GROUP_INSTANCE_ID)", ready(static, TIMEOUT)
        )
        report("h. history (Redis holds no state)", ready(fresh, float(os.environ.get("BENCH_HISTORY_SECONDS", "600"))))
    finally:
        pin(0, before)
        broker.stop()
        redis.stop()


def indexers(env: dict[str, str], where: set[int]) -> None:
    """This tree's indexer over the log (into env's prefix: the scorer runs below start from it); with
    BENCH_BASE, the base tree's too, alternating base, this, this, base, ... for BENCH_INDEXER_ROUNDS
    pairs (default 1), each run into its own prefix and group: one pair moves by about 5% either way."""
    here = str(Path(__file__).parents[1])
    base = os.environ.get("BENCH_BASE")
    runs = [("after (this tree)", here)]
    if base:
        pairs = [(("before (BENCH_BASE)", base), ("after (this tree)", here))]
        pairs.append(pairs[0][::-1])
        rounds = int(os.environ.get("BENCH_INDEXER_ROUNDS", "1"))
        runs = [run for i in range(rounds) for run in pairs[i % 2]]
    rates: dict[str, list[float]] = {}
    mine = False  # this tree's first run indexes into env's own prefix
    for i, (label, tree) in enumerate(runs):
        e = env
        if tree != here or mine:
            e = {**env, "BERTH_REDIS_PREFIX": env["BERTH_REDIS_PREFIX"] + f"run{i}:"}
            e["BERTH_GROUP_INDEXER"] += f"-run{i}"
        mine = mine or tree == here
        got = worker(tree, e, where)
        per_cpu = got["events"] / got["cpu"]
        rates.setdefault(label, []).append(per_cpu)
        print(
            f"indexer {label}: {got['rate']:,.0f} events/s ({got['events']:,} events in {got['seconds']:.1f} s,"
            f" {got['batches']} batches; {per_cpu:,.0f} per CPU-second), watermark {got['watermark']:,}"
        )
    if base:
        before, after = (sum(v) / len(v) for v in rates.values())
        slower = 1 - after / before
        print(
            f"   after/before: {after / before:.0%} per CPU-second (mean of {len(rates['after (this tree)'])} runs each);"
            f" target no more than {TARGET_SLOWER:.0%} slower: {'PASS' if slower <= TARGET_SLOWER else 'MISS'}"
        )


def worker(tree: str, env: dict[str, str], where: set[int]) -> dict[str, Any]:
    """bench.streaming's indexer worker of `tree` (its own code first on the path), until it is done."""
    import json

    with tempfile.TemporaryDirectory(prefix="berth-bench-bootstrap-") as tmp:
        result = Path(tmp) / "result.json"
        paths = [str(Path(tree) / p) for p in ("shared", "services", ".")]
        log = open(Path(tmp) / "worker.log", "wb")  # noqa: SIM115 - closed below
        proc = subprocess.Popen(
            [sys.executable, "-m", "bench.streaming", "indexer", str(result)],
            env={**env, "BENCH_DATA_DIR": tmp, "PYTHONPATH": os.pathsep.join(paths)},
            cwd=tree,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        pin(proc.pid, where)
        try:
            deadline = time.monotonic() + TIMEOUT
            while not result.exists():
                if proc.poll() is not None or time.monotonic() > deadline:
                    log.flush()
                    raise RuntimeError(f"indexer worker failed:\n{(Path(tmp) / 'worker.log').read_text()[-3000:]}")
                time.sleep(0.1)
            got: dict[str, Any] = json.loads(result.read_text())
            return got
        finally:
            stop(proc)
            log.close()


async def commit_at_end(env: dict[str, str], total: int) -> None:
    tp = TopicPartition(env["BERTH_TOPIC_CLUSTER_EVENTS"], 0)
    consumer = AIOKafkaConsumer(
        bootstrap_servers=env["BERTH_KAFKA_BOOTSTRAP_SERVERS"],
        group_id=env["BERTH_GROUP_SCORER"],
        enable_auto_commit=False,
    )
    await consumer.start()
    try:
        consumer.assign([tp])
        await consumer.commit({tp: total})
    finally:
        await consumer.stop()


def ready(env: dict[str, str], cap: float) -> dict[str, Any]:
    """Start `berth scorer`; seconds from spawn to /readyz 200, what it said, its state seconds
    (or, past `cap`, how long it was given)."""
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="berth-bench-ready-") as tmp:
        log = open(Path(tmp) / "scorer.log", "wb")  # noqa: SIM115 - closed below
        t0 = time.monotonic()
        proc = subprocess.Popen(
            [BERTH, "scorer"],
            env={**env, "BERTH_HTTP_PORT": str(port), "BERTH_TOP_NODES": str(TOP_NODES)},  # as bench.replay
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            while True:
                if time.monotonic() > t0 + cap:
                    return {
                        "seconds": cap,
                        "said": f"not ready after {cap:.0f} s",
                        "built": 0.0,
                        "cpu": cpu_seconds(proc.pid),
                    }
                if proc.poll() is not None:
                    raise RuntimeError(f"scorer failed:\n{(Path(tmp) / 'scorer.log').read_text()[-3000:]}")
                status, body = get(port, "/readyz")
                if status == 200:
                    seconds = time.monotonic() - t0
                    _, metrics = get(port, "/metrics")
                    built = next(
                        (float(x.split()[-1]) for x in metrics.splitlines() if x.startswith("berth_state_seconds ")),
                        0.0,
                    )
                    return {
                        "seconds": seconds,
                        "said": body.strip().splitlines()[-1],
                        "built": built,
                        "cpu": cpu_seconds(proc.pid),
                    }
                time.sleep(0.05)
        finally:
            stop(proc)
            log.close()


def get(port: int, route: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{route}", timeout=5) as r:
            return int(r.status), r.read().decode()
    except urllib.error.HTTPError as e:
        return int(e.code), e.read().decode()
    except OSError:
        return 0, ""


def report(label: str, got: dict[str, Any]) -> None:
    print(
        f"{label}: ready {got['seconds']:.1f} s after spawn (state built in {got['built']:.1f} s;"
        f" {got['cpu']:.1f} CPU-seconds), /readyz: {got['said']}"
    )


if __name__ == "__main__":
    run()
