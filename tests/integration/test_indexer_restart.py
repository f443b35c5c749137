"""The indexer killed mid-stream: its agent works a batch ahead of Redis in memory, so a kill can
lose that batch's writes; the restarted indexer must redo them from what its group committed.
Real broker (Tansu) and redis-server; each run has its own topics, group and key prefix."""

from __future__ import annotations

import asyncio
import signal
import threading
import time
from pathlib import Path

import pytest
from redis.asyncio import Redis

from berth.adapters.files.eventlog import read_events
from tests.integration.services import isolated_env, service
from tests.integration.test_streaming import publish
from tests.servers import Server

SAMPLE = str(Path(__file__).parents[2] / "examples" / "small.jsonl.gz")
WATERMARK = "watermark:berth.index-watermarks:0"
pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]


async def redis_dump(env: dict[str, str], epochs: bool = True) -> dict[str, object]:
    """Every key under the run's prefix (prefix stripped) with its contents; epochs=False leaves out
    the epoch keys, whose tokens differ from run to run (berth.adapters.store.epoch)."""
    prefix = env["BERTH_REDIS_PREFIX"]
    client = Redis.from_url(env["BERTH_REDIS_URL"], decode_responses=True, encoding_errors="replace")
    out: dict[str, object] = {}
    async for key in client.scan_iter(f"{prefix}*", count=1000):
        kind = await client.type(key)
        if kind == "zset":
            value: object = await client.zrange(key, 0, -1, withscores=True)
        elif kind == "hash":
            value = await client.hgetall(key)
        elif kind == "set":
            value = sorted(await client.smembers(key))
        else:
            value = await client.get(key)
        out[key.removeprefix(prefix)] = value
    await client.aclose()
    if not epochs:
        out = {k: v for k, v in out.items() if not k.startswith("epoch:")}
    return out


def watermark_reaches(env: dict[str, str], offset: int, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while True:
        got = asyncio.run(redis_dump(env)).get(WATERMARK)
        if got is not None and int(str(got)) >= offset:
            return
        assert time.monotonic() < deadline, f"watermark {got} did not reach {offset}"
        time.sleep(0.2)


def test_an_indexer_killed_mid_stream_ends_with_the_index_of_an_uninterrupted_run(
    broker: Server, redis_server: Server, tmp_path: Path
) -> None:
    total = sum(1 for _ in read_events(SAMPLE))
    whole = isolated_env(broker, redis_server)
    with service("indexer", whole, "--data-dir", str(tmp_path / "whole"), log_dir=tmp_path):
        asyncio.run(publish(whole, SAMPLE))
        watermark_reaches(whole, total)
    want = asyncio.run(redis_dump(whole, epochs=False))

    env = isolated_env(broker, redis_server, BERTH_LOG_LEVEL="INFO")
    # published in small chunks while the indexer runs, so that it writes many small batches and
    # is killed while one is in flight (most likely; the end state must be right either way)
    chunks = [range(i, min(i + 40, total)) for i in range(0, total, 40)]

    def paced() -> None:
        for c in chunks[1:]:
            asyncio.run(publish(env, SAMPLE, only=c))
            time.sleep(0.1)

    publisher = threading.Thread(target=paced)
    for run in ("first", "second"):  # each indexer's log of its own
        (tmp_path / f"log-{run}").mkdir()
    with service("indexer", env, "--data-dir", str(tmp_path / "first"), log_dir=tmp_path / "log-first") as first:
        asyncio.run(publish(env, SAMPLE, only=chunks[0]))
        watermark_reaches(env, len(chunks[0]))  # up and indexing
        publisher.start()
        watermark_reaches(env, total // 3)
        first.send_signal(signal.SIGKILL)
        first.wait(10)
    at_kill = int(str(asyncio.run(redis_dump(env))[WATERMARK]))
    publisher.join(120)
    with service("indexer", env, "--data-dir", str(tmp_path / "second"), log_dir=tmp_path / "log-second"):
        watermark_reaches(env, total)
    got = asyncio.run(redis_dump(env, epochs=False))

    assert at_kill < total  # killed mid-stream
    assert len(want) > 100  # the sample indexes nodes, PVs and pod usage
    assert got == want
