"""InterPodAffinity and PodTopologySpread at scale: 5,000 nodes in 10 zones, 50,000 bound pods, a quarter
of them in workloads with required hostname anti-affinity (StatefulSets) or a zone spread (Deployments).

Prints p50/p99 of one decision of a new replica with kube's whole default profile (both plugins in
it), the decided pod reserved on its node as the scheduler loop does. Figures only, never assertions.
`bench/decide50k.py` runs the same at ten times the size.
"""

from __future__ import annotations

import random
import time
from datetime import UTC, datetime

from bench.util import one_core, spread
from berth.core.api.core.model import Node, Pod, PodAffinity, PodAffinityTerm, SpreadConstraint
from berth.core.api.meta.selectors import LabelSelector
from berth.core.cache.state import ClusterState
from berth.core.config.kubeschedulerconfig import parse_config
from berth.core.scheduler.schedule_one import Scheduler

NODES = 5_000
ZONES = 10
PODS = 50_000
WORKLOADS = 500  # 250 anti-affine StatefulSets and 250 spread Deployments of 25 replicas: 12,500 pods
REPLICAS = 25
DECISIONS = 300
HOST, ZONE = "kubernetes.io/hostname", "topology.kubernetes.io/zone"
GI = 2**30
NOW = datetime(2026, 11, 1, 12, tzinfo=UTC)


def replica(w: int, i: int, node: str = "") -> Pod:
    labels = {"app": f"w{w}"}
    sel = LabelSelector((("app", f"w{w}"),))
    if w % 2 == 0:
        extra: dict[str, object] = {"pod_affinity": PodAffinity(required_anti=(PodAffinityTerm(HOST, sel),))}
    else:
        extra = {"spread": (SpreadConstraint(1, ZONE, "DoNotSchedule", sel),)}
    return Pod(
        namespace="bench", name=f"w{w}-{i}", uid=f"w{w}-{i}", node_name=node, phase="Running" if node else "Pending",
        labels=labels, requests={"cpu": 100, "memory": GI // 8}, **extra,  # type: ignore[arg-type]
    )  # fmt: skip


def build(rng: random.Random, nodes: int = NODES, pods: int = PODS, workloads: int = WORKLOADS) -> ClusterState:
    state = ClusterState()
    names = [f"node-{i:05d}" for i in range(nodes)]
    for i, name in enumerate(names):
        labels = {HOST: name, ZONE: f"zone-{i % ZONES}"}
        state.apply(Node(name=name, labels=labels, allocatable={"cpu": 64_000, "memory": 256 * GI, "pods": 110}))
    for w in range(workloads):
        hosts = rng.sample(names, REPLICAS)  # anti-affine replicas on distinct nodes, spread ones anywhere
        for i in range(REPLICAS):
            state.apply(replica(w, i, hosts[i]))
    for k in range(pods - workloads * REPLICAS):
        state.apply(
            Pod(namespace="bench", name=f"bg-{k}", uid=f"bg-{k}", node_name=rng.choice(names), phase="Running",
                labels={"tier": f"t{k % 40}"}, requests={"cpu": 100, "memory": GI // 8})
        )  # fmt: skip
    return state


def run() -> None:
    print(f"interpod: {one_core()}")
    measure(NODES, PODS, WORKLOADS, target="p99 <= 10 ms")


def measure(nodes: int, pods: int, workloads: int, target: str) -> None:
    rng = random.Random(11)
    t = time.perf_counter()
    state = build(rng, nodes, pods, workloads)
    cfg = parse_config(None)  # berth's default profile: kube's, both plugins in it
    scheduler = Scheduler(cfg.build(state), top_nodes=10)  # as the scorer service lists them (BERTH_TOP_NODES)
    print(
        f"  {nodes:,} nodes, {pods:,} bound pods ({workloads * REPLICAS:,} in workloads); setup {time.perf_counter() - t:.1f} s"
    )
    decisions: list[float] = []
    cpu: list[float] = []
    placed = 0
    for k in range(DECISIONS):
        pod = replica(rng.randrange(workloads), REPLICAS + k)
        t, c = time.perf_counter(), time.thread_time()
        outcome = scheduler.decide(pod, NOW)
        if outcome.reservation is not None:
            state.reserve(outcome.reservation)
            placed += 1
        decisions.append(time.perf_counter() - t)
        cpu.append(time.thread_time() - c)
    print(
        f"  one decision + reserve, full profile with both plugins: {spread(decisions, cpu)}"
        f" ({placed}/{DECISIONS} placed; target {target})"
    )
