"""Settings: small frozen groups, validated, read from the environment in one place (`from_env`).

Every variable is listed in ENV with its meaning; docs/settings.md and the compose/manifest tests
are checked against it. Secrets are wrapped in Secret, whose repr never shows the value.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from berth.core.errors import ConfigError
from berth.core.ports import BUFFER_STATUS, CLUSTER_EVENTS, DEAD_LETTER, DECISIONS


class Secret(str):
    """A string that prints as '***' (logs, reprs, errors); use str(s) or s.value to read it."""

    @property
    def value(self) -> str:
        return str.__str__(self)

    def __repr__(self) -> str:
        return "Secret('***')" if self.value else "Secret('')"

    def __str__(self) -> str:
        return self.value


NO_SECRET = Secret("")


_INSTANCE_ID = re.compile(r"(?!\.{1,2}$)[a-zA-Z0-9._-]{1,249}")  # Kafka's rule for group.instance.id


@dataclass(frozen=True)
class KafkaSettings:
    bootstrap_servers: str = "localhost:9092"
    client_id: str = "berth"
    security_protocol: str = "PLAINTEXT"  # PLAINTEXT | SSL | SASL_PLAINTEXT | SASL_SSL
    sasl_mechanism: str = ""  # PLAIN | SCRAM-SHA-256 | SCRAM-SHA-512
    sasl_username: str = ""
    sasl_password: Secret = NO_SECRET
    ssl_cafile: str = ""
    ssl_certfile: str = ""
    ssl_keyfile: str = ""
    session_timeout_ms: int = 10_000
    heartbeat_interval_ms: int = 1_000
    request_timeout_ms: int = 30_000
    fetch_max_wait_ms: int = 100
    group_instance_id: str = ""  # static group membership (KIP-345): a restart rejoins without a rebalance

    def validate(self) -> list[str]:
        out = []
        if self.group_instance_id and not _INSTANCE_ID.fullmatch(self.group_instance_id):
            out.append(
                "BERTH_KAFKA_GROUP_INSTANCE_ID: want at most 249 of a-z, A-Z, 0-9, '.', '_' and '-', "
                f"got {self.group_instance_id!r}"
            )
        # Apache Kafka's broker takes sessions within group.min/max.session.timeout.ms (6000 and
        # 1800000 unless the cluster changes them); its consumer wants heartbeats more often
        if not 6_000 <= self.session_timeout_ms <= 1_800_000:
            out.append(f"BERTH_KAFKA_SESSION_TIMEOUT_MS: must be 6000-1800000, got {self.session_timeout_ms}")
        if not 1 <= self.heartbeat_interval_ms < self.session_timeout_ms:
            out.append(
                "BERTH_KAFKA_HEARTBEAT_INTERVAL_MS: must be at least 1 and below the session timeout"
                f" ({self.session_timeout_ms}), got {self.heartbeat_interval_ms}"
            )
        if not 1 <= self.fetch_max_wait_ms <= 10_000:
            out.append(f"BERTH_KAFKA_FETCH_MAX_WAIT_MS: must be 1-10000, got {self.fetch_max_wait_ms}")
        if not self.bootstrap_servers:
            out.append("BERTH_KAFKA_BOOTSTRAP_SERVERS: is required")
        if self.security_protocol not in ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"):
            out.append(
                f"BERTH_KAFKA_SECURITY_PROTOCOL: want PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL, got {self.security_protocol!r}"
            )
        if self.security_protocol.startswith("SASL"):
            if self.sasl_mechanism not in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"):
                out.append(
                    f"BERTH_KAFKA_SASL_MECHANISM: want PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512, got {self.sasl_mechanism!r}"
                )
            if not self.sasl_username or not self.sasl_password:
                out.append("BERTH_KAFKA_SASL_USERNAME and BERTH_KAFKA_SASL_PASSWORD: are required with SASL")
        return out

    def client_kwargs(self) -> dict[str, Any]:
        """aiokafka keyword arguments for security."""
        kw: dict[str, Any] = {"security_protocol": self.security_protocol}
        if self.security_protocol.startswith("SASL"):
            kw.update(
                sasl_mechanism=self.sasl_mechanism,
                sasl_plain_username=self.sasl_username,
                sasl_plain_password=self.sasl_password.value,
            )
        if self.security_protocol.endswith("SSL"):
            import ssl

            ctx = ssl.create_default_context(cafile=self.ssl_cafile or None)
            if self.ssl_certfile:
                ctx.load_cert_chain(self.ssl_certfile, self.ssl_keyfile or None)
            kw["ssl_context"] = ctx
        return kw


@dataclass(frozen=True)
class TopicSettings:
    """The topic names; the defaults are the core's (berth.core.ports)."""

    cluster_events: str = CLUSTER_EVENTS
    decisions: str = DECISIONS
    buffer_status: str = BUFFER_STATUS
    dead_letter: str = DEAD_LETTER
    partitions: int = 1
    # "partition:offset,...": cluster-events below these offsets read as deleted by retention (for
    # brokers without DeleteRecords, such as the tests' Tansu); empty: everything the broker has
    retained_from: str = ""

    def validate(self) -> list[str]:
        out = [
            f"BERTH_TOPIC_{f.name.upper()}: is required"
            for f in fields(self)
            if f.name not in ("partitions", "retained_from") and not getattr(self, f.name)
        ]
        if self.partitions < 1:
            out.append(f"BERTH_TOPIC_PARTITIONS: must be at least 1, got {self.partitions}")
        try:
            self.retained()
        except ValueError:
            out.append(f"BERTH_TOPIC_RETAINED_FROM: want partition:offset,..., got {self.retained_from!r}")
        return out

    def retained(self) -> dict[int, int]:
        """BERTH_TOPIC_RETAINED_FROM as partition -> first offset kept."""
        out = {}
        for part in filter(None, (p.strip() for p in self.retained_from.split(","))):
            partition, offset = part.split(":")
            if int(partition) < 0 or int(offset) < 0:
                raise ValueError(part)
            out[int(partition)] = int(offset)
        return out


@dataclass(frozen=True)
class GroupSettings:
    indexer: str = "berth-indexer"
    scorer: str = "berth-scorer"
    buffer_controller: str = "berth-buffer-controller"

    def validate(self) -> list[str]:
        return [f"BERTH_GROUP_{f.name.upper()}: is required" for f in fields(self) if not getattr(self, f.name)]


@dataclass(frozen=True)
class RedisSettings:
    url: str = "redis://localhost:6379/0"
    password: Secret = NO_SECRET
    tls: bool = False
    ca_file: str = ""
    prefix: str = "berth:"
    cluster: bool = False  # a Redis Cluster: every key gets the prefix as its hash tag (one slot)
    # a running service's client retries a lost connection with backoff this long before it ends
    ride_out_seconds: int = 25

    @property
    def key_prefix(self) -> str:
        """What every key starts with. In a cluster the prefix is a hash tag, so that every Lua
        script touches one slot (unless the prefix already holds one)."""
        if not self.cluster or ("{" in self.prefix and "}" in self.prefix.split("{", 1)[1]):
            return self.prefix
        return "{" + self.prefix + "}"

    def validate(self) -> list[str]:
        out = []
        if self.cluster and self.url.startswith("unix://"):
            out.append("BERTH_REDIS_CLUSTER: a cluster is reached over TCP, not unix://")
        if not 1 <= self.ride_out_seconds <= 600:  # past ~2,000 s redis-py's backoff overflows
            out.append(f"BERTH_REDIS_RIDE_OUT_SECONDS: must be 1-600, got {self.ride_out_seconds}")
        if not self.url.startswith(("redis://", "rediss://", "unix://")):
            out.append(f"BERTH_REDIS_URL: want redis://, rediss:// or unix://, got {self.url!r}")
        if "@" in self.url.split("//", 1)[-1].split("/", 1)[0] and ":" in self.url.split("//", 1)[-1].split("@", 1)[0]:
            out.append("BERTH_REDIS_URL: put the password in BERTH_REDIS_PASSWORD, not in the URL")
        return out

    def client_kwargs(self) -> dict[str, Any]:
        kw: dict[str, Any] = {}
        if self.password:
            kw["password"] = self.password.value
        if self.tls or self.url.startswith("rediss://"):
            kw["ssl_ca_certs"] = self.ca_file or None
        return kw


@dataclass(frozen=True)
class ServiceSettings:
    http_port: int = 8080  # /healthz, /readyz, /metrics
    log_level: str = "INFO"
    scheduler_config: str = ""  # path to a KubeSchedulerConfiguration
    strict_config: bool = False  # plugins berth does not implement are errors, not warnings
    top_nodes: int = 10  # nodes listed per decision on the bus; 0 = all
    gc_thaw_every: int = 1_000_000  # events between full garbage collections (berth.adapters.runtime.collector)
    indexer_max_lag_seconds: int = 300  # the indexer's /readyz fails further behind the topic's end than this
    # the scorer's extender prioritize scores with these plugins (comma-separated); empty: those of
    # VolumeBinding and LoadAwareScheduling the profile scores with
    extender_score_plugins: str = ""

    @property
    def extender_plugins(self) -> tuple[str, ...]:
        text = self.extender_score_plugins.strip()
        return tuple(name.strip() for name in text.split(",")) if text else ()

    def validate(self) -> list[str]:
        out = []
        if not 0 <= self.http_port <= 65535:
            out.append(f"BERTH_HTTP_PORT: must be 0-65535, got {self.http_port}")
        if self.log_level not in ("DEBUG", "INFO", "WARNING", "ERROR"):
            out.append(f"BERTH_LOG_LEVEL: want DEBUG, INFO, WARNING or ERROR, got {self.log_level!r}")
        if self.top_nodes < 0:
            out.append(f"BERTH_TOP_NODES: must be 0 or more, got {self.top_nodes}")
        if self.indexer_max_lag_seconds < 1:
            out.append(f"BERTH_INDEXER_MAX_LAG_SECONDS: must be at least 1, got {self.indexer_max_lag_seconds}")
        if self.gc_thaw_every < 1000:
            out.append(f"BERTH_GC_THAW_EVERY: must be 1000 or more, got {self.gc_thaw_every}")
        if not all(self.extender_plugins):
            out.append(
                "BERTH_EXTENDER_SCORE_PLUGINS: want plugin names separated by commas, "
                f"got {self.extender_score_plugins!r}"
            )
        return out


@dataclass(frozen=True)
class Settings:
    kafka: KafkaSettings = KafkaSettings()
    topics: TopicSettings = TopicSettings()
    groups: GroupSettings = GroupSettings()
    redis: RedisSettings = RedisSettings()
    service: ServiceSettings = ServiceSettings()


# Environment variable -> (group, field). The only place berth reads its environment from.
ENV: dict[str, tuple[str, str]] = {
    **{f"BERTH_KAFKA_{f.name.upper()}": ("kafka", f.name) for f in fields(KafkaSettings)},
    **{f"BERTH_TOPIC_{f.name.upper()}": ("topics", f.name) for f in fields(TopicSettings)},
    **{f"BERTH_GROUP_{f.name.upper()}": ("groups", f.name) for f in fields(GroupSettings)},
    **{f"BERTH_REDIS_{f.name.upper()}": ("redis", f.name) for f in fields(RedisSettings)},
    "BERTH_HTTP_PORT": ("service", "http_port"),
    "BERTH_LOG_LEVEL": ("service", "log_level"),
    "BERTH_SCHEDULER_CONFIG": ("service", "scheduler_config"),
    "BERTH_STRICT_CONFIG": ("service", "strict_config"),
    "BERTH_TOP_NODES": ("service", "top_nodes"),
    "BERTH_GC_THAW_EVERY": ("service", "gc_thaw_every"),
    "BERTH_INDEXER_MAX_LAG_SECONDS": ("service", "indexer_max_lag_seconds"),
    "BERTH_EXTENDER_SCORE_PLUGINS": ("service", "extender_score_plugins"),
}


def _coerce(name: str, kind: Any, text: str, problems: list[str]) -> Any:
    if kind in (int, "int"):
        try:
            return int(text)
        except ValueError:
            problems.append(f"{name}: want an integer, got {text!r}")
            return None
    if kind in (bool, "bool"):
        if text.lower() in ("1", "true", "yes", "on"):
            return True
        if text.lower() in ("0", "false", "no", "off", ""):
            return False
        problems.append(f"{name}: want true or false, got {text!r}")
        return None
    if kind in (Secret, "Secret"):
        return Secret(text)
    return text


def from_env(env: Mapping[str, str], **overrides: Any) -> Settings:
    """Settings from environment variables (then `overrides`, e.g. from flags). Raises ConfigError
    listing every problem; unknown BERTH_* variables are problems too (typos should not pass)."""
    problems: list[str] = []
    values: dict[str, dict[str, Any]] = {g: {} for g in ("kafka", "topics", "groups", "redis", "service")}
    defaults = Settings()
    for name, text in env.items():
        if not name.startswith("BERTH_"):
            continue
        where = ENV.get(name)
        if where is None:
            problems.append(f"{name}: not a berth setting")
            continue
        group, attr = where
        kind = type(getattr(getattr(defaults, group), attr))
        value = _coerce(name, kind, text, problems)
        if value is not None:
            values[group][attr] = value
    for key, value in overrides.items():
        group, _, attr = key.partition("__")
        values[group][attr] = value
    built = Settings(
        kafka=KafkaSettings(**values["kafka"]),
        topics=TopicSettings(**values["topics"]),
        groups=GroupSettings(**values["groups"]),
        redis=RedisSettings(**values["redis"]),
        service=ServiceSettings(**values["service"]),
    )
    for part in (built.kafka, built.topics, built.groups, built.redis, built.service):
        problems += part.validate()
    if problems:
        raise ConfigError(problems)
    return built
