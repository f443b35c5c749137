"""Workloads and what their controllers create: StatefulSets with claims, Deployments, Jobs, their pods.

Objects look as the API server returns them after defaulting and admission (service-account volume,
default tolerations, qosClass). Pods created here are pending: the generator never binds them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from berth.core.generate.ids import Ids, rfc3339
from berth.core.generate.params import format_size
from berth.core.generate.pods import APPS, admitted_spec, container, owner

STATEFULSET, DEPLOYMENT, JOB = "StatefulSet", "Deployment", "Job"
HOSTNAME, ZONE = "kubernetes.io/hostname", "topology.kubernetes.io/zone"
NAMESPACES = {STATEFULSET: "db", DEPLOYMENT: "web", JOB: "batch"}
IMAGES = {
    "postgres": "postgres:16.4",
    "mysql": "mysql:8.4",
    "redis": "redis:7.4",
    "kafka": "apache/kafka:3.8.0",
    "etcd": "quay.io/coreos/etcd:v3.5.16",
    "mongo": "mongo:7.0",
    "elastic": "docker.elastic.co/elasticsearch/elasticsearch:8.15.2",
    "minio": "minio/minio:RELEASE.2024-10-02T17-50-41Z",
    "api": "registry.example.com/shop/api:1.42.0",
    "checkout": "registry.example.com/shop/checkout:2.3.1",
    "search": "registry.example.com/shop/search:0.9.7",
    "cart": "registry.example.com/shop/cart:1.8.0",
    "images": "registry.example.com/shop/images:3.1.4",
    "gateway": "envoyproxy/envoy:v1.31.2",
    "etl": "registry.example.com/data/etl:5.0.2",
    "report": "registry.example.com/data/report:1.1.0",
    "reindex": "registry.example.com/data/reindex:0.4.3",
    "thumbnails": "registry.example.com/data/thumbnails:2.0.0",
}
APPS_BY_KIND = {
    STATEFULSET: ("postgres", "mysql", "redis", "kafka", "etcd", "mongo", "elastic", "minio"),
    DEPLOYMENT: ("api", "checkout", "search", "cart", "images", "gateway"),
    JOB: ("etl", "report", "reindex", "thumbnails"),
}
CPU_CHOICES = ((250, 3), (500, 4), (1000, 4), (2000, 2), (4000, 1))
MEM_PER_CORE_MIB = ((1024, 2), (2048, 3), (4096, 1))


@dataclass(frozen=True)
class Claim:
    template: str  # volumeClaimTemplates name, e.g. "data"
    storage_class: str
    size_gi: int


@dataclass
class Workload:
    kind: str
    namespace: str
    name: str
    uid: str
    app: str
    replicas: int
    cpu_milli: int
    mem_mib: int
    created: datetime
    claims: tuple[Claim, ...] = ()
    hash: str = ""  # pod-template-hash (Deployment) or controller-revision-hash suffix (StatefulSet)
    placement: bool = False  # replicas kept apart: see placement_rules
    rs_uid: str = ""
    pods: list[dict[str, Any]] = field(default_factory=list)
    pvcs: list[dict[str, Any]] = field(default_factory=list)

    @property
    def rs_name(self) -> str:
        return f"{self.name}-{self.hash}"

    @property
    def selector(self) -> dict[str, str]:
        if self.kind == JOB:
            return {"batch.kubernetes.io/controller-uid": self.uid}
        return {"app": self.name}


def _term(w: Workload, topology_key: str) -> dict[str, Any]:
    return {"labelSelector": {"matchLabels": {"app": w.name}}, "topologyKey": topology_key}


def placement_rules(w: Workload) -> dict[str, Any]:
    """How replicated workloads are usually kept apart: both kinds spread over zones (maxSkew 1,
    DoNotSchedule); a StatefulSet's replicas never share a node (required anti-affinity, one database
    replica per node), a Deployment's prefer not to (preferred anti-affinity, weight 100)."""
    if w.kind == STATEFULSET:
        affinity = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [_term(w, HOSTNAME)]}}
    else:
        preferred = [{"weight": 100, "podAffinityTerm": _term(w, HOSTNAME)}]
        affinity = {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": preferred}}
    spread = {
        "maxSkew": 1,
        "topologyKey": ZONE,
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": w.name}},
    }
    return {"affinity": affinity, "topologySpreadConstraints": [spread]}


def template_spec(w: Workload) -> dict[str, Any]:
    mounts = [{"name": c.template, "mountPath": f"/var/lib/{w.app}/{c.template}"} for c in w.claims]
    spec: dict[str, Any] = {
        "containers": [container(w.app, IMAGES[w.app], w.cpu_milli, w.mem_mib, mounts)],
        "restartPolicy": "Never" if w.kind == JOB else "Always",
        "terminationGracePeriodSeconds": 30,
        "dnsPolicy": "ClusterFirst",
        "securityContext": {},
        "schedulerName": "default-scheduler",
    }
    if w.placement:
        spec.update(placement_rules(w))
    return spec


def pod_labels(w: Workload) -> dict[str, str]:
    if w.kind == JOB:
        return {
            "batch.kubernetes.io/controller-uid": w.uid,
            "batch.kubernetes.io/job-name": w.name,
            "controller-uid": w.uid,
            "job-name": w.name,
        }
    if w.kind == DEPLOYMENT:
        return {"app": w.name, "pod-template-hash": w.hash}
    return {"app": w.name}


def workload_object(w: Workload, created_pods: int, ready: int = 0) -> dict[str, Any]:
    """The workload as its controller leaves it once `created_pods` pods exist, `ready` of them running."""
    meta: dict[str, Any] = {
        "name": w.name,
        "namespace": w.namespace,
        "uid": w.uid,
        "generation": 1,
        "creationTimestamp": rfc3339(w.created),
        "labels": {"app": w.name},
    }
    template = {"metadata": {"labels": pod_labels(w) if w.kind == JOB else {"app": w.name}}, "spec": template_spec(w)}
    if w.kind == JOB:
        spec: dict[str, Any] = {
            "parallelism": w.replicas,
            "completions": w.replicas,
            "backoffLimit": 6,
            "completionMode": "NonIndexed",
            "suspend": False,
            "podReplacementPolicy": "TerminatingOrFailed",
            "manualSelector": False,
            "selector": {"matchLabels": w.selector},
            "template": template,
        }
        status: dict[str, Any] = {"active": created_pods} if created_pods else {}
        if created_pods:
            status.update(startTime=rfc3339(w.created), ready=0, terminating=0, uncountedTerminatedPods={})
        return {"apiVersion": "batch/v1", "kind": JOB, "metadata": meta, "spec": spec, "status": status}
    spec = {"replicas": w.replicas, "selector": {"matchLabels": w.selector}, "template": template}
    if w.kind == STATEFULSET:
        spec.update(
            serviceName=w.name,
            podManagementPolicy="Parallel",
            updateStrategy={"type": "RollingUpdate", "rollingUpdate": {"partition": 0}},
            revisionHistoryLimit=10,
            persistentVolumeClaimRetentionPolicy={"whenDeleted": "Delete", "whenScaled": "Delete"},
            volumeClaimTemplates=[claim_template(w, c) for c in w.claims],
        )
        status = {"observedGeneration": 1, "replicas": created_pods, "availableReplicas": 0}
        if created_pods:
            revision = f"{w.name}-{w.hash}"
            status.update(currentReplicas=created_pods, currentRevision=revision, updateRevision=revision)
            status.update(updatedReplicas=created_pods, collisionCount=0)
        return {"apiVersion": APPS, "kind": STATEFULSET, "metadata": meta, "spec": spec, "status": status}
    meta["annotations"] = {"deployment.kubernetes.io/revision": "1"}
    spec.update(
        strategy={"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}},
        revisionHistoryLimit=10,
        progressDeadlineSeconds=600,
    )
    status = {}
    if created_pods:
        status = {"observedGeneration": 1, "replicas": created_pods, "updatedReplicas": created_pods}
        if ready:
            status.update(readyReplicas=ready, availableReplicas=ready)
        if created_pods > ready:
            status["unavailableReplicas"] = created_pods - ready
    return {"apiVersion": APPS, "kind": DEPLOYMENT, "metadata": meta, "spec": spec, "status": status}


def replicaset_object(w: Workload, created_pods: int, ready: int = 0) -> dict[str, Any]:
    labels = pod_labels(w)
    status: dict[str, Any] = {"replicas": created_pods}
    if created_pods:
        status.update(fullyLabeledReplicas=created_pods, observedGeneration=1)
    if ready:
        status.update(readyReplicas=ready, availableReplicas=ready)
    return {
        "apiVersion": APPS,
        "kind": "ReplicaSet",
        "metadata": {
            "name": w.rs_name,
            "namespace": w.namespace,
            "uid": w.rs_uid,
            "generation": 1,
            "creationTimestamp": rfc3339(w.created),
            "labels": labels,
            "annotations": {
                "deployment.kubernetes.io/desired-replicas": str(w.replicas),
                "deployment.kubernetes.io/max-replicas": str(w.replicas + (w.replicas + 3) // 4),
                "deployment.kubernetes.io/revision": "1",
            },
            "ownerReferences": [owner(APPS, DEPLOYMENT, w.name, w.uid)],
        },
        "spec": {
            "replicas": w.replicas,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": template_spec(w)},
        },
        "status": status,
    }


def claim_template(w: Workload, c: Claim) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": c.template, "labels": {"app": w.name}},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": c.storage_class,
            "volumeMode": "Filesystem",
            "resources": {"requests": {"storage": format_size(c.size_gi)}},
        },
    }


def pvc(w: Workload, c: Claim, pod_name: str, uid: str, created: datetime) -> dict[str, Any]:
    t = claim_template(w, c)
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {
            "name": f"{c.template}-{pod_name}",
            "namespace": w.namespace,
            "uid": uid,
            "creationTimestamp": rfc3339(created),
            "labels": t["metadata"]["labels"],
            "finalizers": ["kubernetes.io/pvc-protection"],
            "ownerReferences": [owner(APPS, STATEFULSET, w.name, w.uid)],
        },
        "spec": t["spec"],
        "status": {"phase": "Pending"},
    }


def pending_pod(w: Workload, index: int, ids: Ids, created: datetime) -> dict[str, Any]:
    """Pod `index` of the workload, fresh from admission (a StatefulSet's claims are made separately)."""
    labels = pod_labels(w)
    meta: dict[str, Any] = {"namespace": w.namespace, "uid": ids.uid(), "creationTimestamp": rfc3339(created)}
    volumes = []
    spec = template_spec(w)
    if w.kind == STATEFULSET:
        name = f"{w.name}-{index}"
        labels.update(
            {
                "apps.kubernetes.io/pod-index": str(index),
                "controller-revision-hash": f"{w.name}-{w.hash}",
                "statefulset.kubernetes.io/pod-name": name,
            }
        )
        ref = owner(APPS, STATEFULSET, w.name, w.uid)
        volumes = [
            {"name": c.template, "persistentVolumeClaim": {"claimName": f"{c.template}-{name}"}} for c in w.claims
        ]
        spec.update(hostname=name, subdomain=w.name)
    elif w.kind == DEPLOYMENT:
        name = f"{w.rs_name}-{ids.suffix()}"
        meta["generateName"] = f"{w.rs_name}-"
        ref = owner(APPS, "ReplicaSet", w.rs_name, w.rs_uid)
    else:
        name = f"{w.name}-{ids.suffix()}"
        meta["generateName"] = f"{w.name}-"
        meta["finalizers"] = ["batch.kubernetes.io/job-tracking"]
        ref = owner("batch/v1", JOB, w.name, w.uid)
    meta = {"name": name, **meta, "labels": labels, "ownerReferences": [ref]}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": admitted_spec(spec, ids, volumes),
        "status": {"phase": "Pending", "qosClass": "Burstable"},
    }
