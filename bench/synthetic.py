"""A synthetic cluster: nodes in zones, local PVs on every node, claims and pods."""

from __future__ import annotations

import random
from typing import Any

from berth.core.api.core.model import (
    ClaimRef,
    Node,
    PersistentVolume,
    PersistentVolumeClaim,
    Pod,
    PodVolume,
    StorageClass,
)
from berth.core.api.meta.quantity import NANO
from berth.core.api.meta.selectors import NodeSelector, NodeSelectorTerm, Requirement
from berth.core.cache.state import ClusterState

GI = 2**30
SIZES_GI = [10, 20, 50, 100, 200, 500, 1024]
HOST = "kubernetes.io/hostname"


def nodes(count: int, zones: int = 3) -> list[Node]:
    return [
        Node(
            name=f"node-{i:05d}",
            labels={HOST: f"node-{i:05d}", "topology.kubernetes.io/zone": f"zone-{i % zones}"},
            allocatable={"cpu": 32000, "memory": 128 * GI, "pods": 110},
        )
        for i in range(count)
    ]


def local_pvs(
    count: int, node_count: int, classes: tuple[str, ...] = ("local-ssd", "local-hdd"), seed: int = 1
) -> list[PersistentVolume]:
    rnd = random.Random(seed)
    out = []
    for i in range(count):
        host = f"node-{i % node_count:05d}"
        affinity = NodeSelector((NodeSelectorTerm(match_expressions=(Requirement(HOST, "In", (host,)),)),))
        out.append(
            PersistentVolume(
                name=f"pv-{i:06d}",
                resource_version="1",
                storage_class=classes[(i // node_count) % len(classes)],
                capacity=rnd.choice(SIZES_GI) * GI * NANO,
                access_modes=("ReadWriteOnce",),
                phase="Available",
                node_affinity=affinity,
            )
        )
    return out


def classes(names: tuple[str, ...] = ("local-ssd", "local-hdd")) -> list[StorageClass]:
    return [
        StorageClass(name=n, provisioner="kubernetes.io/no-provisioner", binding_mode="WaitForFirstConsumer")
        for n in names
    ]


def pending_pod(name: str, claims: list[tuple[str, str, int]]) -> tuple[Pod, list[PersistentVolumeClaim]]:
    """A pending pod and its unbound claims: (claim name, class, size in GiB)."""
    pvcs = [
        PersistentVolumeClaim(
            namespace="bench",
            name=c,
            uid=f"uid-{c}",
            storage_class=cls,
            request=size * GI * NANO,
            access_modes=("ReadWriteOnce",),
        )
        for c, cls, size in claims
    ]
    pod = Pod(
        namespace="bench",
        name=name,
        uid=f"uid-{name}",
        requests={"cpu": 500, "memory": GI},
        volumes=tuple(PodVolume(name=c, claim_name=c) for c, _, _ in claims),
    )
    return pod, pvcs


def apply_all(state: ClusterState, objs: list[Any]) -> None:
    for o in objs:
        state.apply(o)


def claimed(pv: PersistentVolume, claim: PersistentVolumeClaim) -> PersistentVolume:
    import msgspec

    return msgspec.structs.replace(pv, claim_ref=ClaimRef(claim.namespace, claim.name, claim.uid))
