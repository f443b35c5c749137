"""Builders for raw Kubernetes objects (as the API server prints them) and small clusters."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from berth.core.api.kinds import convert
from berth.core.cache.state import ClusterState

NOW = datetime(2026, 11, 1, 12, 0, 0, tzinfo=UTC)
HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"


def node(
    name: str, zone: str = "z1", cpu: str = "8", memory: str = "32Gi", pods: str = "110", **spec: Any
) -> dict[str, Any]:
    labels = {HOST: name, ZONE: zone, **spec.pop("labels", {})}
    alloc = {"cpu": cpu, "memory": memory, "pods": pods, **spec.pop("extra", {})}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels, "annotations": spec.pop("annotations", {})},
        "spec": spec,
        "status": {"capacity": alloc, "allocatable": alloc},
    }


def host_affinity(*nodes: str) -> dict[str, Any]:
    return {
        "required": {
            "nodeSelectorTerms": [{"matchExpressions": [{"key": HOST, "operator": "In", "values": list(nodes)}]}]
        }
    }


def zone_affinity(*zones: str) -> dict[str, Any]:
    return {
        "required": {
            "nodeSelectorTerms": [{"matchExpressions": [{"key": ZONE, "operator": "In", "values": list(zones)}]}]
        }
    }


def pv(
    name: str,
    size: str,
    on: str | None = None,
    cls: str = "local",
    modes: tuple[str, ...] = ("ReadWriteOnce",),
    phase: str = "Available",
    affinity: dict[str, Any] | None = None,
    claim: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"capacity": {"storage": size}, "accessModes": list(modes), "storageClassName": cls}
    if affinity is not None:
        spec["nodeAffinity"] = affinity
    elif on is not None:
        spec["nodeAffinity"] = host_affinity(on)
    if claim is not None:
        ns, _, cname = claim.partition("/")
        spec["claimRef"] = {"namespace": ns, "name": cname}
    spec.update(extra.pop("spec", {}))
    meta = {"name": name, **extra.pop("metadata", {})}
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": meta, "spec": spec, "status": {"phase": phase}}


def pvc(
    name: str,
    size: str | None = "10Gi",
    cls: str | None = "local",
    ns: str = "default",
    modes: tuple[str, ...] = ("ReadWriteOnce",),
    volume: str = "",
    bound: bool = False,
    annotations: dict[str, str] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"accessModes": list(modes)}
    if size is not None:
        spec["resources"] = {"requests": {"storage": size}}
    if cls is not None:
        spec["storageClassName"] = cls
    if volume:
        spec["volumeName"] = volume
    spec.update(extra.pop("spec", {}))
    ann = dict(annotations or {})
    if bound:
        ann["pv.kubernetes.io/bind-completed"] = "yes"
    meta = {"name": name, "namespace": ns, "uid": f"uid-{name}", "annotations": ann, **extra.pop("metadata", {})}
    status = extra.pop("status", {"phase": "Bound" if bound else "Pending"})
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta, "spec": spec, "status": status}


def storage_class(
    name: str = "local",
    provisioner: str = "kubernetes.io/no-provisioner",
    mode: str | None = "WaitForFirstConsumer",
    topologies: list[dict[str, list[str]]] | None = None,
    weight: str | None = None,
) -> dict[str, Any]:
    sc: dict[str, Any] = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name},
        "provisioner": provisioner,
    }
    if mode is not None:
        sc["volumeBindingMode"] = mode
    if topologies is not None:
        sc["allowedTopologies"] = [
            {"matchLabelExpressions": [{"key": k, "values": v} for k, v in t.items()]} for t in topologies
        ]
    if weight is not None:
        sc["metadata"]["annotations"] = {"storageclass.kubernetes.io/weight": weight}
    return sc


def csi_driver(name: str, capacity: bool = True) -> dict[str, Any]:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSIDriver",
        "metadata": {"name": name},
        "spec": {"storageCapacity": capacity},
    }


def csi_capacity(
    name: str,
    cls: str,
    capacity: str | None = None,
    max_size: str | None = None,
    on: str | None = None,
    topology: Any = "unset",
) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSIStorageCapacity",
        "metadata": {"name": name, "namespace": "kube-system"},
        "storageClassName": cls,
    }
    if capacity is not None:
        obj["capacity"] = capacity
    if max_size is not None:
        obj["maximumVolumeSize"] = max_size
    if topology != "unset":
        obj["nodeTopology"] = topology
    elif on is not None:
        obj["nodeTopology"] = {"matchLabels": {HOST: on}}
    return obj


def pod(
    name: str,
    claims: tuple[str, ...] = (),
    ns: str = "default",
    cpu: str | None = "100m",
    memory: str | None = "128Mi",
    node_name: str = "",
    created: str = "2026-11-01T10:00:00Z",
    **spec: Any,
) -> dict[str, Any]:
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    body: dict[str, Any] = {
        "containers": [{"name": "main", "image": "app", "resources": {"requests": requests}}],
        "volumes": [{"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}} for i, c in enumerate(claims)],
    }
    if node_name:
        body["nodeName"] = node_name
    meta = {
        "name": name,
        "namespace": ns,
        "uid": f"uid-{name}",
        "creationTimestamp": created,
        **spec.pop("metadata", {}),
    }
    status = spec.pop("status", {"phase": "Running" if node_name else "Pending"})
    body.update(spec)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": body, "status": status}


def cluster(*raws: dict[str, Any]) -> ClusterState:
    state = ClusterState()
    for raw in raws:
        state.apply(convert(raw))
    return state


def csi_node(name: str, **drivers: int | None) -> dict[str, Any]:
    """A CSINode: each driver with its allocatable count (None: no count, unlimited)."""
    entries = [
        {"name": d, "nodeID": name, **({} if n is None else {"allocatable": {"count": n}})} for d, n in drivers.items()
    ]
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSINode",
        "metadata": {"name": name},
        "spec": {"drivers": entries},
    }


def volume_attachment(name: str, node: str, attacher: str, pv: str = "") -> dict[str, Any]:
    """A VolumeAttachment of PersistentVolume pv to the node by the attacher (no pv: an empty source)."""
    source = {"persistentVolumeName": pv} if pv else {}
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "VolumeAttachment",
        "metadata": {"name": name},
        "spec": {"attacher": attacher, "nodeName": node, "source": source},
    }


def six_plugin_profile(**args: dict[str, Any]) -> dict[str, Any]:
    """berth's profile before it became kube's (examples/six-plugin-profile.yaml), with these plugin args."""
    path = Path(__file__).parent.parent / "examples" / "six-plugin-profile.yaml"
    doc: dict[str, Any] = yaml.safe_load(path.read_text())
    doc["profiles"][0]["pluginConfig"] = [{"name": n, "args": a} for n, a in args.items()]
    return doc
