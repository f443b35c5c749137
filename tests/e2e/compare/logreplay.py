"""Replay an event log on the real control plane: its cluster objects are created and deleted in log order, and
each pending pod is created and left to kube-scheduler, which binds it (its claims then bound by the real PV
controller) or marks it Unschedulable before the next event is applied, so kube decides the pods in berth's order.

What is applied: Namespaces (made on first use), Nodes (as API objects, with the log's status), StorageClasses,
CSI objects, PriorityClasses, PVs, PVCs, Services, ReplicaSets and StatefulSets (kube-scheduler reads them for
its default spreading; no workload controller runs, so they make no pods), PodDisruptionBudgets and Pods.
Pods with a node in the log are created on it; a deleting or deleted object is deleted. Every other kind
(NodeMetrics, CapacityBuffers, Deployments, Jobs, ResourceQuotas, ...) and every other update (status, replica
counts; a Namespace's deletion) is skipped and counted. When a bound claim is deleted, the PV is wiped and offered again as it was in the log, as the local
static provisioner does (and as berth's replay frees a PV when the pod that reserved it goes).

Between events, pods kube-scheduler still holds (Unschedulable, retried when a change may help them) get their
retries before the replay moves on: it waits until the scheduler's active and backoff queues are empty
(its /metrics). A pod bound on such a retry is recorded as late.
"""

from __future__ import annotations

import copy
import gzip
import json
import ssl
import time
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.e2e.cluster import condition, wait_for
from tests.e2e.controlplane import ApiError, Client, ControlPlane

# kind -> (API prefix, plural, namespaced)
KINDS = {
    "Node": ("/api/v1", "nodes", False),
    "StorageClass": ("/apis/storage.k8s.io/v1", "storageclasses", False),
    "CSIDriver": ("/apis/storage.k8s.io/v1", "csidrivers", False),
    "CSINode": ("/apis/storage.k8s.io/v1", "csinodes", False),
    "CSIStorageCapacity": ("/apis/storage.k8s.io/v1", "csistoragecapacities", True),
    "PriorityClass": ("/apis/scheduling.k8s.io/v1", "priorityclasses", False),
    "PersistentVolume": ("/api/v1", "persistentvolumes", False),
    "PersistentVolumeClaim": ("/api/v1", "persistentvolumeclaims", True),
    "Service": ("/api/v1", "services", True),
    "ReplicaSet": ("/apis/apps/v1", "replicasets", True),
    "StatefulSet": ("/apis/apps/v1", "statefulsets", True),
    "PodDisruptionBudget": ("/apis/policy/v1", "poddisruptionbudgets", True),
    "Pod": ("/api/v1", "pods", True),
}
SERVER_SET = ("uid", "resourceVersion", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds",
              "generation", "managedFields", "selfLink")  # fmt: skip
SETTLE_PAUSE = 0.05  # seconds for kube-scheduler's informers to see the last write before its queue is read
WAIT = 60.0


def read_log(path: Path) -> list[dict[str, Any]]:
    """The events of a berth event log (JSON lines, gzip when the name ends in .gz), in order."""
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def pending_pod(event: dict[str, Any]) -> bool:
    obj = event["object"]
    return bool(event["type"] == "ADDED" and obj.get("kind") == "Pod" and not obj["spec"].get("nodeName"))


def cut(events: list[dict[str, Any]], pods: int) -> list[dict[str, Any]]:
    """The log up to and with its `pods`-th pending pod (all of it when there are fewer)."""
    seen = 0
    for i, event in enumerate(events):
        seen += pending_pod(event)
        if seen == pods:
            return events[: i + 1]
    return events


def key(obj: dict[str, Any]) -> str:
    meta = obj["metadata"]
    return f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else str(meta["name"])


def deleting(event: dict[str, Any]) -> bool:
    return event["type"] == "DELETED" or bool(event["object"]["metadata"].get("deletionTimestamp"))


def manifest(obj: dict[str, Any]) -> dict[str, Any]:
    """The object as a client would create it: no status or server-set metadata; a pod's priority left to
    admission (which resolves it from priorityClassName, and refuses a pod that sets both differently), and
    no finalizers on a pod (the Job controller that would remove batch.kubernetes.io/job-tracking does not run)."""
    out = copy.deepcopy(obj)
    out.pop("status", None)
    for name in SERVER_SET:
        out["metadata"].pop(name, None)
    if out.get("kind") == "Pod":
        out["spec"].pop("priority", None)
        out["metadata"].pop("finalizers", None)
    return out


@dataclass
class Placement:
    """What kube-scheduler did with one pending pod of the log."""

    pod: str  # namespace/name
    position: int  # the log line of its ADDED event
    node: str | None = None
    message: str = ""  # the last Unschedulable message
    volumes: dict[str, str] = field(default_factory=dict)  # claim namespace/name -> PV
    late: bool = False  # bound on a retry, after later events

    def record(self) -> dict[str, Any]:
        return {"pod": self.pod, "position": self.position, "node": self.node, "message": self.message,
                "volumes": self.volumes, "late": self.late}  # fmt: skip


@dataclass
class Queue:
    active: int
    backoff: int
    unschedulable: int


def scheduler_queue(plane: ControlPlane, context: ssl.SSLContext) -> Queue:
    """kube-scheduler's scheduler_pending_pods gauge, read from its /metrics as the admin user."""
    url = f"https://127.0.0.1:{plane.ports['scheduler']}/metrics"
    with urllib.request.urlopen(url, context=context, timeout=10) as resp:
        text = resp.read().decode()
    found = {}
    for line in text.splitlines():
        if line.startswith('scheduler_pending_pods{queue="'):
            name, value = line.split('"')[1], line.rsplit(" ", 1)[1]
            found[name] = int(float(value))
    return Queue(found.get("active", 0), found.get("backoff", 0), found.get("unschedulable", 0))


def _metrics_context(plane: ControlPlane) -> ssl.SSLContext:
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE  # the scheduler serves with its own self-signed certificate
    context.load_cert_chain(str(plane.pki / "admin.crt"), str(plane.pki / "admin.key"))
    return context


class LogReplay:
    """One replay of a log's events on a control plane (run once)."""

    def __init__(self, plane: ControlPlane, progress: Callable[[str], None] = lambda _: None) -> None:
        self.plane = plane
        self.api: Client = plane.client
        self.metrics = _metrics_context(plane)
        self.progress = progress
        self.namespaces: set[str] = {"default", "kube-system"}
        self.pvs: dict[str, dict[str, Any]] = {}  # the log's PVs, by name, to offer again
        self.placements: dict[str, Placement] = {}
        self.held: set[str] = set()  # pods kube-scheduler holds as Unschedulable
        self.skipped: Counter[str] = Counter()  # "KIND TYPE" the replay left out
        self.recycled = 0  # PVs wiped and offered again

    # ---- paths

    def path(self, kind: str, namespace: str = "", name: str = "") -> str:
        prefix, plural, namespaced = KINDS[kind]
        base = f"{prefix}/namespaces/{namespace}/{plural}" if namespaced else f"{prefix}/{plural}"
        return f"{base}/{name}" if name else base

    def obj_path(self, obj: dict[str, Any]) -> str:
        meta = obj["metadata"]
        return self.path(obj["kind"], meta.get("namespace", ""), meta["name"])

    # ---- the replay

    def run(self, events: list[dict[str, Any]]) -> list[Placement]:
        for position, event in enumerate(events, 1):
            if self.apply(position, event) and self.held:
                self.settle()
        self.settle()
        self.final_look()
        return list(self.placements.values())

    def apply(self, position: int, event: dict[str, Any]) -> bool:
        """Apply one event; False when it was skipped."""
        obj, kind, type_ = event["object"], event["object"].get("kind", ""), event["type"]
        if kind == "Namespace" and type_ == "ADDED":
            self.namespace(obj["metadata"]["name"])
            return True
        if kind not in KINDS or (type_ != "ADDED" and not deleting(event)):
            self.skipped[f"{kind} {type_}"] += 1
            return False
        if kind == "Pod" and deleting(event):
            self.delete_pod(obj)
        elif kind == "PersistentVolumeClaim" and deleting(event):
            self.delete_claim(obj)
        elif deleting(event):
            self.api.delete(self.obj_path(obj))
        elif kind == "Pod" and not obj["spec"].get("nodeName"):
            self.schedule(position, obj)
        else:
            self.create(obj)
        return True

    def namespace(self, name: str) -> None:
        if name in self.namespaces:
            return
        if not self.api.exists(f"/api/v1/namespaces/{name}"):
            self.api.create("/api/v1/namespaces", {"metadata": {"name": name}})
        sa = f"/api/v1/namespaces/{name}/serviceaccounts/default"  # pods are refused until it exists
        wait_for(f"serviceaccount {name}/default", lambda: self.api.exists(sa) or None)
        self.namespaces.add(name)

    def create(self, obj: dict[str, Any]) -> None:
        meta = obj["metadata"]
        if meta.get("namespace"):
            self.namespace(meta["namespace"])
        if obj["kind"] == "PersistentVolume":
            self.pvs[meta["name"]] = obj
        collection = self.obj_path(obj).rsplit("/", 1)[0]
        self.api.create(collection, manifest(obj))
        if obj["kind"] == "Node" and obj.get("status"):
            self.api.patch(self.obj_path(obj) + "/status", {"status": obj["status"]})

    # ---- pods

    def schedule(self, position: int, obj: dict[str, Any]) -> None:
        """Create a pending pod and wait for kube-scheduler's decision."""
        self.create(obj)
        placement = self.placements[key(obj)] = Placement(key(obj), position)
        path = self.obj_path(obj)

        def decided() -> dict[str, Any] | None:
            pod: dict[str, Any] = self.api.get(path)
            if pod["spec"].get("nodeName"):
                return pod
            cond = condition(pod, "PodScheduled")
            if cond and cond.get("status") == "False" and cond.get("reason") == "Unschedulable":
                self.settle()  # a retry may be on its way (a claim its informer saw late)
                again: dict[str, Any] = self.api.get(path)
                return again
            return None

        pod = wait_for(f"kube-scheduler's decision on {key(obj)}", decided, WAIT)
        self.observe(placement, pod)
        self.progress(f"{position}: {placement.pod} -> {placement.node or 'Unschedulable'}")

    def observe(self, placement: Placement, pod: dict[str, Any]) -> None:
        """Note the pod's node (and its claims' PVs) or its Unschedulable message."""
        node = pod["spec"].get("nodeName")
        if not node:
            cond = condition(pod, "PodScheduled") or {}
            placement.message = str(cond.get("message", ""))
            self.held.add(placement.pod)
            return
        placement.node = node
        self.held.discard(placement.pod)
        ns = pod["metadata"]["namespace"]
        for volume in pod["spec"].get("volumes") or []:
            claim = (volume.get("persistentVolumeClaim") or {}).get("claimName")
            if claim:
                path = self.path("PersistentVolumeClaim", ns, claim)
                placement.volumes[f"{ns}/{claim}"] = wait_for(
                    f"claim {ns}/{claim} bound", lambda p=path: self.api.get(p)["spec"].get("volumeName") or None
                )

    def delete_pod(self, obj: dict[str, Any]) -> None:
        path, name = self.obj_path(obj), key(obj)
        try:
            pod = self.api.get(path)
        except ApiError as err:
            if err.status == 404:
                return  # deleted already (the log's MODIFIED with a deletionTimestamp, then its DELETED)
            raise
        placement = self.placements.get(name)
        if placement is not None and placement.node is None and pod["spec"].get("nodeName"):
            placement.late = True
            self.observe(placement, pod)
        self.held.discard(name)
        self.api.delete(path, gracePeriodSeconds=0)  # no kubelet: at once
        wait_for(f"pod {name} deleted", lambda: None if self.api.exists(path) else True)

    # ---- claims and volumes

    def delete_claim(self, obj: dict[str, Any]) -> None:
        """Delete the claim; when it is gone (its pods went first), wipe its PV and offer it again."""
        path = self.obj_path(obj)
        try:
            volume = self.api.get(path)["spec"].get("volumeName")
        except ApiError as err:
            if err.status == 404:
                return
            raise
        self.api.delete(path)
        wait_for(f"claim {key(obj)} deleted", lambda: None if self.api.exists(path) else True)
        if volume and volume in self.pvs:
            pv_path = self.path("PersistentVolume", name=volume)
            self.api.delete(pv_path)
            wait_for(f"PV {volume} deleted", lambda: None if self.api.exists(pv_path) else True)
            self.create(self.pvs[volume])
            self.recycled += 1

    # ---- kube-scheduler's queue

    def busy(self) -> bool:
        queue = scheduler_queue(self.plane, self.metrics)
        return queue.active > 0 or queue.backoff > 0

    def settle(self) -> None:
        """Wait until kube-scheduler has retried every pod a change may help; note any it bound then."""
        time.sleep(SETTLE_PAUSE)
        wait_for("kube-scheduler's active and backoff queues empty", lambda: None if self.busy() else True, WAIT)
        queue = scheduler_queue(self.plane, self.metrics)
        if queue.unschedulable < len(self.held):
            for name in sorted(self.held):
                self.look(name, late=True)

    def look(self, name: str, late: bool) -> None:
        ns, pod_name = name.split("/", 1)
        try:
            pod = self.api.get(self.path("Pod", ns, pod_name))
        except ApiError as err:
            if err.status == 404:
                self.held.discard(name)
                return
            raise
        if pod["spec"].get("nodeName"):
            self.placements[name].late = late
        self.observe(self.placements[name], pod)

    def final_look(self) -> None:
        for name in sorted(self.held):
            self.look(name, late=True)


def placements_jsonl(placements: list[Placement]) -> Iterator[str]:
    for p in placements:
        yield json.dumps(p.record(), sort_keys=True)
