"""A scenario: Nodes, cluster-scoped objects (StorageClasses, PVs, PriorityClasses), objects in the scenario's
namespace (claims, PodDisruptionBudgets with the status a disruption controller would write), pods already
running on nodes, and the pending pods, in the order they are created. Built for one namespace and one
suffix (`Names`), so every cluster-scoped name is the scenario's own and several runs never collide."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
PAUSE = "registry.k8s.io/pause:3.10"
GATE = "berth.example/compare"  # holds a pending pod until berth has seen it


@dataclass(frozen=True)
class Names:
    """The scenario's namespace and the suffix of its cluster-scoped names (the `Kube` helper's id)."""

    ns: str
    suffix: str

    def node(self, name: str) -> str:
        return f"{name}-{self.suffix}"

    def cluster(self, name: str) -> str:
        """A StorageClass, PV or PriorityClass of this scenario."""
        return f"{name}-{self.suffix}"


@dataclass
class NodeSpec:
    name: str  # the full name (Names.node)
    cpu: str = "4"
    memory: str = "8Gi"
    pods: str = "110"
    labels: dict[str, str] = field(default_factory=dict)
    taints: list[dict[str, str]] = field(default_factory=list)
    images: list[dict[str, Any]] = field(default_factory=list)  # status.images: {names: [...], sizeBytes}
    unschedulable: bool = False
    extra: dict[str, str] = field(default_factory=dict)  # more allocatable (extended resources)


@dataclass
class Pending:
    pod: dict[str, Any]
    claims: list[dict[str, Any]] = field(default_factory=list)  # PVCs created just before the pod
    # status.nominatedNodeName written while the pod is gated, as an earlier preemption would have left it;
    # the pod stays pending if kube cannot place it (its nomination stands, or kube clears it)
    nominated: str = ""


@dataclass
class Scenario:
    name: str
    nodes: list[NodeSpec]
    cluster: list[tuple[str, dict[str, Any]]] = field(default_factory=list)  # (collection path, object)
    namespaced: list[tuple[str, dict[str, Any]]] = field(default_factory=list)  # (plural with group path, object)
    running: list[dict[str, Any]] = field(default_factory=list)  # pods with spec.nodeName
    pending: list[Pending] = field(default_factory=list)


# ---- builders -------------------------------------------------------------------------------------


def pod(
    name: str,
    cpu: str | None = "100m",
    memory: str | None = None,
    *,
    labels: Mapping[str, str] | None = None,
    node: str = "",
    claims: Sequence[str] = (),
    priority_class: str = "",
    ports: Sequence[int] = (),
    image: str = PAUSE,
    extra: Mapping[str, str] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v} | dict(extra or {})
    container: dict[str, Any] = {"name": "c", "image": image}
    if requests:
        container["resources"] = {"requests": requests}
    if extra:  # extended resources cannot be overcommitted: limits equal requests
        container["resources"]["limits"] = dict(extra)
    if ports:
        container["ports"] = [{"containerPort": p, "hostPort": p} for p in ports]
    if claims:
        container["volumeMounts"] = [{"name": f"v{i}", "mountPath": f"/v{i}"} for i in range(len(claims))]
    body: dict[str, Any] = {"containers": [container], "terminationGracePeriodSeconds": 0}
    if claims:
        body["volumes"] = [{"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}} for i, c in enumerate(claims)]
    if node:
        body["nodeName"] = node
    if priority_class:
        body["priorityClassName"] = priority_class
    body |= spec
    return {"metadata": {"name": name, "labels": dict(labels or {})}, "spec": body}


def node_affinity(key: str, op: str, *values: str) -> dict[str, Any]:
    term = {"matchExpressions": [{"key": key, "operator": op, **({"values": list(values)} if values else {})}]}
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}}


def preferred_node(weight: int, key: str, *values: str) -> dict[str, Any]:
    pref = {"key": key, "operator": "In", "values": list(values)}
    return {
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": weight, "preference": {"matchExpressions": [pref]}}
            ]
        }
    }


def pod_term(labels: Mapping[str, str], key: str) -> dict[str, Any]:
    return {"labelSelector": {"matchLabels": dict(labels)}, "topologyKey": key}


def spread(key: str, labels: Mapping[str, str], skew: int = 1, hard: bool = True) -> dict[str, Any]:
    return {
        "maxSkew": skew,
        "topologyKey": key,
        "whenUnsatisfiable": "DoNotSchedule" if hard else "ScheduleAnyway",
        "labelSelector": {"matchLabels": dict(labels)},
    }


def storage_class(name: str, wait: bool = True, provisioner: str = "kubernetes.io/no-provisioner") -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "provisioner": provisioner,
        "volumeBindingMode": "WaitForFirstConsumer" if wait else "Immediate",
    }


def pv(
    name: str,
    size: str,
    storage_class: str,
    *,
    nodes: Sequence[str] = (),
    zone: str = "",
    claim: tuple[str, str] | None = None,
    labels: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """A local PV on these nodes (by hostname), or a zonal one (zone label and zone affinity); claim
    (namespace, name) pre-binds it."""
    spec: dict[str, Any] = {
        "capacity": {"storage": size},
        "accessModes": ["ReadWriteOnce"],
        "persistentVolumeReclaimPolicy": "Retain",
        "storageClassName": storage_class,
    }
    if nodes:
        spec["local"] = {"path": f"/mnt/{name}"}
        expr = {"key": HOST, "operator": "In", "values": list(nodes)}
    else:
        spec["csi"] = {"driver": "disk.example.com", "volumeHandle": name}
        expr = {"key": ZONE, "operator": "In", "values": [zone]}
    spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": [expr]}]}}
    if claim is not None:
        spec["claimRef"] = {"namespace": claim[0], "name": claim[1]}
    meta: dict[str, Any] = {"name": name, "labels": dict(labels or {})}
    if zone:
        meta["labels"][ZONE] = zone
    return {"metadata": meta, "spec": spec}


def pvc(name: str, size: str, storage_class: str, volume: str = "") -> dict[str, Any]:
    spec: dict[str, Any] = {
        "accessModes": ["ReadWriteOnce"],
        "storageClassName": storage_class,
        "resources": {"requests": {"storage": size}},
    }
    if volume:
        spec["volumeName"] = volume
    return {"metadata": {"name": name}, "spec": spec}


def priority_class(name: str, value: int) -> dict[str, Any]:
    return {"metadata": {"name": name}, "value": value}


def pdb(name: str, labels: Mapping[str, str], allowed: int) -> dict[str, Any]:
    """A PodDisruptionBudget and the status a disruption controller would write (none runs here)."""
    return {
        "metadata": {"name": name},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": dict(labels)}},
        "status": {
            "disruptionsAllowed": allowed,
            "currentHealthy": 1,
            "desiredHealthy": 1,
            "expectedPods": 1,
            "observedGeneration": 1,
        },
    }


def image(name: str, mib: int) -> dict[str, Any]:
    return {"names": [name], "sizeBytes": mib * 1024 * 1024}


def csi_node(node: str, driver: str, count: int) -> dict[str, Any]:
    """The CSINode a kubelet would register for the node: the driver with its attach limit."""
    return {
        "metadata": {"name": node},
        "spec": {"drivers": [{"name": driver, "nodeID": node, "allocatable": {"count": count}}]},
    }


def csi_pv(name: str, size: str, storage_class: str, driver: str, claim: tuple[str, str]) -> dict[str, Any]:
    """A CSI PV (volume handle: its name), no node affinity, pre-bound to claim (namespace, name)."""
    spec = {
        "capacity": {"storage": size},
        "accessModes": ["ReadWriteOnce"],
        "persistentVolumeReclaimPolicy": "Retain",
        "storageClassName": storage_class,
        "csi": {"driver": driver, "volumeHandle": name},
        "claimRef": {"namespace": claim[0], "name": claim[1]},
    }
    return {"metadata": {"name": name}, "spec": spec}


def volume_attachment(name: str, node: str, driver: str, pv: str) -> dict[str, Any]:
    """A VolumeAttachment as the attach/detach controller makes them (no external attacher runs here)."""
    return {
        "metadata": {"name": name},
        "spec": {"attacher": driver, "nodeName": node, "source": {"persistentVolumeName": pv}},
    }
