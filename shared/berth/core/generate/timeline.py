"""The run: a setup snapshot at t0, then a timeline of workload arrivals, churn, a burst, NodeMetric
reports and buffer edits, merged in time order through one heap. Events stream out as they are made."""

from __future__ import annotations

import heapq
import random
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

from berth.core.api.watch import WatchEvent
from berth.core.generate import buffers, cluster, priorities
from berth.core.generate.buffers import QUOTA_NAMESPACE, Quota
from berth.core.generate.cluster import LOCAL_HDD, LOCAL_SSD, ZONAL_SSD, NodeInfo
from berth.core.generate.ids import Ids, at, rfc3339
from berth.core.generate.metrics import NodeLoad, node_metric, plan_loads
from berth.core.generate.params import Params
from berth.core.generate.pods import daemon_pod, running
from berth.core.generate.workloads import (
    APPS_BY_KIND,
    CPU_CHOICES,
    DEPLOYMENT,
    JOB,
    MEM_PER_CORE_MIB,
    NAMESPACES,
    STATEFULSET,
    Claim,
    Workload,
    pending_pod,
    pvc,
    replicaset_object,
    workload_object,
)

Action = Callable[[int], list[WatchEvent]]
RV_BASE = 100_000
REPLICAS = {
    STATEFULSET: ((1, 2), (2, 2), (3, 5), (5, 2)),
    DEPLOYMENT: ((2, 3), (3, 3), (4, 2), (6, 1), (8, 1)),
    JOB: ((1, 2), (2, 2), (4, 2), (8, 1)),
}
STEP_MS = 50  # between the stages of a cascading deletion


def generate(params: Params, seed: int = 1) -> Iterator[WatchEvent]:
    """The events of one synthetic cluster, in log order. Same params and seed, same events."""
    return _Run(params, seed).events()


def _mean(mix: tuple[tuple[int, int], ...]) -> float:
    return sum(v * w for v, w in mix) / sum(w for _, w in mix)


def _stamp(obj: dict[str, Any], rv: str) -> dict[str, Any]:
    """A copy of obj with resourceVersion set (after uid, where the API server prints it)."""
    meta: dict[str, Any] = {}
    for k, v in obj["metadata"].items():
        if k != "resourceVersion":
            meta[k] = v
        if k == "uid":
            meta["resourceVersion"] = rv
    meta.setdefault("resourceVersion", rv)
    return {**obj, "metadata": meta}


def _deleting(obj: dict[str, Any], t: datetime, keep_finalizers: bool = True) -> dict[str, Any]:
    meta = {**obj["metadata"], "deletionTimestamp": rfc3339(t), "deletionGracePeriodSeconds": 0}
    if not keep_finalizers:
        meta.pop("finalizers", None)
    return {**obj, "metadata": meta}


class _Run:
    def __init__(self, p: Params, seed: int) -> None:
        self.p = p
        self.ids = Ids(seed)
        # placement draws come from their own generator: with or without them, every other draw is the same
        self.placement_rng = random.Random(f"placement-{seed}")
        self.start = p.start.astimezone(UTC)
        self.end = p.duration * 1000
        self.interval = p.report_interval * 1000
        self.rv = RV_BASE
        self.heap: list[tuple[int, int, Action, bool]] = []
        self.seq = 0
        self.busy = 0  # queued actions other than NodeMetric reports
        self.pods_left = p.pods
        self.count = 0  # workloads created, for unique names
        self.quota: Quota | None = None
        self.buffers: list[dict[str, Any]] = []
        self.nodes: list[NodeInfo] = []
        self.loads: list[NodeLoad] = []
        self.pdbs: dict[str, dict[str, Any]] = {}  # by workload uid
        sf = p.stateful_fraction
        replicas = sf * _mean(REPLICAS[STATEFULSET]) + (1 - sf) * (
            0.7 * _mean(REPLICAS[DEPLOYMENT]) + 0.3 * _mean(REPLICAS[JOB])
        )
        # workloads arrive as a Poisson process that delivers `pods` pods in about 85 % of the run
        self.gap_ms = 0.85 * self.end * replicas / max(1, p.pods)

    # ---- plumbing ------------------------------------------------------------
    def ev(self, type_: str, obj: dict[str, Any], ms: int) -> WatchEvent:
        self.rv += 1
        return WatchEvent(type=type_, object=_stamp(obj, str(self.rv)), ts=at(self.start, ms))

    def push(self, ms: int, action: Action, busy: bool = True) -> None:
        self.seq += 1
        self.busy += busy
        heapq.heappush(self.heap, (ms, self.seq, action, busy))

    def t(self, ms: int) -> datetime:
        return at(self.start, ms)

    def events(self) -> Iterator[WatchEvent]:
        yield from self.setup()
        self.schedule()
        while self.heap:
            ms, _, action, busy = heapq.heappop(self.heap)
            self.busy -= busy
            yield from action(ms)

    # ---- t0: what a watch's initial list shows ---------------------------------------
    def setup(self) -> Iterator[WatchEvent]:
        p, ids = self.p, self.ids
        base = self.start - timedelta(days=30)
        self.nodes = cluster.plan_nodes(p, ids, self.start)
        if p.local_pvs or p.zonal_pvs or (p.pods and p.stateful_fraction):
            for obj in [*cluster.storage_classes(p, ids, base), *cluster.csi_objects(p, ids, base)]:
                yield self.ev("ADDED", obj, 0)
        if p.priority_classes:
            for obj in priorities.priority_classes(ids, base):
                yield self.ev("ADDED", obj, 0)
        for n in self.nodes:
            yield self.ev("ADDED", cluster.node(n), 0)
        for obj in cluster.local_pvs(p, ids, self.nodes):
            yield self.ev("ADDED", obj, 0)
        for obj in cluster.zonal_pvs(p, ids, base + timedelta(days=1)):
            yield self.ev("ADDED", obj, 0)
        self.loads = plan_loads(self.nodes, p.hot_fraction, p.cold_nodes, ids, p.report_interval, p.aggregated)
        for load in self.loads:
            last = self.t((load.phase - p.report_interval) * 1000)
            yield self.ev("ADDED", node_metric(load, last, p.report_interval, p.aggregated), 0)
        if p.daemonset:
            ds_uid, revision = ids.uid(), ids.suffix(10)
            for n in self.nodes:
                since = n.created + timedelta(minutes=2)
                pod = daemon_pod(n.name, ds_uid, revision, ids, since)
                if p.priority_classes:
                    pod = priorities.with_priority(pod, priorities.CRITICAL)
                yield self.ev("ADDED", running(pod, n.name, n.ip, n.ip, since + timedelta(seconds=20)), 0)
        if p.buffers:
            yield from self.buffer_setup()

    def buffer_setup(self) -> Iterator[WatchEvent]:
        p, ids = self.p, self.ids
        cpu_total = sum(n.cpu_milli for n in self.nodes)
        mem_total = sum(n.memory_bytes for n in self.nodes) // 2**20
        quota = Quota(ids.uid(), self.start - timedelta(days=20), cpu_total // 2000 * 1000, mem_total // 2048 * 1024)
        self.quota = quota
        fe = buffers.frontend(ids, min(20, max(2, p.nodes // 5)), self.start - timedelta(days=2))
        pods = []
        for i in range(fe.replicas):
            n = ids.rng.choice(self.nodes)
            pod = pending_pod(fe, i, ids, fe.created + timedelta(seconds=5))
            pods.append(
                running(pod, n.name, n.ip, ids.ip(f"10.{64 + (n.index >> 8)}"), fe.created + timedelta(seconds=12))
            )
            quota.charge(fe.cpu_milli, fe.mem_mib)
        yield self.ev("ADDED", quota.object(), 0)
        yield self.ev("ADDED", workload_object(fe, fe.replicas, fe.replicas), 0)
        yield self.ev("ADDED", replicaset_object(fe, fe.replicas, fe.replicas), 0)
        for pod in pods:
            yield self.ev("ADDED", pod, 0)
        for obj in buffers.templates(ids, self.start - timedelta(days=10)):
            yield self.ev("ADDED", obj, 0)
        for i in range(p.buffers):
            buffer = buffers.capacity_buffer(i, ids, self.start - timedelta(days=9), self.start, p.duration)
            self.buffers.append(buffer)
            yield self.ev("ADDED", buffer, 0)

    # ---- after t0 ---------------------------------------------------------------------
    def schedule(self) -> None:
        p = self.p
        for load in self.loads:
            self.push(load.phase * 1000, self.reporter(load), busy=False)
        if p.pods:
            self.push(self.gap(), self.arrive)
        if p.burst:
            self.push(p.burst_at * 1000, self.burst)
        if self.buffers:
            self.push(self.end * 6 // 10, self.resize)

    def gap(self) -> int:
        return max(1, round(self.ids.rng.expovariate(1 / self.gap_ms)))

    def reporter(self, load: NodeLoad) -> Action:
        def report(ms: int) -> list[WatchEvent]:
            load.step(self.ids)
            if ms + self.interval < self.end or self.busy:
                self.push(ms + self.interval, report, busy=False)
            metric = node_metric(load, self.t(ms), self.p.report_interval, self.p.aggregated)
            return [self.ev("MODIFIED", metric, ms)]

        return report

    def new_workload(self, kind: str, replicas: int, ms: int, placed: bool = True) -> Workload:
        p, ids = self.p, self.ids
        self.count += 1
        app = ids.rng.choice(APPS_BY_KIND[kind])
        cpu_milli = ids.weighted(CPU_CHOICES)
        w = Workload(
            kind=kind,
            namespace=NAMESPACES[kind],
            name=f"{app}-{self.count}",
            uid=ids.uid(),
            app=app,
            replicas=replicas,
            cpu_milli=cpu_milli,
            mem_mib=max(256, cpu_milli * ids.weighted(MEM_PER_CORE_MIB) // 1000),
            created=self.t(ms),
            hash=ids.suffix(10),
        )
        if kind == DEPLOYMENT:
            w.rs_uid = ids.uid()
        if placed and kind in (STATEFULSET, DEPLOYMENT) and p.placement and self.placement_rng.random() < p.placement:
            w.placement = True
        if kind == STATEFULSET:
            if ids.rng.random() < p.zonal_claims:
                cls = ZONAL_SSD
            else:
                cls = LOCAL_SSD if ids.rng.random() < p.ssd_fraction else LOCAL_HDD
            claims = [Claim("data", cls, ids.weighted(p.claim_sizes))]
            if ids.rng.random() < p.second_claim:
                claims.append(Claim("logs", LOCAL_HDD, 10))
            w.claims = tuple(claims)
        return w

    def created(self, w: Workload, ms: int) -> list[WatchEvent]:
        out = [self.ev("ADDED", workload_object(w, 0), ms)]
        if w.kind == DEPLOYMENT:
            out.append(self.ev("ADDED", replicaset_object(w, 0), ms))
        if self.p.pdbs and w.kind != JOB and w.name != "flash-sale" and self.ids.rng.random() < self.p.pdbs:
            self.pdbs[w.uid] = priorities.pdb(w, self.ids.uid(), self.t(ms), healthy=False)
            out.append(self.ev("ADDED", self.pdbs[w.uid], ms))
        return out

    def arrive(self, ms: int) -> list[WatchEvent]:
        rng = self.ids.rng
        roll = rng.random()
        kind = STATEFULSET if roll < self.p.stateful_fraction else DEPLOYMENT if rng.random() < 0.7 else JOB
        replicas = min(self.ids.weighted(REPLICAS[kind]), self.pods_left)
        self.pods_left -= replicas
        w = self.new_workload(kind, replicas, ms)
        spacing = rng.randint(5, 40)
        for i in range(replicas):
            self.push(ms + 20 + i * spacing, self.pod_maker(w, i, i == replicas - 1))
        if self.pods_left:
            self.push(ms + self.gap(), self.arrive)
        return self.created(w, ms)

    def burst(self, ms: int) -> list[WatchEvent]:
        """A Deployment scaled to `burst` at once: the ReplicaSet creates pods in slow-start batches."""
        w = self.new_workload(DEPLOYMENT, self.p.burst, ms, placed=False)
        w.name, w.app, w.namespace, w.cpu_milli, w.mem_mib = "flash-sale", "checkout", "web", 1000, 2048
        i, batch = 0, 1
        while i < w.replicas:
            for j in range(min(batch, w.replicas - i)):
                self.push(ms + 30 + batch.bit_length() * 40 + j * 2, self.pod_maker(w, i, i == w.replicas - 1))
                i += 1
            batch *= 2
        return self.created(w, ms)

    def charged(self, w: Workload) -> bool:
        return self.quota is not None and w.namespace == QUOTA_NAMESPACE

    def pod_maker(self, w: Workload, index: int, last: bool) -> Action:
        def make(ms: int) -> list[WatchEvent]:
            out = []
            if not self.charged(w) or (self.quota and self.quota.admits(w.cpu_milli, w.mem_mib)):
                t = self.t(ms)
                for c in w.claims:
                    claim = pvc(w, c, f"{w.name}-{index}", self.ids.uid(), t)
                    w.pvcs.append(claim)
                    out.append(self.ev("ADDED", claim, ms))
                pod = pending_pod(w, index, self.ids, t)
                if self.p.priority_classes:
                    cls = priorities.CRITICAL if w.name == "flash-sale" else priorities.class_of(w)
                    pod = priorities.with_priority(pod, cls)
                if self.p.bound:  # placed by the cluster's own scheduler, and started, as it arrives
                    n = self.ids.rng.choice(self.nodes)
                    pod = running(pod, n.name, n.ip, self.ids.ip(f"10.{64 + (n.index >> 8)}"), t)
                w.pods.append(pod)
                out.append(self.ev("ADDED", pod, ms))
                if self.quota and self.charged(w):
                    self.quota.charge(w.cpu_milli, w.mem_mib)
                    out.append(self.ev("MODIFIED", self.quota.object(), ms))
            if last:
                self.push(ms + 15, self.status_writer(w))
            return out

        return make

    def status_writer(self, w: Workload) -> Action:
        def write(ms: int) -> list[WatchEvent]:
            out = []
            if w.kind == DEPLOYMENT:
                out.append(self.ev("MODIFIED", replicaset_object(w, len(w.pods)), ms))
            out.append(self.ev("MODIFIED", workload_object(w, len(w.pods)), ms))
            budget = self.pdbs.get(w.uid)
            if budget is not None:  # the disruption controller once every pod is healthy
                self.pdbs[w.uid] = priorities.pdb(w, budget["metadata"]["uid"], w.created, healthy=True)
                out.append(self.ev("MODIFIED", self.pdbs[w.uid], ms))
            if w.name != "flash-sale" and self.ids.rng.random() < self.p.churn:
                if self.p.lifetime:
                    # a lifetime drawn for the workload; one that would outlive the log leaves in its last second
                    life = max(30_000, round(self.ids.rng.expovariate(1 / (self.p.lifetime * 1000))))
                    gone = min(ms + life, self.end - 1000)
                else:
                    gone = ms + 30_000 + round(self.ids.rng.expovariate(4 / self.end))
                if ms < gone < self.end:
                    self.push(gone, self.deleter(w))
            return out

        return write

    # ---- churn: a workload deleted, its pods and claims after it ------------------------
    def deleter(self, w: Workload) -> Action:
        def delete_workload(ms: int) -> list[WatchEvent]:
            out = [self.ev("DELETED", workload_object(w, len(w.pods)), ms)]
            if w.kind == DEPLOYMENT:
                out.append(self.ev("DELETED", replicaset_object(w, len(w.pods)), ms))
            budget = self.pdbs.pop(w.uid, None)
            if budget is not None:
                out.append(self.ev("DELETED", budget, ms))
            self.push(ms + STEP_MS, delete_pods)
            return out

        def delete_pods(ms: int) -> list[WatchEvent]:
            out = []
            graceful = w.kind == JOB or self.p.bound
            for pod in w.pods:
                # a pod without a node goes at once; a Job's pod waits for its tracking finalizer, a
                # running pod for its containers to stop
                out.append(self.ev("MODIFIED" if graceful else "DELETED", _deleting(pod, self.t(ms)), ms))
                if self.quota and self.charged(w):
                    self.quota.charge(w.cpu_milli, w.mem_mib, -1)
            if self.quota and self.charged(w) and w.pods:
                out.append(self.ev("MODIFIED", self.quota.object(), ms))
            if graceful or w.pvcs:
                self.push(ms + STEP_MS, release)
            return out

        def release(ms: int) -> list[WatchEvent]:
            out = []
            if w.kind == JOB or self.p.bound:
                deleted = self.t(ms - STEP_MS)
                out += [self.ev("DELETED", _deleting(pod, deleted, keep_finalizers=False), ms) for pod in w.pods]
            out += [self.ev("MODIFIED", _deleting(c, self.t(ms)), ms) for c in w.pvcs]
            if w.pvcs:
                self.push(ms + STEP_MS, claims_gone)
            return out

        def claims_gone(ms: int) -> list[WatchEvent]:
            deleted = self.t(ms - STEP_MS)
            return [self.ev("DELETED", _deleting(c, deleted, keep_finalizers=False), ms) for c in w.pvcs]

        return delete_workload

    def resize(self, ms: int) -> list[WatchEvent]:
        """A user raises the first buffer's replicas."""
        first = self.buffers[0]
        replicas = first["spec"].get("replicas", 0) + 2
        self.buffers[0] = buffers.resized(first, replicas)
        return [self.ev("MODIFIED", self.buffers[0], ms)]
