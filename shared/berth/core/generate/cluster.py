"""The cluster's machines and storage as raw objects: Nodes, StorageClasses, the CSI driver, PVs."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from berth.core.generate.ids import GI, KI, Ids, cpu, mem_ki, rfc3339
from berth.core.generate.params import NodeShape, Params, format_size

HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
RACK = "topology.berth.dev/rack"
REGION_NAME = "region-1"
LOCAL_SSD, LOCAL_HDD, ZONAL_SSD = "local-ssd", "local-hdd", "zonal-ssd"
NO_PROVISIONER = "kubernetes.io/no-provisioner"
DRIVER = "block.csi.example.com"
KUBELET = "v1.33.4"


@dataclass(frozen=True)
class NodeInfo:
    index: int
    name: str
    uid: str
    zone: str
    rack: str
    shape: NodeShape
    created: datetime

    @property
    def ip(self) -> str:
        return f"10.{(self.index >> 8) & 255}.{self.index & 255}.10"

    @property
    def cpu_milli(self) -> int:
        """Allocatable cpu: capacity less what kubelet reserves."""
        return self.shape.cpu * 1000 - 60 - 10 * self.shape.cpu

    @property
    def memory_bytes(self) -> int:
        """Allocatable memory: capacity less 5 % reserved and the 100Mi eviction threshold."""
        return _mem_capacity(self.shape) * 95 // 100 // KI * KI - 100 * 2**20


def zone_name(i: int) -> str:
    letters = ""
    i += 1
    while i:
        i, r = divmod(i - 1, 26)
        letters = chr(ord("a") + r) + letters
    return f"zone-{letters}"


def plan_nodes(p: Params, ids: Ids, start: datetime) -> list[NodeInfo]:
    """Nodes round-robin over zones, then racks; a shape drawn per node."""
    width = max(3, len(str(p.nodes)))
    shapes = [(s, s.weight) for s in p.node_shapes]
    out = []
    for i in range(p.nodes):
        z = i % p.zones
        rack = (i // p.zones) % p.racks_per_zone
        zone = zone_name(z)
        created = start - timedelta(days=30) + timedelta(seconds=ids.rng.randrange(0, 29 * 86400))
        out.append(
            NodeInfo(
                i, f"node-{i + 1:0{width}d}", ids.uid(), zone, f"{zone}-r{rack + 1}", ids.weighted(shapes), created
            )
        )
    return out


def _mem_capacity(shape: NodeShape) -> int:
    return shape.memory_gi * GI - 180 * 2**20  # what the firmware keeps


def node(n: NodeInfo) -> dict[str, Any]:
    s = n.shape
    capacity = {
        "cpu": str(s.cpu),
        "ephemeral-storage": "203070420Ki",
        "hugepages-1Gi": "0",
        "hugepages-2Mi": "0",
        "memory": mem_ki(_mem_capacity(s)),
        "pods": "110",
    }
    allocatable = {
        **capacity,
        "cpu": cpu(n.cpu_milli),
        "ephemeral-storage": "187149698763",
        "memory": mem_ki(n.memory_bytes),
    }
    seen = rfc3339(n.created)
    cidr = f"10.{64 + (n.index >> 8)}.{n.index & 255}.0/24"
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": n.name,
            "uid": n.uid,
            "creationTimestamp": seen,
            "labels": {
                "beta.kubernetes.io/arch": "amd64",
                "beta.kubernetes.io/os": "linux",
                HOST: n.name,
                "kubernetes.io/arch": "amd64",
                "kubernetes.io/os": "linux",
                "node.kubernetes.io/instance-type": s.name,
                RACK: n.rack,
                REGION: REGION_NAME,
                ZONE: n.zone,
            },
            "annotations": {
                "node.alpha.kubernetes.io/ttl": "0",
                "volumes.kubernetes.io/controller-managed-attach-detach": "true",
            },
        },
        "spec": {"podCIDR": cidr, "podCIDRs": [cidr], "providerID": f"berth://{n.zone}/{n.name}"},
        "status": {
            "capacity": capacity,
            "allocatable": allocatable,
            "conditions": [
                {
                    "type": t,
                    "status": "False",
                    "reason": f"KubeletHas{r}",
                    "message": m,
                    "lastHeartbeatTime": seen,
                    "lastTransitionTime": seen,
                }
                for t, r, m in (
                    ("MemoryPressure", "SufficientMemory", "kubelet has sufficient memory available"),
                    ("DiskPressure", "NoDiskPressure", "kubelet has no disk pressure"),
                    ("PIDPressure", "SufficientPID", "kubelet has sufficient PID available"),
                )
            ]
            + [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "KubeletReady",
                    "message": "kubelet is posting ready status",
                    "lastHeartbeatTime": seen,
                    "lastTransitionTime": seen,
                }
            ],
            "addresses": [{"type": "InternalIP", "address": n.ip}, {"type": "Hostname", "address": n.name}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {
                "architecture": "amd64",
                "containerRuntimeVersion": "containerd://2.0.5",
                "kernelVersion": "6.8.0-1031",
                "kubeProxyVersion": KUBELET,
                "kubeletVersion": KUBELET,
                "operatingSystem": "linux",
                "osImage": "Ubuntu 24.04.2 LTS",
            },
        },
    }


def storage_classes(p: Params, ids: Ids, created: datetime) -> list[dict[str, Any]]:
    local = [
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": name, "uid": ids.uid(), "creationTimestamp": rfc3339(created)},
            "provisioner": NO_PROVISIONER,
            "reclaimPolicy": "Delete",
            "volumeBindingMode": "WaitForFirstConsumer",
        }
        for name in (LOCAL_HDD, LOCAL_SSD)
    ]
    zones = [zone_name(z) for z in range(p.zones)]
    zonal = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": ZONAL_SSD, "uid": ids.uid(), "creationTimestamp": rfc3339(created)},
        "provisioner": DRIVER,
        "parameters": {"type": "ssd", "csi.storage.k8s.io/fstype": "ext4"},
        "reclaimPolicy": "Delete",
        "allowVolumeExpansion": True,
        "volumeBindingMode": "WaitForFirstConsumer",
        "allowedTopologies": [{"matchLabelExpressions": [{"key": ZONE, "values": zones}]}],
    }
    return [*local, zonal]


def csi_objects(p: Params, ids: Ids, created: datetime) -> list[dict[str, Any]]:
    """The zonal driver, which publishes CSIStorageCapacity per zone."""
    driver = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSIDriver",
        "metadata": {"name": DRIVER, "uid": ids.uid(), "creationTimestamp": rfc3339(created)},
        "spec": {
            "attachRequired": True,
            "fsGroupPolicy": "ReadWriteOnceWithFSType",
            "podInfoOnMount": False,
            "requiresRepublish": False,
            "seLinuxMount": False,
            "storageCapacity": True,
            "volumeLifecycleModes": ["Persistent"],
        },
    }
    per_zone = max(10 * 1024, p.nodes // p.zones * 512)
    out = [driver]
    for z in range(p.zones):
        out.append(
            {
                "apiVersion": "storage.k8s.io/v1",
                "kind": "CSIStorageCapacity",
                "metadata": {
                    "name": f"csisc-{ids.suffix()}",
                    "generateName": "csisc-",
                    "namespace": "kube-system",
                    "uid": ids.uid(),
                    "creationTimestamp": rfc3339(created),
                    "labels": {
                        "csi.storage.k8s.io/drivername": DRIVER,
                        "csi.storage.k8s.io/managed-by": "external-provisioner",
                    },
                },
                "nodeTopology": {"matchLabels": {ZONE: zone_name(z)}},
                "storageClassName": ZONAL_SSD,
                "capacity": format_size(per_zone),
                "maximumVolumeSize": "16Ti",
            }
        )
    return out


def _host_affinity(key: str, value: str) -> dict[str, Any]:
    return {
        "required": {"nodeSelectorTerms": [{"matchExpressions": [{"key": key, "operator": "In", "values": [value]}]}]}
    }


def local_pvs(p: Params, ids: Ids, nodes: list[NodeInfo]) -> Iterator[dict[str, Any]]:
    """`local_pvs` PVs spread evenly (the remainder on the first nodes), as the static provisioner makes them.

    A node's disks of one class are one model: each node draws one size per class from `pv_sizes`, so
    some nodes offer only small PVs and others only large ones, and where a claim lands matters.
    """
    base, extra = divmod(p.local_pvs, len(nodes))
    seen: set[str] = set()
    for n in nodes:
        disks = {LOCAL_SSD: 0, LOCAL_HDD: 0}
        sizes = {LOCAL_SSD: ids.weighted(p.pv_sizes), LOCAL_HDD: ids.weighted(p.pv_sizes)}
        for _ in range(base + (1 if n.index < extra else 0)):
            cls = LOCAL_SSD if ids.rng.random() < p.ssd_fraction else LOCAL_HDD
            size = sizes[cls]
            name = f"local-pv-{ids.hex()}"
            while name in seen:
                name = f"local-pv-{ids.hex()}"
            seen.add(name)
            media = cls.removeprefix("local-")
            path = f"/mnt/disks/{media}{disks[cls]}"
            disks[cls] += 1
            created = n.created + timedelta(seconds=90 + ids.rng.randrange(0, 60))
            yield {
                "apiVersion": "v1",
                "kind": "PersistentVolume",
                "metadata": {
                    "name": name,
                    "uid": ids.uid(),
                    "creationTimestamp": rfc3339(created),
                    "labels": {"storage.berth.dev/media": media},
                    "annotations": {"pv.kubernetes.io/provisioned-by": f"local-volume-provisioner-{n.name}-{n.uid}"},
                    "finalizers": ["kubernetes.io/pv-protection"],
                },
                "spec": {
                    "capacity": {"storage": format_size(size)},
                    "local": {"path": path},
                    "accessModes": ["ReadWriteOnce"],
                    "persistentVolumeReclaimPolicy": "Delete",
                    "storageClassName": cls,
                    "volumeMode": "Filesystem",
                    "nodeAffinity": _host_affinity(HOST, n.name),
                },
                "status": {"phase": "Available"},
            }


def zonal_pvs(p: Params, ids: Ids, created: datetime) -> Iterator[dict[str, Any]]:
    """Pre-provisioned zonal volumes, round-robin over the zones."""
    width = max(4, len(str(p.zonal_pvs)))
    for i in range(p.zonal_pvs):
        zone = zone_name(i % p.zones)
        yield {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {
                "name": f"zonal-{zone.removeprefix('zone-')}-{i + 1:0{width}d}",
                "uid": ids.uid(),
                "creationTimestamp": rfc3339(created + timedelta(seconds=ids.rng.randrange(0, 86400))),
                "annotations": {"pv.kubernetes.io/provisioned-by": DRIVER},
                "finalizers": ["kubernetes.io/pv-protection", "external-attacher/block-csi-example-com"],
            },
            "spec": {
                "capacity": {"storage": format_size(ids.weighted(p.pv_sizes))},
                "csi": {"driver": DRIVER, "volumeHandle": f"vol-{ids.hex(17)}", "fsType": "ext4"},
                "accessModes": ["ReadWriteOnce"],
                "persistentVolumeReclaimPolicy": "Retain",
                "storageClassName": ZONAL_SSD,
                "volumeMode": "Filesystem",
                "nodeAffinity": _host_affinity(ZONE, zone),
            },
            "status": {"phase": "Available"},
        }
