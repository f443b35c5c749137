"""Seeded random scenarios: 4-6 nodes in 2-3 zones (some tainted, one maybe cordoned, images), local PVs
(WaitForFirstConsumer) and zonal PVs bound to claims, priorities and PDBs, pods already running, and
PODS_PER_SCENARIO pending pods mixing requests, node selectors and affinity, tolerations, host ports,
topology spread, pod (anti-)affinity, new local claims, bound zonal claims and priorities. The same seed
gives the same scenario."""

from __future__ import annotations

import random
from typing import Any

from tests.e2e.compare.scenario import (
    HOST,
    ZONE,
    Names,
    NodeSpec,
    Pending,
    Scenario,
    image,
    node_affinity,
    pdb,
    pod,
    pod_term,
    preferred_node,
    priority_class,
    pv,
    pvc,
    spread,
    storage_class,
)

PODS_PER_SCENARIO = 10
APPS = ("web", "db", "cache")
IMAGES = ("registry.example.com/app:1", "registry.example.com/tools:2")


def generate(seed: int, n: Names) -> Scenario:
    rnd = random.Random(seed)
    zones = [f"z{i}" for i in range(1, rnd.randint(2, 3) + 1)]
    nodes: list[NodeSpec] = []
    for i in range(rnd.randint(4, 6)):
        name = n.node(f"n{i}")
        labels = {ZONE: zones[i % len(zones)], "disk": rnd.choice(("ssd", "hdd"))}
        taints = []
        if rnd.random() < 0.2:
            taints.append({"key": "dedicated", "value": rnd.choice(APPS), "effect": "NoSchedule"})
        if rnd.random() < 0.2:
            taints.append({"key": "spot", "value": "true", "effect": "PreferNoSchedule"})
        images = [image(img, rnd.choice((50, 300, 900))) for img in IMAGES if rnd.random() < 0.4]
        nodes.append(
            NodeSpec(
                name,
                cpu=rnd.choice(("2", "4", "8")),
                memory=rnd.choice(("4Gi", "8Gi", "16Gi")),
                pods=rnd.choice(("110", "110", "6")),
                labels=labels,
                taints=taints,
                images=images,
                unschedulable=rnd.random() < 0.08,
            )
        )
    names = [x.name for x in nodes]
    local, disk = n.cluster("local"), n.cluster("disk")
    low, high = n.cluster("low"), n.cluster("high")
    cluster: list[tuple[str, dict[str, Any]]] = [
        ("/apis/storage.k8s.io/v1/storageclasses", storage_class(local)),
        ("/apis/storage.k8s.io/v1/storageclasses", storage_class(disk, wait=False, provisioner="disk.example.com")),
        ("/apis/scheduling.k8s.io/v1/priorityclasses", priority_class(low, 100)),
        ("/apis/scheduling.k8s.io/v1/priorityclasses", priority_class(high, 1000)),
    ]
    for i in range(rnd.randint(2, 6)):
        size = rnd.choice(("5Gi", "10Gi", "20Gi"))
        cluster.append(("/api/v1/persistentvolumes", pv(n.cluster(f"lpv{i}"), size, local, nodes=[rnd.choice(names)])))
    namespaced: list[tuple[str, dict[str, Any]]] = []
    bound_claims = []
    for i in range(rnd.randint(0, 2)):
        zone, claim = rnd.choice(zones), f"zclaim-{i}"
        name = n.cluster(f"zpv{i}")
        cluster.append(("/api/v1/persistentvolumes", pv(name, "10Gi", disk, zone=zone, claim=(n.ns, claim))))
        namespaced.append(("persistentvolumeclaims", pvc(claim, "10Gi", disk, volume=name)))
        bound_claims.append(claim)
    for app in APPS:
        if rnd.random() < 0.4:
            namespaced.append(("poddisruptionbudgets", pdb(f"pdb-{app}", {"app": app}, rnd.choice((0, 1)))))

    running = []
    for i in range(rnd.randint(2, 7)):
        where = rnd.choice(names)
        app = rnd.choice(APPS)
        running.append(
            pod(
                f"run-{i}",
                rnd.choice(("100m", "500m", "1", "1500m")),
                rnd.choice((None, "512Mi", "2Gi")),
                node=where,
                labels={"app": app},
                priority_class=rnd.choice(("", low, low, high)),
            )
        )

    pending = []
    for i in range(PODS_PER_SCENARIO):
        app = rnd.choice(APPS)
        labels = {"app": app}
        spec: dict[str, Any] = {}
        claims: list[dict[str, Any]] = []
        uses: list[str] = []
        roll = rnd.random
        if roll() < 0.2:
            spec["nodeSelector"] = {ZONE: rnd.choice(zones)}
        elif roll() < 0.15:
            spec["affinity"] = node_affinity("disk", rnd.choice(("In", "NotIn")), "ssd")
        elif roll() < 0.2:
            spec["affinity"] = preferred_node(rnd.choice((10, 80)), ZONE, rnd.choice(zones))
        if roll() < 0.3:
            spec["tolerations"] = [{"key": "dedicated", "operator": "Equal", "value": app, "effect": "NoSchedule"}]
        if roll() < 0.25:
            hard = roll() < 0.6
            spec["topologySpreadConstraints"] = [spread(rnd.choice((ZONE, HOST)), labels, rnd.choice((1, 2)), hard)]
        if roll() < 0.25:
            kind = rnd.choice(("podAffinity", "podAntiAffinity"))
            term = pod_term({"app": rnd.choice(APPS)}, rnd.choice((ZONE, HOST)))
            if roll() < 0.6:
                spec["affinity"] = spec.get("affinity", {}) | {
                    kind: {"requiredDuringSchedulingIgnoredDuringExecution": [term]}
                }
            else:
                weighted = {"weight": rnd.choice((10, 60)), "podAffinityTerm": term}
                spec["affinity"] = spec.get("affinity", {}) | {
                    kind: {"preferredDuringSchedulingIgnoredDuringExecution": [weighted]}
                }
        if roll() < 0.25:
            claim = f"data-{i}"
            claims.append(pvc(claim, rnd.choice(("3Gi", "8Gi", "15Gi", "30Gi")), local))
            uses.append(claim)
        if bound_claims and roll() < 0.15:
            uses.append(bound_claims.pop(rnd.randrange(len(bound_claims))))
        ports = [rnd.choice((8080, 9090))] if roll() < 0.15 else []
        p = pod(
            f"p-{i}",
            rnd.choice(("100m", "250m", "500m", "1", "2", "3", None)),
            rnd.choice((None, "256Mi", "1Gi", "4Gi")),
            labels=labels,
            claims=uses,
            ports=ports,
            priority_class=rnd.choice(("", "", low, high)),
            image=rnd.choice((*IMAGES, "registry.k8s.io/pause:3.10")),
            **spec,
        )
        pending.append(Pending(p, claims))
    return Scenario(f"generated-{seed}", nodes, cluster=cluster, namespaced=namespaced, running=running,
                    pending=pending)  # fmt: skip
