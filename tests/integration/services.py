"""Running berth's services as real processes against the session's broker and redis-server."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import msgspec

from berth.adapters.bus.kafka import KafkaBus
from berth.core.ports import Message
from tests.servers import Cluster, Server

BERTH = str(Path(sys.executable).parent / "berth")


def base_env(kafka: str, redis: str) -> dict[str, str]:
    """This process's environment without its BERTH_ settings, pointed at a broker and a Redis
    (host:port each), with the HTTP port left to the system."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("BERTH_")}
    env.update(BERTH_KAFKA_BOOTSTRAP_SERVERS=kafka, BERTH_REDIS_URL=f"redis://{redis}/0", BERTH_HTTP_PORT="0")
    return env


def isolated_env(broker: Server, redis: Server | Cluster, **extra: str) -> dict[str, str]:
    """Settings for one test: its own topics (created now, with one partition each: the broker would
    otherwise auto-create them with four on first use), groups and key prefix."""
    tag = uuid.uuid4().hex[:8]
    env = base_env(broker.address, redis.address)
    env.update(
        BERTH_KAFKA_SESSION_TIMEOUT_MS="6000",
        BERTH_REDIS_PREFIX=f"t{tag}:",
        BERTH_TOPIC_CLUSTER_EVENTS=f"t{tag}.cluster-events",
        BERTH_TOPIC_DECISIONS=f"t{tag}.decisions",
        BERTH_TOPIC_BUFFER_STATUS=f"t{tag}.buffer-status",
        BERTH_TOPIC_DEAD_LETTER=f"t{tag}.dead-letter",
        BERTH_GROUP_INDEXER=f"t{tag}-indexer",
        BERTH_GROUP_SCORER=f"t{tag}-scorer",
        BERTH_GROUP_BUFFER_CONTROLLER=f"t{tag}-buffer-controller",
        BERTH_TOP_NODES="0",
        BERTH_LOG_LEVEL="WARNING",
    )
    env.update(extra)
    asyncio.run(_create_topics(env))
    return env


async def _create_topics(env: dict[str, str]) -> None:
    bus = KafkaBus(env["BERTH_KAFKA_BOOTSTRAP_SERVERS"], client_id="test-setup")
    await bus.start()
    names = [
        env[k]
        for k in (
            "BERTH_TOPIC_CLUSTER_EVENTS",
            "BERTH_TOPIC_DECISIONS",
            "BERTH_TOPIC_BUFFER_STATUS",
            "BERTH_TOPIC_DEAD_LETTER",
        )
    ]
    await bus.create_topics(dict.fromkeys(names, 1))
    await bus.stop()


@contextmanager
def service(name: str, env: dict[str, str], *args: str, log_dir: Path) -> Iterator[subprocess.Popen[bytes]]:
    log = open(log_dir / f"{name}.log", "wb")  # noqa: SIM115 - closed below
    proc = subprocess.Popen([BERTH, name, *args], env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        yield proc
    finally:
        stop(proc)
        log.close()


def stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM, then SIGKILL if it has not gone within 15 s."""
    proc.terminate()
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(5)


def run_berth(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([BERTH, *args], env=env, capture_output=True, text=True, check=False, timeout=300)


async def collect(env: dict[str, str], topic: str, want: int, timeout: float, grace: float = 3.0) -> list[Message]:
    """Read a topic from the start until `want` messages arrived (then `grace` seconds more, to
    catch any that should not be there) or the time is up."""
    bus = KafkaBus(env["BERTH_KAFKA_BOOTSTRAP_SERVERS"], client_id="test-collector", session_timeout_ms=6000)
    await bus.start()
    consumer = bus.consumer([topic], f"collector-{uuid.uuid4().hex[:6]}")
    await consumer.start()
    got: list[Message] = []
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    try:
        while len(got) < want and loop.time() < deadline:
            got += await consumer.getmany(1000, timeout=0.5)
        settle = loop.time() + grace
        while loop.time() < settle:
            got += await consumer.getmany(1000, timeout=0.5)
    finally:
        await consumer.stop()
        await bus.stop()
    return got


def decode(messages: list[Message]) -> list[dict[str, object]]:
    return [msgspec.json.decode(m.value) for m in messages]
