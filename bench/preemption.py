"""DefaultPreemption at scale: 5,000 nodes in 10 zones, each full of ten bound pods (50,000), of
priorities 0..9, a quarter of them replicas of 500 workloads (25 replicas each) with required
hostname anti-affinity (StatefulSets) or a zone spread (Deployments); pods of priority 1,000 that
fit nowhere, so every node is a potential node and the dry run (kube's defaults: 10% of the nodes,
at least 100, here 500 candidates) looks for victims. The preemptors take turns: a plain pod, one
with a zone spread and one with hostname anti-affinity of their own (the filters keep passing as
pods leave, so the dry run goes by arithmetic); a few with required pod affinity (the dry run
proper, one node at a time) are timed apart.

Prints p50/p99 of one preempting decision with berth's default profile (the pod is not carried
out, so every decision sees the same cluster), after a first one that builds the plugins' pod
indexes and is printed apart. Target: p99 <= 50 ms. Figures only, never assertions.
"""

from __future__ import annotations

import random
import time
from datetime import UTC, datetime

from bench.util import ms, one_core, percentile, spread
from berth.core.api.core.model import Node, Pod, PodAffinity, PodAffinityTerm, SpreadConstraint
from berth.core.api.meta.selectors import LabelSelector
from berth.core.cache.state import ClusterState
from berth.core.config.kubeschedulerconfig import parse_config
from berth.core.scheduler.schedule_one import Scheduler

NODES = 5_000
ZONES = 10
PER_NODE = 10
WORKLOADS = 500  # every 4th pod: 250 anti-affine and 250 spread workloads of 25 replicas
DECISIONS = 21
AFFINE = 3  # preemptors with required pod affinity, timed apart
HOST, ZONE = "kubernetes.io/hostname", "topology.kubernetes.io/zone"
GI = 2**30
NOW = datetime(2026, 11, 1, 12, tzinfo=UTC)


def shaped(app: str, kind: str) -> dict[str, object]:
    """A pod's labels and its anti-affinity, spread or affinity (to pods of `app`)."""
    sel = LabelSelector((("app", app),))
    if kind == "anti":
        return {"labels": {"app": app}, "pod_affinity": PodAffinity(required_anti=(PodAffinityTerm(HOST, sel),))}
    if kind == "spread":
        return {"labels": {"app": app}, "spread": (SpreadConstraint(1, ZONE, "DoNotSchedule", sel),)}
    if kind == "affinity":
        return {"pod_affinity": PodAffinity(required=(PodAffinityTerm(ZONE, sel),))}
    return {}


def build(rng: random.Random) -> Scheduler:
    state = ClusterState()
    scheduler = Scheduler(parse_config(None).build(state), top_nodes=10)
    for i in range(NODES):
        name = f"node-{i:05d}"
        state.apply(
            Node(
                name=name,
                labels={HOST: name, ZONE: f"zone-{i % ZONES}"},
                allocatable={"cpu": 4_000, "memory": 16 * GI, "pods": 110},
            )
        )
        for k in range(PER_NODE):
            g = i * PER_NODE + k
            w = g // 4 % WORKLOADS  # replicas on one node belong to different workloads
            extra = shaped(f"w{w}", "anti" if w % 2 == 0 else "spread") if g % 4 == 0 else {}
            state.apply(
                Pod(namespace="bench", name=f"p-{i}-{k}", uid=f"p-{i}-{k}", node_name=name, phase="Running",
                    priority=rng.randrange(10), requests={"cpu": 400, "memory": GI}, **extra)  # type: ignore[arg-type]
            )  # fmt: skip
    return scheduler


def decide(scheduler: Scheduler, k: int, kind: str, app: str) -> tuple[float, float, bool]:
    """Wall and CPU seconds of one decision, and whether it nominated a node."""
    pod = Pod(namespace="bench", name=f"urgent-{k}", uid=f"urgent-{k}", priority=1_000,
              requests={"cpu": 1_000, "memory": 2 * GI}, **shaped(app, kind))  # type: ignore[arg-type]  # fmt: skip
    t, c = time.perf_counter(), time.thread_time()
    outcome = scheduler.decide(pod, NOW)
    took, cpu = time.perf_counter() - t, time.thread_time() - c
    return took, cpu, outcome.post_filter is not None and bool(outcome.post_filter.nominated_node)


def run() -> None:
    print(f"preemption: {one_core()}")
    rng = random.Random(17)
    t = time.perf_counter()
    scheduler = build(rng)
    print(
        f"  {NODES} nodes, {NODES * PER_NODE} bound pods ({NODES * PER_NODE // 4} in workloads);"
        f" setup {time.perf_counter() - t:.1f} s"
    )
    first, _, _ = decide(scheduler, -1, "", "urgent")  # builds the plugins' pod indexes, once per state
    print(f"  first decision (builds the pod indexes): {ms(first)}")
    times: list[float] = []
    cpus: list[float] = []
    nominated = 0
    for k in range(DECISIONS):
        kind = ("", "spread", "anti")[k % 3]
        took, cpu, won = decide(scheduler, k, kind, f"urgent-{k}")
        times.append(took)
        cpus.append(cpu)
        nominated += won
    print(
        f"  one preempting decision: {spread(times, cpus)}"
        f" ({nominated}/{DECISIONS} nominated a node; target p99 <= 50 ms)"
    )
    affine = [decide(scheduler, DECISIONS + k, "affinity", f"w{2 * k + 1}") for k in range(AFFINE)]
    print(
        f"  with required pod affinity (dry run proper): p50 {ms(percentile([a for a, _, _ in affine], 50))}"
        f" (cpu {ms(percentile([c for _, c, _ in affine], 50))}; {sum(won for _, _, won in affine)}/{AFFINE}"
        " nominated a node)"
    )
