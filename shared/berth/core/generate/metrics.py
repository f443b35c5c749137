"""Koordinator NodeMetrics: a per-node utilisation that wanders around a seeded base level.

The generator does not know where berth places pods, so usage is not derived from them: each node
gets a base level (a few hot, most cool, optionally some cold) and reports drift around it.
"""

from __future__ import annotations

from collections import deque
from datetime import datetime
from typing import Any

from berth.core.generate.cluster import NodeInfo
from berth.core.generate.ids import Ids, cpu, mem_ki, rfc3339

API_VERSION = "slo.koordinator.sh/v1alpha1"
DURATIONS = ((300, "5m0s"), (600, "10m0s"), (1800, "30m0s"))
_PERCENTILES = (("p50", 0.50, 1.0), ("p90", 0.90, 1.05), ("p95", 0.95, 1.08), ("p99", 0.99, 1.15))

# (cpu low, cpu high, memory low, memory high) fractions of allocatable
HOT = (0.70, 0.85, 0.60, 0.85)
COOL = (0.15, 0.45, 0.30, 0.60)
COLD = (0.01, 0.04, 0.05, 0.10)


class NodeLoad:
    """One node's utilisation: a mean-reverting walk, with the history kept for the percentiles."""

    def __init__(
        self, node: NodeInfo, band: tuple[float, float, float, float], ids: Ids, samples: int, interval: int
    ) -> None:
        rng = ids.rng
        self.node = node
        self.cpu_alloc, self.mem_alloc = node.cpu_milli, node.memory_bytes
        self.band = band
        self.base = (rng.uniform(band[0], band[1]), rng.uniform(band[2], band[3]))
        self.level = self.base
        self.history: deque[tuple[float, float]] = deque(maxlen=samples)
        self.uid = ids.uid()
        self.phase = rng.randrange(0, interval)  # seconds into each report interval when this node reports
        self.system = (rng.uniform(0.01, 0.03), rng.uniform(0.03, 0.06))
        for _ in range(samples):  # the node has been up for a while: fill the aggregation windows
            self.step(ids)

    def step(self, ids: Ids) -> None:
        """One report interval later: pull toward the base, plus noise, clamped inside the band's reach."""
        rng = ids.rng
        c, m = self.level
        c += 0.3 * (self.base[0] - c) + rng.gauss(0, 0.03)
        m += 0.2 * (self.base[1] - m) + rng.gauss(0, 0.01)
        lo = self.band[0] / 2
        self.level = (min(max(c, lo), 0.98), min(max(m, self.band[2] / 2), 0.98))
        self.history.append(self.level)


def plan_loads(
    nodes: list[NodeInfo], hot_fraction: float, cold: int, ids: Ids, interval: int, aggregated: bool
) -> list[NodeLoad]:
    """Cold nodes first (drawn without replacement), then each other node hot with `hot_fraction`."""
    samples = max(1, DURATIONS[-1][0] // interval) if aggregated else 1
    cold_set = set(ids.rng.sample(range(len(nodes)), cold)) if cold else set()
    out = []
    for n in nodes:
        band = COLD if n.index in cold_set else HOT if ids.rng.random() < hot_fraction else COOL
        out.append(NodeLoad(n, band, ids, samples, interval))
    return out


def _usage(load: NodeLoad, fractions: tuple[float, float]) -> dict[str, Any]:
    return {
        "resources": {
            "cpu": cpu(max(1, round(load.cpu_alloc * fractions[0]))),
            "memory": mem_ki(round(load.mem_alloc * fractions[1])),
        }
    }


def _aggregated(load: NodeLoad, interval: int) -> list[dict[str, Any]]:
    out = []
    history = list(load.history)
    for seconds, text in DURATIONS:
        window = history[-max(1, seconds // interval) :]
        usage: dict[str, Any] = {}
        avg = (sum(c for c, _ in window) / len(window), sum(m for _, m in window) / len(window))
        usage["avg"] = _usage(load, avg)
        cpus = sorted(c for c, _ in window)
        mems = sorted(m for _, m in window)
        for name, q, spike in _PERCENTILES:
            i = min(len(window) - 1, int(q * len(window)))
            usage[name] = _usage(load, (min(cpus[i] * spike, 1.0), min(mems[i] * min(spike, 1.02), 1.0)))
        out.append({"duration": text, "usage": usage})
    return out


def node_metric(load: NodeLoad, update: datetime, interval: int, aggregated: bool) -> dict[str, Any]:
    """The NodeMetric as koordlet last reported it (no podsMetric: the generator places no pods)."""
    policy: dict[str, Any] = {"aggregateDurationSeconds": 300, "reportIntervalSeconds": interval}
    status_metric: dict[str, Any] = {
        "nodeUsage": _usage(load, load.level),
        "systemUsage": _usage(load, load.system),
    }
    if aggregated:
        policy["nodeAggregatePolicy"] = {"durations": [text for _, text in DURATIONS]}
        status_metric["aggregatedNodeUsages"] = _aggregated(load, interval)
    return {
        "apiVersion": API_VERSION,
        "kind": "NodeMetric",
        "metadata": {"name": load.node.name, "uid": load.uid, "creationTimestamp": rfc3339(load.node.created)},
        "spec": {"metricCollectPolicy": policy},
        "status": {"updateTime": rfc3339(update), "nodeMetric": status_metric, "podsMetric": []},
    }
