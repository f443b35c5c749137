"""DefaultPreemption at scale: 5,000 nodes, each full of ten bound pods (50,000), of priorities 0..9;
a pod of priority 1,000 that fits nowhere, so every node is a potential node and the dry run
(kube's defaults: 10% of the nodes, at least 100, here 500 candidates) looks for victims.

Prints p50/p99 of one preempting decision with berth's default profile (the pod is not carried
out, so every decision sees the same cluster). Target: p99 <= 50 ms. Figures only, never assertions.
"""

from __future__ import annotations

import random
import time
from datetime import UTC, datetime

from bench.util import ms, one_core, percentile
from berth.core.config import parse_config
from berth.core.model import Node, Pod
from berth.core.scheduler import Scheduler
from berth.core.state import ClusterState

NODES = 5_000
PER_NODE = 10
DECISIONS = 20
GI = 2**30
NOW = datetime(2026, 11, 1, 12, tzinfo=UTC)


def build(rng: random.Random) -> Scheduler:
    state = ClusterState()
    scheduler = Scheduler(parse_config(None).build(state), top_nodes=10)
    for i in range(NODES):
        name = f"node-{i:05d}"
        state.apply(
            Node(
                name=name,
                labels={"kubernetes.io/hostname": name},
                allocatable={"cpu": 4_000, "memory": 16 * GI, "pods": 110},
            )
        )
        for k in range(PER_NODE):
            state.apply(
                Pod(namespace="bench", name=f"p-{i}-{k}", uid=f"p-{i}-{k}", node_name=name, phase="Running",
                    priority=rng.randrange(10), requests={"cpu": 400, "memory": GI})
            )  # fmt: skip
    return scheduler


def run() -> None:
    print(f"preemption: {one_core()}")
    rng = random.Random(17)
    t = time.perf_counter()
    scheduler = build(rng)
    print(f"  {NODES} nodes, {NODES * PER_NODE} bound pods; setup {time.perf_counter() - t:.1f} s")
    times: list[float] = []
    nominated = 0
    for k in range(DECISIONS):
        pod = Pod(namespace="bench", name=f"urgent-{k}", uid=f"urgent-{k}", priority=1_000,
                  requests={"cpu": 1_000, "memory": 2 * GI})  # fmt: skip
        t = time.perf_counter()
        outcome = scheduler.decide(pod, NOW)
        times.append(time.perf_counter() - t)
        nominated += outcome.post_filter is not None and bool(outcome.post_filter.nominated_node)
    print(
        f"  one preempting decision: p50 {ms(percentile(times, 50))}, p99 {ms(percentile(times, 99))}"
        f" ({nominated}/{DECISIONS} nominated a node; target p99 <= 50 ms)"
    )
