"""Prometheus metrics every service exposes on /metrics. Names follow upstream where one exists."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)


class Metrics:
    """One registry per service process (tests make their own)."""

    def __init__(self, service: str, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        self.service = service
        r = self.registry
        self.events = Counter("berth_events", "Cluster events handled", ["service"], registry=r)
        self.dead_letters = Counter(
            "berth_dead_letters", "Messages sent to the dead-letter topic", ["service"], registry=r
        )
        self.lag = Gauge("berth_consumer_lag", "Messages not yet consumed", ["service"], registry=r)
        self.decisions = Counter("berth_decisions", "Decisions emitted", ["status"], registry=r)
        self.decision_seconds = Histogram(
            "berth_decision_duration_seconds", "Time to decide one pod", buckets=BUCKETS, registry=r
        )
        self.plugin_seconds = Histogram(
            "berth_plugin_execution_duration_seconds",
            "Duration of one plugin at one extension point (as kube-scheduler's plugin_execution_duration_seconds)",
            ["plugin", "extension_point"],
            buckets=BUCKETS,
            registry=r,
        )
        self.reservations = Counter("berth_reservations", "Reservations tried in the store", ["result"], registry=r)
        self.redis_lost = Counter(
            "berth_redis_data_lost",
            "Times Redis was found to have lost the service's state (which it then rebuilt from the topics)",
            ["service"],
            registry=r,
        )
        self.buffer_statuses = Counter("berth_buffer_statuses", "Buffer status changes emitted", registry=r)

    def plugin(self, plugin: str, point: str, seconds: float) -> None:
        self.plugin_seconds.labels(plugin, point).observe(seconds)
