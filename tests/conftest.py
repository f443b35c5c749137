from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, settings

from tests.servers import Cluster, Server, start_broker, start_redis, start_redis_cluster

settings.register_profile("ci", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", max_examples=200, deadline=None)
# make fuzz: many more mutated inputs (tests/fuzz), minutes rather than seconds
settings.register_profile(
    "fuzz", max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(scope="session")
def broker() -> Iterator[Server]:
    """A real Kafka-protocol broker (Tansu) on a free port, for the whole session."""
    server = start_broker()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def redis_server() -> Iterator[Server]:
    """A real redis-server on a free port, for the whole session."""
    server = start_redis()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def redis_cluster() -> Iterator[Cluster]:
    """A 3-node Redis Cluster on loopback, for the whole session."""
    cluster = start_redis_cluster()
    yield cluster
    cluster.stop()
