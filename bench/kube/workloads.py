"""The workloads, in the shapes of kube's scheduler_perf (test/integration/scheduler_perf: its node and pod
templates and its SchedulingBasic, SchedulingPodAntiAffinity, TopologySpreading and PreemptionBasic
cases), plus local PVs bound late (WaitForFirstConsumer), which scheduler_perf has no case for.

Nodes: 4 CPUs, 32Gi, 110 pods, Ready, in three zones. Pods: one pause container asking 100m and 500Mi
(limits the same), terminationGracePeriodSeconds 0. Each workload gives the cluster to set up (made and
settled before the clock starts) and the pods to time.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

NS = "bench"
PAUSE = "registry.k8s.io/pause:3.10"  # never pulled: no kubelet runs
HOST, ZONE = "kubernetes.io/hostname", "topology.kubernetes.io/zone"
ZONES = ("moon-1", "moon-2", "moon-3")
LOCAL = "local-wffc"
HIGH = "bench-high"

Obj = dict[str, Any]


@dataclass
class Workload:
    name: str
    cluster: list[tuple[str, Obj]] = field(default_factory=list)  # (collection path, cluster-scoped object)
    namespaced: list[tuple[str, Obj]] = field(default_factory=list)  # (plural, object in NS)
    pending: list[Obj] = field(default_factory=list)  # the timed pods, in creation order

    @property
    def pods(self) -> int:
        return len(self.pending)


def node(i: int) -> Obj:
    name = f"node-{i:05d}"
    capacity = {"cpu": "4", "memory": "32Gi", "pods": "110"}
    ready = {"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "berth bench: no kubelet"}
    return {
        "metadata": {"name": name, "labels": {HOST: name, ZONE: ZONES[i % len(ZONES)], "kubernetes.io/os": "linux"}},
        "spec": {},
        "status": {"capacity": capacity, "allocatable": capacity, "conditions": [ready], "phase": "Running"},
    }


def pod(name: str, cpu: str = "100m", *, labels: dict[str, str] | None = None, **spec: Any) -> Obj:
    res = {"cpu": cpu, "memory": "500Mi"}
    container = {"name": "pause", "image": PAUSE, "ports": [{"containerPort": 80}],
                 "resources": {"requests": res, "limits": res}}  # fmt: skip
    body: Obj = {"containers": [container], "terminationGracePeriodSeconds": 0} | spec
    return {"metadata": {"name": name, "labels": dict(labels or {})}, "spec": body}


def nodes(n: int) -> list[tuple[str, Obj]]:
    return [("/api/v1/nodes", node(i)) for i in range(n)]


def basic(n: int, p: int) -> Workload:
    """SchedulingBasic: n nodes, then p pods."""
    return Workload("SchedulingBasic", nodes(n), [], [pod(f"pod-{i:05d}") for i in range(p)])


def anti_affinity(n: int, p: int) -> Workload:
    """SchedulingPodAntiAffinity: pods that repel each other per hostname (at most one per node, so at
    most n pods)."""
    term = {"labelSelector": {"matchLabels": {"color": "green"}}, "topologyKey": HOST}
    affinity = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    pending = [pod(f"pod-{i:05d}", labels={"color": "green"}, affinity=affinity) for i in range(min(p, n))]
    return Workload("SchedulingPodAntiAffinity", nodes(n), [], pending)


def spread(n: int, p: int) -> Workload:
    """TopologySpreading: pods spread over the three zones with maxSkew 5, DoNotSchedule."""
    constraint = {"maxSkew": 5, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
                  "labelSelector": {"matchLabels": {"color": "blue"}}}  # fmt: skip
    pending = [pod(f"pod-{i:05d}", labels={"color": "blue"}, topologySpreadConstraints=[constraint]) for i in range(p)]
    return Workload("TopologySpreading", nodes(n), [], pending)


def local_pvs(n: int, p: int) -> Workload:
    """Local PVs bound late: a no-provisioner StorageClass with WaitForFirstConsumer, ceil(p/n) PVs per
    node (10Gi, pinned to it by node affinity, made beforehand), p pending claims of 1Gi and p pods,
    one claim each."""
    per = math.ceil(p / n) if n else 0
    sc = {"metadata": {"name": LOCAL}, "provisioner": "kubernetes.io/no-provisioner",
          "volumeBindingMode": "WaitForFirstConsumer", "reclaimPolicy": "Retain"}  # fmt: skip
    cluster = [*nodes(n), ("/apis/storage.k8s.io/v1/storageclasses", sc)]
    for i in range(n):
        host = node(i)["metadata"]["name"]
        for k in range(per):
            term = {"matchExpressions": [{"key": HOST, "operator": "In", "values": [host]}]}
            pv = {
                "metadata": {"name": f"pv-{i:05d}-{k}"},
                "spec": {"capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteOnce"],
                         "persistentVolumeReclaimPolicy": "Retain", "storageClassName": LOCAL,
                         "local": {"path": f"/mnt/disk{k}"},
                         "nodeAffinity": {"required": {"nodeSelectorTerms": [term]}}},
            }  # fmt: skip
            cluster.append(("/api/v1/persistentvolumes", pv))
    claims = [
        ("persistentvolumeclaims", {
            "metadata": {"name": f"claim-{i:05d}"},
            "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": LOCAL,
                     "resources": {"requests": {"storage": "1Gi"}}},
        })
        for i in range(p)
    ]  # fmt: skip
    pending = [
        pod(f"pod-{i:05d}", volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": f"claim-{i:05d}"}}])
        for i in range(p)
    ]
    return Workload("LocalPVsWaitForFirstConsumer", cluster, claims, pending)


def preemption(n: int, p: int) -> Workload:
    """PreemptionBasic: every node holds four pods of priority 0 asking 900m (3.6 of its 4 CPUs), placed
    beforehand; then min(p, n) pods of priority 10 asking 3 CPUs, each of which must evict three."""
    pc = {"metadata": {"name": HIGH}, "value": 10, "preemptionPolicy": "PreemptLowerPriority"}
    cluster = [*nodes(n), ("/apis/scheduling.k8s.io/v1/priorityclasses", pc)]
    running = [
        ("pods", pod(f"low-{i:05d}-{k}", "900m", nodeName=node(i)["metadata"]["name"]))
        for i in range(n)
        for k in range(4)
    ]
    pending = [pod(f"pod-{i:05d}", "3", priorityClassName=HIGH) for i in range(min(p, n))]
    return Workload("PreemptionBasic", cluster, running, pending)


WORKLOADS: dict[str, Callable[[int, int], Workload]] = {
    "basic": basic,
    "anti-affinity": anti_affinity,
    "spread": spread,
    "local-pv": local_pvs,
    "preemption": preemption,
}
