"""A service whose broker or Redis cannot be reached says so in one line and exits 1 (so that
Kubernetes restarts it with backoff), with no traceback. Real servers where one is reachable."""

from __future__ import annotations

import pytest

from tests.integration.services import base_env, run_berth
from tests.servers import Server, free_port

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


def env_for(kafka: str, redis: str) -> dict[str, str]:
    # not isolated_env: it creates topics, which a dead broker cannot
    env = base_env(kafka, redis)
    env.update(BERTH_KAFKA_REQUEST_TIMEOUT_MS="5000")
    return env


@pytest.mark.parametrize(
    ("service", "down", "want"),
    [
        ("indexer", "redis", "berth indexer: cannot go on: Redis: Error 111 connecting to 127.0.0.1:"),
        ("scorer", "redis", "berth scorer: cannot go on: Redis: Error 111 connecting to 127.0.0.1:"),
        ("indexer", "kafka", "berth indexer: cannot go on: Kafka: KafkaConnectionError: Unable to bootstrap from"),
        ("scorer", "kafka", "berth scorer: cannot go on: Kafka: KafkaConnectionError: Unable to bootstrap from"),
        (
            "buffer-controller",
            "kafka",
            "berth buffer-controller: cannot go on: Kafka: KafkaConnectionError: Unable to bootstrap from",
        ),
    ],
)
def test_a_service_that_cannot_reach_kafka_or_redis_says_so_in_one_line(
    broker: Server, redis_server: Server, service: str, down: str, want: str
) -> None:
    nowhere = f"127.0.0.1:{free_port()}"
    kafka = nowhere if down == "kafka" else broker.address
    redis = nowhere if down == "redis" else redis_server.address
    out = run_berth(env_for(kafka, redis), service)
    assert out.returncode == 1, out.stderr
    assert "Traceback" not in out.stderr + out.stdout
    assert out.stderr.strip().splitlines()[-1].startswith(want), out.stderr
