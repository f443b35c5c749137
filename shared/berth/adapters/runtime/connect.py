"""Building the real adapters from settings, and what every stream service does at start."""

from __future__ import annotations

from typing import Any, cast

from aiokafka.errors import KafkaError
from redis.asyncio import Redis
from redis.asyncio.cluster import RedisCluster
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialBackoff
from redis.exceptions import RedisError

from berth.adapters.bus.kafka import KafkaBus
from berth.adapters.store.redis import RedisStore
from berth.adapters.store.redisindex import RedisIndex
from berth.settings import Settings

READY_LAG = 1000  # a service is ready once fewer messages than this are left to consume


def kafka_bus(settings: Settings, service: str) -> KafkaBus:
    k = settings.kafka
    return KafkaBus(
        k.bootstrap_servers,
        client_id=f"{k.client_id}-{service}",
        security=k.client_kwargs(),
        session_timeout_ms=k.session_timeout_ms,
        heartbeat_interval_ms=k.heartbeat_interval_ms,
        request_timeout_ms=k.request_timeout_ms,
        fetch_max_wait_ms=k.fetch_max_wait_ms,
        retained={settings.topics.cluster_events: settings.topics.retained()},
        group_instance_id=k.group_instance_id,
    )


def patient(seconds: int) -> dict[str, Any]:
    """A running service's Redis client rides out a Redis restart or failover: a command that fails
    to connect, or loses its connection, is retried with backoff (0.2 s doubling to 2 s) until the
    waits add up to `seconds` (BERTH_REDIS_RIDE_OUT_SECONDS), then the error ends the service. Its
    commands are idempotent, so a retried one that had gone through is harmless."""
    backoff = ExponentialBackoff(cap=2.0, base=0.1)
    retries, waited = 0, 0.0
    while waited < seconds:
        retries += 1
        waited += backoff.compute(retries)
    return {"retry": Retry(backoff, retries=retries)}


def redis_store(settings: Settings) -> RedisStore:
    return RedisStore(redis_client(settings), settings.redis.key_prefix)


def redis_index(settings: Settings) -> RedisIndex:
    return RedisIndex(redis_client(settings), settings.redis.key_prefix)


def redis_client(settings: Settings, patiently: bool = True) -> Redis:
    """A client of the Redis the settings name: a RedisCluster with BERTH_REDIS_CLUSTER (it offers
    the same commands; berth's keys share one hash tag there, see RedisSettings.key_prefix)."""
    r = settings.redis
    more = patient(r.ride_out_seconds) if patiently else {}
    if r.cluster:
        client: Any = RedisCluster.from_url(r.url, **r.client_kwargs(), **more)
        return cast(Redis, client)
    return Redis.from_url(r.url, **r.client_kwargs(), **more)


async def check_redis(settings: Settings) -> None:
    """Fail fast, before a service starts its workers, when Redis cannot be reached."""
    client = redis_client(settings, patiently=False)
    try:
        await client.ping()
    finally:
        await client.aclose()


def unreachable(e: BaseException) -> str | None:
    """One line for a broker or Redis that cannot be reached (or refuses us), else None."""
    if isinstance(e, RedisError):
        return f"Redis: {e}"
    if isinstance(e, KafkaError):
        return f"Kafka: {e}"
    return None


def topics_of(settings: Settings) -> dict[str, int]:
    """Every topic berth uses, with its partition count."""
    t = settings.topics
    return {t.cluster_events: t.partitions, t.decisions: t.partitions, t.buffer_status: t.partitions, t.dead_letter: 1}
