"""A scorer and a buffer controller that restart build their state from the indexer's Redis state and
the events after its watermarks, not from the topic's history: real broker (Tansu) and redis-server.

The history before the watermarks is made unavailable by configuration (BERTH_TOPIC_RETAINED_FROM:
reads below it see nothing, as after retention): Tansu closes the connection on DeleteRecords.
A service that still read history from offset 0 would miss the first half and decide otherwise."""

from __future__ import annotations

import asyncio
import signal
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from berth.adapters.bus.kafka import KafkaBus
from berth.adapters.files.eventlog import read_events
from berth.adapters.runtime.connect import redis_client
from berth.settings import from_env
from tests.integration.services import collect, decode, isolated_env, service
from tests.integration.test_equivalence import embedded
from tests.integration.test_indexer_restart import WATERMARK
from tests.integration.test_streaming import publish
from tests.servers import Cluster, Server, free_port

SAMPLE = str(Path(__file__).parents[2] / "examples" / "small.jsonl.gz")
pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]


async def committed(env: dict[str, str], group: str) -> int:
    bus = KafkaBus(env["BERTH_KAFKA_BOOTSTRAP_SERVERS"], client_id="test-offsets")
    return (await bus.committed_offsets(env["BERTH_TOPIC_CLUSTER_EVENTS"], group)).get(0, 0)


def committed_reaches(env: dict[str, str], group: str, offset: int, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while (got := asyncio.run(committed(env, group))) < offset:
        assert time.monotonic() < deadline, f"{group} committed {got}, not {offset}"
        time.sleep(0.2)


def outputs(env: dict[str, str], decisions: int, statuses: int) -> tuple[list[object], list[object]]:
    got = decode(asyncio.run(collect(env, env["BERTH_TOPIC_DECISIONS"], decisions, 180)))
    return got, decode(asyncio.run(collect(env, env["BERTH_TOPIC_BUFFER_STATUS"], statuses, 60)))


def started_from(log: Path) -> list[str]:
    text = log.read_text()
    return [s for s in ("redis", "history") if f"state built from {s}" in text]


def http(port: int, route: str) -> str:
    """The body of a GET, whatever its status (/readyz answers 503 while catching up)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{route}", timeout=5) as r:
            return str(r.read().decode())
    except urllib.error.HTTPError as e:
        return str(e.read().decode())


def started(*logs: Path, timeout: float = 60) -> None:
    """Wait until each service has built its state (it joined its group and took its partition)."""
    deadline = time.monotonic() + timeout
    while not all(log.exists() and started_from(log) for log in logs):
        assert time.monotonic() < deadline, "a service did not build its state"
        time.sleep(0.2)


def test_restarted_scorer_and_buffer_controller_start_from_redis_and_decide_as_an_uninterrupted_run(
    broker: Server, redis_server: Server, tmp_path: Path
) -> None:
    restarted_after_half(isolated_env(broker, redis_server, BERTH_LOG_LEVEL="INFO"), tmp_path)


def test_the_same_on_a_redis_cluster(broker: Server, redis_cluster: Cluster, tmp_path: Path) -> None:
    """Three masters on loopback; every key berth writes carries the prefix as its hash tag."""
    env = isolated_env(broker, redis_cluster, BERTH_LOG_LEVEL="INFO", BERTH_REDIS_CLUSTER="1")
    restarted_after_half(env, tmp_path)
    assert asyncio.run(_slots(env)) == 1


async def _slots(env: dict[str, str]) -> int:
    """How many slots hold the run's keys (all of them on every node)."""
    settings = from_env(env)
    client = redis_client(settings, patiently=False)
    slots = set()
    try:
        async for key in client.scan_iter(f"{settings.redis.key_prefix}*", count=1000):
            slots.add(await client.cluster_keyslot(key))
    finally:
        await client.aclose()
    return len(slots)


def restarted_after_half(env: dict[str, str], tmp_path: Path) -> None:
    want_decisions, want_statuses = embedded(SAMPLE)
    total = sum(1 for _ in read_events(SAMPLE))
    half = total // 2
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir(), second.mkdir()
    with service("indexer", env, "--data-dir", str(tmp_path / "faust"), log_dir=tmp_path):
        with service("scorer", env, log_dir=first), service("buffer-controller", env, log_dir=first):
            asyncio.run(publish(env, SAMPLE, only=range(half)))
            watermark_reaches(env, half)
            committed_reaches(env, env["BERTH_GROUP_SCORER"], half)
            committed_reaches(env, env["BERTH_GROUP_BUFFER_CONTROLLER"], half)
        later = {**env, "BERTH_TOPIC_RETAINED_FROM": f"0:{half}"}
        port = free_port()
        with (
            service("scorer", {**later, "BERTH_HTTP_PORT": str(port)}, log_dir=second),
            service("buffer-controller", later, log_dir=second),
        ):
            # the rest of the log once they have started: a service that starts after the indexer
            # went past its group's commit decides the pods it missed at once (see docs/services.md)
            started(second / "scorer.log", second / "buffer-controller.log")
            readyz, metrics = http(port, "/readyz"), http(port, "/metrics")
            asyncio.run(publish(env, SAMPLE, only=range(half, total)))
            decisions, statuses = outputs(env, len(want_decisions), len(want_statuses))
    assert started_from(first / "scorer.log") == ["history"]
    assert started_from(second / "scorer.log") == ["redis"]
    assert "state: from redis (" in readyz
    assert 'berth_state_source{source="redis"} 1.0' in metrics
    assert 'berth_state_source{source="history"} 0.0' in metrics
    assert started_from(second / "buffer-controller.log") == ["redis"]
    assert len(decisions) == len(want_decisions)
    assert decisions == want_decisions
    assert statuses == want_statuses


def test_an_indexer_killed_mid_batch_loses_nothing_while_a_scorer_starts_from_its_redis_state(
    broker: Server, redis_server: Server, tmp_path: Path
) -> None:
    """The indexer is killed mid-stream (most likely with a batch in flight); a scorer restarts while
    it is down, from what Redis has; the indexer comes back, and nothing is lost or decided twice."""
    want_decisions, want_statuses = embedded(SAMPLE)
    total = sum(1 for _ in read_events(SAMPLE))
    env = isolated_env(broker, redis_server, BERTH_LOG_LEVEL="INFO")
    chunks = [range(i, min(i + 40, total)) for i in range(0, total, 40)]
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir(), second.mkdir()

    def paced(todo: list[range], pause: float = 0.1) -> None:
        for c in todo:
            asyncio.run(publish(env, SAMPLE, only=c))
            time.sleep(pause)

    third = 2 * len(chunks) // 3
    publisher = threading.Thread(target=paced, args=(chunks[1:third], 0.3))
    with service("buffer-controller", env, log_dir=first):
        with service("scorer", env, log_dir=first):
            with service("indexer", env, "--data-dir", str(tmp_path / "a"), log_dir=first) as indexer:
                asyncio.run(publish(env, SAMPLE, only=chunks[0]))
                watermark_reaches(env, len(chunks[0]))
                publisher.start()
                watermark_reaches(env, total // 4)
                indexer.send_signal(signal.SIGKILL)
                indexer.wait(10)
            publisher.join(120)
            at_kill = int(str(asyncio.run(_watermark(env))))
            committed_reaches(env, env["BERTH_GROUP_SCORER"], chunks[third - 1].stop)
        later = {**env, "BERTH_TOPIC_RETAINED_FROM": f"0:{at_kill}"}
        with service("scorer", later, log_dir=second):  # starts while the indexer is down
            time.sleep(8)  # it joins its group and builds its state while the indexer is away
            with service("indexer", later, "--data-dir", str(tmp_path / "b"), log_dir=second):
                paced(chunks[third:])
                decisions, statuses = outputs(env, len(want_decisions), len(want_statuses))
    assert at_kill < chunks[third - 1].stop  # killed mid-stream, behind the scorer
    assert started_from(second / "scorer.log") == ["redis"]
    assert len(decisions) == len(want_decisions)
    assert decisions == want_decisions
    assert statuses == want_statuses


async def _watermark(env: dict[str, str]) -> str:
    settings = from_env(env)
    client = redis_client(settings, patiently=False)
    try:
        return str(int(await client.get(settings.redis.key_prefix + WATERMARK) or 0))
    finally:
        await client.aclose()


def watermark_reaches(env: dict[str, str], offset: int, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while (got := int(asyncio.run(_watermark(env)))) < offset:
        assert time.monotonic() < deadline, f"watermark {got} did not reach {offset}"
        time.sleep(0.1)
