"""Hand-written scenarios: each default plugin's main cases, filter and score, on a few nodes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.e2e.compare.scenario import (
    HOST,
    ZONE,
    Names,
    NodeSpec,
    Pending,
    Scenario,
    csi_node,
    csi_pv,
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
    volume_attachment,
)

SC = "/apis/storage.k8s.io/v1/storageclasses"
PV = "/api/v1/persistentvolumes"
PC = "/apis/scheduling.k8s.io/v1/priorityclasses"
PVC = "persistentvolumeclaims"
PDB = "poddisruptionbudgets"
CSINODE = "/apis/storage.k8s.io/v1/csinodes"
VA = "/apis/storage.k8s.io/v1/volumeattachments"


def fit(n: Names) -> Scenario:
    """NodeResourcesFit: scores, Insufficient (preemption finds no victims), over a node's whole allocatable
    (preemption cannot help), Too many pods, an extended resource."""
    a, b, c = n.node("a"), n.node("b"), n.node("c")
    nodes = [
        NodeSpec(a, cpu="2", memory="4Gi"),
        NodeSpec(b, cpu="4", memory="8Gi", extra={"example.com/gpu": "2"}),
        NodeSpec(c, cpu="1", memory="2Gi", pods="2"),
    ]
    running = [
        pod("r-b", "3", "1Gi", node=b),
        pod("r-c1", "100m", node=c),
        pod("r-c2", "100m", node=c),
    ]
    pending = [
        pod("small", "500m", "512Mi"),
        pod("mem", "100m", "3Gi"),
        pod("gpu", "100m", extra={"example.com/gpu": "1"}),
        pod("gpu-too-many", "100m", extra={"example.com/gpu": "3"}),
        pod("over-allocatable", "5"),
        pod("no-room", "1500m"),
        pod("no-requests", None),
        pod("big-mem", "100m", "7Gi"),
    ]
    return Scenario("fit", nodes, running=running, pending=[Pending(p) for p in pending])


def taints(n: Names) -> Scenario:
    """TaintToleration: NoSchedule and NoExecute filter, PreferNoSchedule scores; NodeUnschedulable."""
    a, b, c, d = n.node("a"), n.node("b"), n.node("c"), n.node("d")
    nodes = [
        NodeSpec(a, taints=[{"key": "dedicated", "value": "db", "effect": "NoSchedule"}]),
        NodeSpec(b, taints=[{"key": "spot", "value": "true", "effect": "PreferNoSchedule"}]),
        NodeSpec(c, taints=[{"key": "drain", "effect": "NoExecute"}]),
        NodeSpec(d, unschedulable=True),
    ]
    tol_db = [{"key": "dedicated", "operator": "Equal", "value": "db", "effect": "NoSchedule"}]
    tol_all = [{"operator": "Exists"}]
    pending = [
        pod("plain"),
        pod("plain-2"),
        pod("db", tolerations=tol_db),
        pod("db-on-a", tolerations=tol_db, nodeSelector={HOST: a}),
        pod("on-a", nodeSelector={HOST: a}),
        pod("on-d", nodeSelector={HOST: d}),
        pod("everything", tolerations=tol_all, nodeSelector={HOST: d}),
        pod("nowhere", "100", tolerations=tol_all),
    ]
    return Scenario("taints", nodes, pending=[Pending(p) for p in pending])


def affinity(n: Names) -> Scenario:
    """NodeAffinity: nodeSelector, required In / NotIn / Exists / Gt, preferred weights (scores)."""
    a, b, c = n.node("a"), n.node("b"), n.node("c")
    nodes = [
        NodeSpec(a, labels={ZONE: "z1", "disk": "ssd", "cores": "8"}),
        NodeSpec(b, labels={ZONE: "z1", "disk": "hdd", "cores": "16"}),
        NodeSpec(c, labels={ZONE: "z2", "cores": "4"}),
    ]
    pending = [
        pod("ssd", nodeSelector={"disk": "ssd"}),
        pod("z2", affinity=node_affinity(ZONE, "In", "z2")),
        pod("not-z1", affinity=node_affinity(ZONE, "NotIn", "z1")),
        pod("has-disk", affinity=node_affinity("disk", "Exists")),
        pod("many-cores", affinity=node_affinity("cores", "Gt", "10")),
        pod("prefers-hdd", affinity=preferred_node(10, "disk", "hdd")),
        pod("prefers-z2", affinity=preferred_node(50, ZONE, "z2")),
        pod("nvme", nodeSelector={"disk": "nvme"}),
    ]
    return Scenario("affinity", nodes, pending=[Pending(p) for p in pending])


def ports(n: Names) -> Scenario:
    """NodePorts: a host port in use on a node; the last pod finds none free."""
    a, b = n.node("a"), n.node("b")
    nodes = [NodeSpec(a), NodeSpec(b)]
    running = [pod("web-0", node=a, ports=[8080])]
    pending = [pod(f"web-{i}", ports=[8080]) for i in range(1, 3)] + [pod("other", ports=[9090])]
    return Scenario("ports", nodes, running=running, pending=[Pending(p) for p in pending])


def spreading(n: Names) -> Scenario:
    """PodTopologySpread: DoNotSchedule by zone and hostname, ScheduleAnyway, a node without the zone label."""
    a, b, c, d = n.node("a"), n.node("b"), n.node("c"), n.node("d")
    nodes = [
        NodeSpec(a, labels={ZONE: "z1"}),
        NodeSpec(b, labels={ZONE: "z1"}),
        NodeSpec(c, labels={ZONE: "z2"}),
        NodeSpec(d),
    ]
    web = {"app": "web"}
    running = [pod("web-0", node=a, labels=web), pod("web-1", node=b, labels=web)]
    pending = [
        pod("web-2", labels=web, topologySpreadConstraints=[spread(ZONE, web)]),
        pod("web-3", labels=web, topologySpreadConstraints=[spread(ZONE, web)]),
        pod("web-4", labels=web, topologySpreadConstraints=[spread(HOST, web)]),
        pod("web-5", labels=web, topologySpreadConstraints=[spread(ZONE, web, hard=False)]),
        pod("web-6", labels=web, topologySpreadConstraints=[spread(ZONE, web), spread(HOST, web)]),
        pod("api-0", labels={"app": "api"}, topologySpreadConstraints=[spread(HOST, {"app": "api"}, hard=False)]),
    ]
    return Scenario("spreading", nodes, running=running, pending=[Pending(p) for p in pending])


def interpod(n: Names) -> Scenario:
    """InterPodAffinity: required affinity by zone, anti-affinity by hostname, existing pods' anti-affinity,
    preferred terms (scores)."""
    a, b, c = n.node("a"), n.node("b"), n.node("c")
    nodes = [NodeSpec(a, labels={ZONE: "z1"}), NodeSpec(b, labels={ZONE: "z1"}), NodeSpec(c, labels={ZONE: "z2"})]
    db, cache = {"app": "db"}, {"app": "cache"}
    anti_cache = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [pod_term(cache, HOST)]}}
    running = [
        pod("db-0", node=a, labels=db),
        pod("loner", node=c, labels={"app": "loner"}, affinity=anti_cache),
    ]
    near_db = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [pod_term(db, ZONE)]}}
    away_db = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [pod_term(db, HOST)]}}
    prefer_db = {
        "podAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 50, "podAffinityTerm": pod_term(db, HOST)}]
        }
    }
    pending = [
        pod("app-0", affinity=near_db),
        pod("cache-0", labels=cache, affinity=away_db),
        pod("cache-1", labels=cache, affinity=anti_cache | near_db),
        pod("cache-2", labels=cache, affinity=anti_cache),
        pod("fan", affinity=prefer_db),
        pod("nowhere", affinity=node_affinity(ZONE, "In", "z3")),
        pod(
            "needs-queue-2",
            affinity={
                "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [pod_term({"app": "q"}, ZONE)]}
            },
        ),
    ]
    return Scenario("interpod", nodes, running=running, pending=[Pending(p) for p in pending])


def local_volumes(n: Names) -> Scenario:
    """VolumeBinding: local PVs with WaitForFirstConsumer (the smallest that fits, on its node), a claim no PV
    fits, an unbound Immediate claim, a missing claim (kube: `... not found. not found`)."""
    a, b, c = n.node("a"), n.node("b"), n.node("c")
    nodes = [NodeSpec(a), NodeSpec(b), NodeSpec(c)]
    local, now = n.cluster("local"), n.cluster("now")
    cluster = [(SC, storage_class(local)), (SC, storage_class(now, wait=False))]
    for name, size, on in (("a5", "5Gi", a), ("a20", "20Gi", a), ("b10", "10Gi", b), ("b10x", "10Gi", b)):
        cluster.append((PV, pv(n.cluster(f"pv-{name}"), size, local, nodes=[on])))
    namespaced = [(PVC, pvc("waiting", "1Gi", now))]
    pending = [
        Pending(pod("db-0", claims=["data-0"]), [pvc("data-0", "8Gi", local)]),
        Pending(pod("db-1", claims=["data-1"]), [pvc("data-1", "8Gi", local)]),
        Pending(pod("db-2", claims=["data-2"]), [pvc("data-2", "4Gi", local)]),
        Pending(pod("db-3", claims=["data-3"]), [pvc("data-3", "15Gi", local)]),
        Pending(pod("db-4", claims=["data-4"]), [pvc("data-4", "50Gi", local)]),
        Pending(pod("imm", claims=["waiting"])),
        Pending(pod("lost", claims=["missing"])),
    ]
    return Scenario("local-volumes", nodes, cluster=cluster, namespaced=namespaced, pending=pending)


def zones(n: Names) -> Scenario:
    """VolumeZone: a bound PV labelled with a zone (no node affinity) keeps its pod in that zone; VolumeBinding:
    a bound PV whose node affinity names a zone."""
    a, b, c = n.node("a"), n.node("b"), n.node("c")
    nodes = [NodeSpec(a, labels={ZONE: "z1"}), NodeSpec(b, labels={ZONE: "z2"}), NodeSpec(c, labels={ZONE: "z2"})]
    disk, ns = n.cluster("disk"), n.ns
    labelled = pv(n.cluster("pv-z1"), "10Gi", disk, zone="z1", claim=(ns, "z1-claim"))
    del labelled["spec"]["nodeAffinity"]
    cluster = [
        (SC, storage_class(disk, wait=False, provisioner="disk.example.com")),
        (PV, labelled),
        (PV, pv(n.cluster("pv-z2"), "10Gi", disk, zone="z2", claim=(ns, "z2-claim"))),
    ]
    namespaced = [
        (PVC, pvc("z1-claim", "10Gi", disk, volume=n.cluster("pv-z1"))),
        (PVC, pvc("z2-claim", "10Gi", disk, volume=n.cluster("pv-z2"))),
    ]
    pending = [
        Pending(pod("in-z1", claims=["z1-claim"])),
        Pending(pod("in-z2", claims=["z2-claim"])),
        Pending(pod("z1-on-b", claims=["z1-claim"], nodeSelector={HOST: b})),
        Pending(pod("z2-on-a", claims=["z2-claim"], nodeSelector={HOST: a})),
    ]
    return Scenario("zones", nodes, cluster=cluster, namespaced=namespaced, pending=pending)


def preemption(n: Names) -> Scenario:
    """DefaultPreemption: priorities, PDBs, preemptionPolicy Never, a pod too big for any node."""
    a, b, c = n.node("a"), n.node("b"), n.node("c")
    nodes = [NodeSpec(a, cpu="2"), NodeSpec(b, cpu="2"), NodeSpec(c, cpu="2")]
    low, mid, high = n.cluster("low"), n.cluster("mid"), n.cluster("high")
    cluster = [(PC, priority_class(low, 100)), (PC, priority_class(mid, 500)), (PC, priority_class(high, 1000))]
    never = n.cluster("never")
    cluster.append((PC, priority_class(never, 2000) | {"preemptionPolicy": "Never"}))
    running = [
        pod("low-a", "1500m", node=a, priority_class=low, labels={"app": "guarded"}),
        pod("low-b1", "700m", node=b, priority_class=low),
        pod("low-b2", "700m", node=b, priority_class=low),
        pod("mid-c", "1500m", node=c, priority_class=mid),
    ]
    namespaced = [(PDB, pdb("guard", {"app": "guarded"}, 0))]
    pending = [
        pod("same-prio", "1", priority_class=low),
        pod("never", "1", priority_class=never),
        pod("high-0", "1", priority_class=high),
        pod("high-1", "1", priority_class=high),
        pod("huge", "3", priority_class=high),
        pod("mid-0", "1800m", priority_class=mid),
    ]
    return Scenario("preemption", nodes, cluster=cluster, namespaced=namespaced, running=running,
                    pending=[Pending(p) for p in pending])  # fmt: skip


def scoring(n: Names) -> Scenario:
    """NodeResourcesBalancedAllocation and ImageLocality scores (and NodeResourcesFit's)."""
    a, b, c = n.node("a"), n.node("b"), n.node("c")
    big = "registry.example.com/big:1.0"
    nodes = [
        NodeSpec(a, cpu="4", memory="16Gi", images=[image(big, 800)]),
        NodeSpec(b, cpu="8", memory="8Gi", images=[image(big, 800)]),
        NodeSpec(c, cpu="4", memory="8Gi"),
    ]
    running = [pod("heavy-cpu", "3", "1Gi", node=c), pod("heavy-mem", "500m", "6Gi", node=b)]
    pending = [
        pod("img-0", "200m", "256Mi", image=big),
        pod("balanced", "1", "4Gi"),
        pod("cpu-ish", "2", "512Mi"),
        pod("img-1", "1", "1Gi", image=big),
        pod("mem-ish", "100m", "3Gi"),
    ]
    return Scenario("scoring", nodes, running=running, pending=[Pending(p) for p in pending])


def node_names(*names: str) -> dict[str, Any]:
    """Required node affinity on metadata.name, one term per node (as a DaemonSet's pods have it)."""
    terms = [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [n]}]} for n in names]
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}}


def node_sets(n: Names) -> Scenario:
    """NodeAffinity's PreFilter node set (metadata.name): kube evaluates only the nodes it names and counts
    the others as `node(s) didn't satisfy plugin(s) [NodeAffinity]`; names that conflict are a PreFilter
    rejection (`pod affinity terms conflict`)."""
    a, b, c = n.node("a"), n.node("b"), n.node("c")
    nodes = [NodeSpec(a, cpu="1"), NodeSpec(b), NodeSpec(c, unschedulable=True)]
    both = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [v]} for v in (a, b)]}
    conflict = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [both]}}}
    pending = [
        pod("ds-a", "2", affinity=node_names(a)),  # Insufficient cpu on a; b and c left out
        pod("ds-b", affinity=node_names(b)),
        pod("ds-c", affinity=node_names(c)),  # cordoned
        pod("ds-a-or-c", "2", affinity=node_names(a, c)),
        pod("ds-gone", affinity=node_names(n.node("gone"))),  # no such node: every node left out
        pod("ds-conflict", affinity=conflict),
    ]
    return Scenario("node-sets", nodes, pending=[Pending(p) for p in pending])


def nominated_skip(n: Names) -> Scenario:
    """A pod nominated to a node (preemptionPolicy Never keeps its nomination while it stays unschedulable)
    with required anti-affinity against app=web: InterPodAffinity's PreFilter skips a web pod that no bound
    pod's anti-affinity matches, and kube then ignores the nominated pod's anti-affinity on that node; once a
    bound pod's anti-affinity matches web pods, the nominated pod's counts."""
    a, b = n.node("a"), n.node("b")
    nodes = [NodeSpec(a), NodeSpec(b)]
    keeper = n.cluster("keeper")
    cluster = [(PC, priority_class(keeper, 1000) | {"preemptionPolicy": "Never"})]
    web = {"app": "web"}
    anti_web = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [pod_term(web, HOST)]}}
    pending = [
        Pending(pod("nom", priority_class=keeper, affinity=anti_web, nodeSelector={"disk": "none"}), nominated=a),
        Pending(pod("web-0", labels=web, nodeSelector={HOST: a})),
        Pending(pod("guard", labels={"app": "guard"}, affinity=anti_web, nodeSelector={HOST: b})),
        Pending(pod("web-1", labels=web, nodeSelector={HOST: a})),
    ]
    return Scenario("nominated-skip", nodes, cluster=cluster, pending=pending)


def nominated_first(n: Names) -> Scenario:
    """evaluateNominatedNode: a pod whose status.nominatedNodeName still fits there goes there unscored (b would
    score higher); one that no longer fits there, or names a node that is gone, is scheduled as any other."""
    a, b = n.node("a"), n.node("b")
    nodes = [NodeSpec(a, cpu="2"), NodeSpec(b, cpu="8")]
    running = [pod("half", "1", node=a)]
    pending = [
        Pending(pod("fits", "500m"), nominated=a),
        Pending(pod("too-big", "1"), nominated=a),
        Pending(pod("gone", "100m"), nominated=n.node("gone")),
        Pending(pod("plain", "100m")),
    ]
    return Scenario("nominated-first", nodes, running=running, pending=pending)


def nominations_cleared(n: Names) -> Scenario:
    """prepareCandidate: a preemption on a node clears the nominations of lower-priority pods nominated there,
    so a later low-priority pod no longer sees them on it."""
    a = n.node("a")
    nodes = [NodeSpec(a, cpu="2")]
    low, mid, high = n.cluster("low"), n.cluster("mid-never"), n.cluster("high")
    cluster = [
        (PC, priority_class(low, 100)),
        (PC, priority_class(mid, 500) | {"preemptionPolicy": "Never"}),
        (PC, priority_class(high, 1000)),
    ]
    running = [pod("victim", "1", node=a, priority_class=low)]
    pending = [
        # nominated to a, and kept there while it fits nowhere (preemptionPolicy Never)
        Pending(pod("waiting", "1500m", priority_class=mid, nodeSelector={"disk": "none"}), nominated=a),
        Pending(pod("tiny-0", "400m", priority_class=low)),  # waiting's nomination takes a's room
        Pending(pod("high", "1500m", priority_class=high)),  # preempts victim on a: waiting's nomination goes
        Pending(pod("tiny-1", "400m", priority_class=low)),
    ]
    return Scenario("nominations-cleared", nodes, cluster=cluster, running=running, pending=pending)


def volume_limits(n: Names) -> Scenario:
    """NodeVolumeLimits as kube 1.36: a's attach limit is 3 and two VolumeAttachments hold two of them, with no
    pod; b's limit is 1 and a running pod already uses 2 volumes there (over it; one also has a VolumeAttachment,
    which that pod covers). "quirk" brings an attached volume and a new one: kube counts the attached one twice on
    a (2 + 2 > 3). "one-new" fits a (2 + 1). "shares-b" brings only a volume b's pod uses: b is over its limit but
    the pod adds nothing there, so it fits (issue 37 item 5), where a is now full. "new" fits nowhere."""
    a, b = n.node("a"), n.node("b")
    nodes = [NodeSpec(a), NodeSpec(b)]
    driver, csi, ns = "disk.example.com", n.cluster("csi"), n.ns
    cluster: list[tuple[str, dict[str, Any]]] = [
        (SC, storage_class(csi, wait=False, provisioner=driver)),
        (CSINODE, csi_node(a, driver, 3)),
        (CSINODE, csi_node(b, driver, 1)),
    ]
    namespaced = []
    for i in range(1, 7):
        vol = n.cluster(f"vol-{i}")
        cluster.append((PV, csi_pv(vol, "1Gi", csi, driver, (ns, f"c{i}"))))
        namespaced.append((PVC, pvc(f"c{i}", "1Gi", csi, volume=vol)))
    for i, on in ((1, a), (2, a), (3, b)):
        cluster.append((VA, volume_attachment(n.cluster(f"va-{i}"), on, driver, n.cluster(f"vol-{i}"))))
    running = [pod("r-b", node=b, claims=["c3", "c4"])]
    pending = [
        pod("quirk", claims=["c1", "c5"]),
        pod("one-new", claims=["c5"]),
        pod("shares-b", claims=["c3"]),
        pod("new", claims=["c6"]),
    ]
    return Scenario("volume-limits", nodes, cluster=cluster, namespaced=namespaced, running=running,
                    pending=[Pending(p) for p in pending])  # fmt: skip


HANDWRITTEN: dict[str, Callable[[Names], Scenario]] = {
    "fit": fit,
    "taints": taints,
    "affinity": affinity,
    "ports": ports,
    "spreading": spreading,
    "interpod": interpod,
    "local-volumes": local_volumes,
    "zones": zones,
    "preemption": preemption,
    "scoring": scoring,
    "node-sets": node_sets,
    "nominated-skip": nominated_skip,
    "nominated-first": nominated_first,
    "nominations-cleared": nominations_cleared,
    "volume-limits": volume_limits,
}


def fit_scores(n: Names) -> Scenario:
    """NodeResourcesFit's LeastAllocated with pods that name no memory (kube counts 200Mi for them)."""
    a, b = n.node("a"), n.node("b")
    nodes = [NodeSpec(a, cpu="2", memory="16Gi"), NodeSpec(b, cpu="2", memory="16Gi")]
    running = [
        pod("r1", "500m", node=a),
        pod("r2", "100m", "512Mi", node=a),
        pod("r3", "1", node=a),
        pod("r4", "1", node=b),
    ]
    pending = [pod("p", "250m", "4Gi")]
    return Scenario("fit-scores", nodes, running=running, pending=[Pending(p) for p in pending])


HANDWRITTEN["fit-scores"] = fit_scores
