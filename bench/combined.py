"""Issue 3 benchmark: both plugins on, through the full scheduler.

5,000 nodes, 50,000 assigned pods with NodeMetrics, 100,000 local PVs; one pending pod with two
WaitForFirstConsumer claims. Prints p50/p99 of a decision and the cost of one NodeMetric update.
"""

from __future__ import annotations

import gc
import random
import time
from datetime import timedelta

from bench import synthetic
from bench.loadaware import ARGS, NOW, PODS_PER_NODE, _metric, _pod
from bench.util import ms, one_core, percentile, repeat
from berth.core.cache.state import ClusterState
from berth.core.config.kubeschedulerconfig import parse_config
from berth.core.scheduler.schedule_one import Scheduler

NODES = 5_000
PVS = 100_000


def run() -> None:
    print(f"== both plugins: VolumeBinding + LoadAwareScheduling ({one_core()}) ==")
    rng = random.Random(7)
    config = {"profiles": [{"pluginConfig": [{"name": "LoadAwareScheduling", "args": ARGS}]}]}
    state = ClusterState()
    sched = Scheduler(parse_config(config).build(state))
    t = time.perf_counter()
    synthetic.apply_all(state, synthetic.classes())
    pods_by_node = {}
    for n in synthetic.nodes(NODES):
        state.apply(n)
        pods = [_pod(f"p-{n.name}-{j}", n.name, rng, rng.choice((None, 30, 3600, 86400))) for j in range(PODS_PER_NODE)]
        synthetic.apply_all(state, pods)
        pods_by_node[n.name] = pods
        state.apply(_metric(n.name, pods, rng, NOW - timedelta(seconds=rng.randint(0, 200))))
    synthetic.apply_all(state, synthetic.local_pvs(PVS, NODES))
    pod, claims = synthetic.pending_pod("db-0", [("data", "local-ssd", 80), ("wal", "local-hdd", 15)])
    synthetic.apply_all(state, [*claims, pod])
    sched.decide(pod, NOW)
    setup = time.perf_counter() - t
    gc.collect()
    gc.freeze()
    samples = repeat(lambda: sched.decide(pod, NOW), 200)
    d = sched.decide(pod, NOW).decision
    node = d.node or ""
    print(
        f"cluster: {NODES} nodes, {NODES * PODS_PER_NODE} assigned pods with NodeMetrics, {PVS} PVs; setup {setup:.1f} s"
    )
    print(f"decision -> {d.status} on {node} scores {d.nodes[node].scores if node else None}")
    print(
        f"single decision, both plugins: p50 {ms(percentile(samples, 50))}  p99 {ms(percentile(samples, 99))}  (target p99 <= 25 ms)"
    )
    names = list(pods_by_node)
    updates = []
    for _ in range(300):
        name = rng.choice(names)
        metric = _metric(name, pods_by_node[name], rng, NOW)
        t = time.perf_counter()
        state.apply(metric)
        updates.append(time.perf_counter() - t)
    print(
        f"one NodeMetric update ({PODS_PER_NODE} pods on the node): p50 {ms(percentile(updates, 50))}  p99 {ms(percentile(updates, 99))}"
    )


if __name__ == "__main__":
    run()
