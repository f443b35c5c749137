"""LoadAwareScheduling at scale: 5,000 nodes, 50,000 assigned pods, NodeMetrics for all.

Prints p50/p99 of one decision (pre_filter + filter + score over every node,
then the decided pod reserved on its node, as the scheduler loop does), and
the cost of applying one NodeMetric update. Figures only, never assertions.
"""

from __future__ import annotations

import json
import random
import statistics
import time
from datetime import UTC, datetime, timedelta

import numpy as np

from berth.core.api.core.model import Node, Pod, PodCondition
from berth.core.api.koordinator import wire as wl
from berth.core.api.koordinator.model import NodeMetric, PodMetric
from berth.core.cache.state import ClusterState, Reservation
from berth.core.framework.cycle import Cycle
from berth.core.plugins.loadawarescheduling import LoadAwareScheduling
from berth.core.plugins.loadawarescheduling.args import parse_args

NODES = 5_000
PODS_PER_NODE = 10
DECISIONS = 400
METRIC_UPDATES = 400
NOW = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
GI = 2**30
MIN = 60 * 10**9
ARGS = {  # the user manual's example, plus forced estimation
    "usageThresholds": {"cpu": 75, "memory": 85},
    "prodUsageThresholds": {"cpu": 55, "memory": 65},
    "scoreAccordingProdUsage": True,
    "estimatedScalingFactors": {"cpu": 80, "memory": 70},
    "estimatedSecondsAfterPodScheduled": 120,
    "aggregated": {
        "usageThresholds": {"cpu": 65, "memory": 75},
        "usageAggregationType": "p99",
        "scoreAggregationType": "p99",
    },
}
CUSTOM = json.dumps({"usageThresholds": {"cpu": 80, "memory": 90}})


def _pod(name: str, node: str, rng: random.Random, age_s: int | None) -> Pod:
    cpu = rng.choice((250, 500, 1000, 2000))
    mem = rng.choice((1, 2, 4)) * GI
    conds = () if age_s is None else (PodCondition("PodScheduled", "True", NOW - timedelta(seconds=age_s)),)
    return Pod(
        namespace="bench", name=name, uid=name, node_name=node, phase="Running",
        priority=rng.choice((9500, 5500, None)), requests={"cpu": cpu, "memory": mem}, conditions=conds,
    )  # fmt: skip


def _metric(node: str, pods: list[Pod], rng: random.Random, update: datetime) -> NodeMetric:
    cpu = rng.randint(2_000, 20_000)
    mem = rng.randint(8, 80) * GI
    p99 = wl.Usage(resources={"cpu": f"{cpu + 2000}m", "memory": str(mem + GI)})
    agg = wl.AggregatedNodeUsage(duration="5m0s", usage=wl.AggregatedUsages(p99=p99))
    reported = tuple(
        PodMetric("bench", p.name, "koord-prod" if p.priority == 9500 else "koord-batch", {"cpu": 300, "memory": GI})
        for p in pods
        if p.conditions
    )
    return NodeMetric(
        name=node, update_time=update, report_interval_seconds=60, has_node_metric=True,
        node_usage={"cpu": cpu, "memory": mem}, system_usage={"cpu": 500, "memory": GI},
        aggregated=(agg,), pods=reported,
    )  # fmt: skip


def build(rng: random.Random) -> tuple[LoadAwareScheduling, ClusterState, dict[str, list[Pod]]]:
    plugin = LoadAwareScheduling(parse_args(ARGS))
    state = ClusterState(extensions=[plugin.store])
    by_node: dict[str, list[Pod]] = {}
    for i in range(NODES):
        name = f"node-{i:05d}"
        ann = {"scheduling.koordinator.sh/usage-thresholds": CUSTOM} if i % 20 == 0 else {}
        state.apply(Node(name=name, annotations=ann, allocatable={"cpu": 32_000, "memory": 128 * GI, "pods": 110}))
        pods = [
            _pod(f"p-{i}-{j}", name, rng, rng.choice((None, 30, 3600, 7200, 86400)) if j < 3 else 86400)
            for j in range(PODS_PER_NODE)
        ]
        for p in pods:
            state.apply(p)
        by_node[name] = pods
        state.apply(_metric(name, pods, rng, NOW - timedelta(seconds=rng.randint(0, 200))))
    return plugin, state, by_node


def decide(plugin: LoadAwareScheduling, state: ClusterState, pod: Pod) -> str | None:
    cycle = Cycle(pod=pod, state=state, now=NOW)
    plugin.pre_filter(cycle)
    feasible = state.nodes.valid.copy()
    for f in plugin.filter(cycle):
        feasible &= ~f.mask
    scores = plugin.score(cycle, feasible)
    if not feasible.any():
        return None
    best = int(np.argmax(np.where(feasible, scores, -1)))
    return state.nodes.names[best]


def _pct(xs: list[float], q: float) -> float:
    return sorted(xs)[min(len(xs) - 1, int(q * len(xs)))] * 1000


def run() -> None:
    rng = random.Random(7)
    t = time.perf_counter()
    plugin, state, by_node = build(rng)
    setup = time.perf_counter() - t
    print(f"loadaware: {NODES} nodes, {NODES * PODS_PER_NODE} assigned pods, NodeMetrics for all; setup {setup:.1f} s")

    decisions, reserves = [], []
    placed = 0
    for k in range(DECISIONS):
        pod = Pod(namespace="new", name=f"in-{k}", requests={"cpu": rng.choice((500, 1000, 4000)), "memory": 2 * GI})
        t = time.perf_counter()
        node = decide(plugin, state, pod)
        decisions.append(time.perf_counter() - t)
        if node is not None:
            t = time.perf_counter()
            state.reserve(Reservation(pod=pod, node=node))
            reserves.append(time.perf_counter() - t)
            placed += 1
    print(
        f"  decision (pre_filter+filter+score, {NODES} nodes): p50 {_pct(decisions, 0.5):.2f} ms, "
        f"p99 {_pct(decisions, 0.99):.2f} ms, mean {statistics.fmean(decisions) * 1000:.2f} ms ({placed} placed)"
    )
    print(
        f"  reserve of the decided pod (store update): p50 {_pct(reserves, 0.5):.3f} ms, p99 {_pct(reserves, 0.99):.3f} ms"
    )

    updates = []
    names = list(by_node)
    for k in range(METRIC_UPDATES):
        name = rng.choice(names)
        m = _metric(name, by_node[name], rng, NOW - timedelta(seconds=k % 30))
        m = NodeMetric(**{**{f: getattr(m, f) for f in m.__struct_fields__}, "resource_version": str(k + 1)})
        t = time.perf_counter()
        state.apply(m)
        updates.append(time.perf_counter() - t)
    print(
        f"  NodeMetric update ({PODS_PER_NODE} pods on the node): p50 {_pct(updates, 0.5):.3f} ms, "
        f"p99 {_pct(updates, 0.99):.3f} ms"
    )


if __name__ == "__main__":
    run()
