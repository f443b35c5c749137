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
        self.state_source = Gauge(
            "berth_state_source",
            "Where the service built its state at its last start or takeover: 1 for redis (the indexer's"
            " objects, then events from its watermarks) or history (every event from offset 0)",
            ["source"],
            registry=r,
        )
        self.state_objects = Gauge("berth_state_objects", "Objects read from Redis at the last start", registry=r)
        self.state_events = Gauge("berth_state_events", "Events replayed from the topic at the last start", registry=r)
        self.state_seconds = Gauge(
            "berth_state_seconds", "Seconds the last take-over took to build its state, from the assignment", registry=r
        )
        self.indexer_lag_events = Gauge(
            "berth_indexer_lag_events", "Events on the cluster-events topic the indexer has not written yet", registry=r
        )
        self.indexer_lag_seconds = Gauge(
            "berth_indexer_lag_seconds",
            "Age of the oldest cluster event the indexer has not written yet (0 when caught up)",
            registry=r,
        )

    def started(self, source: str, objects: int, events: int, seconds: float) -> None:
        """A start or takeover built the service's state (berth.adapters.runtime.bootstrap)."""
        for s in ("redis", "history"):
            self.state_source.labels(s).set(1 if s == source else 0)
        self.state_objects.set(objects)
        self.state_events.set(events)
        self.state_seconds.set(seconds)

    def plugin(self, plugin: str, point: str, seconds: float) -> None:
        self.plugin_seconds.labels(plugin, point).observe(seconds)
