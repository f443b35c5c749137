"""Run a scenario on the real control plane and on berth, pod by pod, and compare.

For each pending pod, in order:
1. it is created behind a scheduling gate (kube-scheduler leaves it alone; the API server has done its
   admission: priority resolved, default tolerations added);
2. the cluster is read back from the API server, as `kubectl get -o json` would give it, and berth decides
   the pod on that snapshot with the same KubeSchedulerConfiguration (berth's library entry point, as
   `berth evaluate --pod` runs it), every node listed with its scores;
3. the gate is removed and kube-scheduler decides: the pod is bound, or gets PodScheduled=False with its
   FailedScheduling message, and a nominated node when it preempts. Preemption's victims go at once (grace
   period 0; any still terminating are deleted, as a kubelet would); the preemptor is then waited for on
   its node. A claim kube-scheduler chose to provision gets the PV a provisioner would make. An
   unschedulable pod that nominated nothing is deleted, so that it cannot be retried later and change what
   the next pods see (berth's evaluate decides each pod once);
4. the two are compared (Outcome.differences).

So both decide every pod on the same state: whatever kube decided before (ties broken at random, PVs
bound by the PV controller) is what berth reads next.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from berth.core.cache.snapshot import build_state
from berth.core.cache.state import ClusterState
from berth.core.config.kubeschedulerconfig import parse_config
from berth.core.scheduler.results import Decision
from berth.core.scheduler.schedule_one import Scheduler
from tests.e2e.cluster import Kube, Timeout, condition, wait_for
from tests.e2e.compare.scenario import GATE, Pending, Scenario
from tests.e2e.controlplane import ApiError

API = "kubescheduler.config.k8s.io/v1"
# berth's extras (docs/plugins.md): off, so that berth runs kube's profile exactly
BERTH_EXTRAS_OFF = {
    "multiPoint": {"disabled": [{"name": "LoadAwareScheduling"}]},
    "score": {"disabled": [{"name": "VolumeBinding"}]},  # kube 1.36: StorageCapacityScoring is off (alpha)
}

# What berth reads, as the API serves it: (path, apiVersion, kind)
LISTS = (
    ("/api/v1/namespaces", "v1", "Namespace"),
    ("/api/v1/nodes", "v1", "Node"),
    ("/apis/storage.k8s.io/v1/storageclasses", "storage.k8s.io/v1", "StorageClass"),
    ("/apis/storage.k8s.io/v1/csidrivers", "storage.k8s.io/v1", "CSIDriver"),
    ("/apis/storage.k8s.io/v1/csinodes", "storage.k8s.io/v1", "CSINode"),
    ("/apis/storage.k8s.io/v1/volumeattachments", "storage.k8s.io/v1", "VolumeAttachment"),
    ("/apis/storage.k8s.io/v1/csistoragecapacities", "storage.k8s.io/v1", "CSIStorageCapacity"),
    ("/apis/scheduling.k8s.io/v1/priorityclasses", "scheduling.k8s.io/v1", "PriorityClass"),
    ("/apis/policy/v1/poddisruptionbudgets", "policy/v1", "PodDisruptionBudget"),
    ("/api/v1/services", "v1", "Service"),
    ("/apis/apps/v1/replicasets", "apps/v1", "ReplicaSet"),
    ("/apis/apps/v1/statefulsets", "apps/v1", "StatefulSet"),
    ("/api/v1/persistentvolumes", "v1", "PersistentVolume"),
    ("/api/v1/persistentvolumeclaims", "v1", "PersistentVolumeClaim"),
    ("/api/v1/pods", "v1", "Pod"),
)
SELECTED_NODE = "volume.kubernetes.io/selected-node"
NO_PROVISIONER = "kubernetes.io/no-provisioner"
START = datetime(2026, 1, 1, tzinfo=UTC)  # running pods' status.startTime, a minute apart


def kube_config(profile: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The KubeSchedulerConfiguration kube-scheduler runs with (None: its defaults)."""
    if profile is None:
        return None
    return {"apiVersion": API, "kind": "KubeSchedulerConfiguration", "profiles": [dict(profile)]}


def berth_config(profile: Mapping[str, Any] | None) -> dict[str, Any]:
    """The same configuration for berth, with berth's extras disabled."""
    prof = copy.deepcopy(dict(profile or {"schedulerName": "default-scheduler"}))
    plugins = prof.setdefault("plugins", {})
    for point, sets in BERTH_EXTRAS_OFF.items():
        at = plugins.setdefault(point, {})
        at["disabled"] = [*at.get("disabled", []), *sets["disabled"]]
    return {"apiVersion": API, "kind": "KubeSchedulerConfiguration", "profiles": [prof]}


# ---- berth's side -------------------------------------------------------------------------------------


def snapshot(kube: Kube) -> list[dict[str, Any]]:
    """Every object berth reads, from the API server (kubectl get -o json's shape: kind and apiVersion set)."""
    out: list[dict[str, Any]] = []
    for path, version, kind in LISTS:
        for item in kube.api.get(path)["items"]:
            out.append({"apiVersion": version, "kind": kind, **item})
    return out


@dataclass
class Berth:
    scheduler: Scheduler
    state: ClusterState
    decision: Decision
    now: datetime

    def on(self, node: str) -> Decision:
        """berth's decision with the pod placed on this node (its PVs there)."""
        pod = self.state.pods[self.decision.pod]
        return self.scheduler.decide(pod, self.now, on=node).decision


def berth_decide(objects: list[dict[str, Any]], config: Mapping[str, Any], key: str) -> Berth:
    """The pod `key` (namespace/name) decided by berth on these objects, its scheduling gate taken off."""
    objs = []
    for obj in objects:
        meta = obj.get("metadata", {})
        if obj["kind"] == "Pod" and f"{meta.get('namespace')}/{meta.get('name')}" == key:
            obj = copy.deepcopy(obj)
            obj["spec"].pop("schedulingGates", None)
        objs.append(obj)
    cfg = parse_config(dict(config))
    state = ClusterState()
    scheduler = Scheduler(cfg.profiles[0].build(state))
    build_state(objs, state)
    now = datetime.now(UTC)
    return Berth(scheduler, state, scheduler.decide(state.pods[key], now).decision, now)


# ---- kube's side --------------------------------------------------------------------------------------


@dataclass
class KubeResult:
    bound: str | None = None  # the node it was bound to (after a preemption: where it went then)
    message: str = ""  # the first FailedScheduling message
    nominated: str = ""  # status.nominatedNodeName after a preemption
    victims: list[str] = field(default_factory=list)  # namespace/name
    volumes: dict[str, str] = field(default_factory=dict)  # claim namespace/name -> PV
    provisioned: list[str] = field(default_factory=list)  # claims kube-scheduler chose to provision


def setup(kube: Kube, sc: Scenario) -> None:
    for n in sc.nodes:
        base = n.name.removesuffix(f"-{kube.id}")
        alloc = {"cpu": n.cpu, "memory": n.memory, "pods": n.pods} | n.extra
        full = kube.node(
            base,
            n.cpu,
            n.memory,
            n.pods,
            labels=n.labels,
            taints=n.taints,
            capacity=alloc,
            images=n.images,
            unschedulable=n.unschedulable,
        )
        assert full == n.name
    for collection, obj in sc.cluster:
        kube.create_cluster_object(collection, obj)
    for plural, obj in sc.namespaced:
        status = obj.get("status")
        group = "policy/v1" if plural == "poddisruptionbudgets" else ""
        made = kube.api.create(kube.path(plural, group=group), {k: v for k, v in obj.items() if k != "status"})
        if status:
            kube.api.patch(kube.path(plural, made["metadata"]["name"], group=group) + "/status", {"status": status})
    for i, manifest in enumerate(sc.running):
        kube.api.create(kube.path("pods"), manifest)
        started(kube, manifest["metadata"]["name"], START + timedelta(minutes=i))
    # bound claims of the scenario (pre-bound PVs) are bound by the PV controller
    for plural, obj in sc.namespaced:
        if plural == "persistentvolumeclaims" and obj["spec"].get("volumeName"):
            wait_claim_bound(kube, obj["metadata"]["name"])
    time.sleep(1.0)  # kube-scheduler's informers catch up with the objects just made


def started(kube: Kube, name: str, at: datetime) -> None:
    """What a kubelet would write: Running, with a start time (preemption orders victims by it)."""
    stamp = at.strftime("%Y-%m-%dT%H:%M:%SZ")
    kube.api.patch(kube.path("pods", name) + "/status", {"status": {"phase": "Running", "startTime": stamp}})


def wait_claim_bound(kube: Kube, claim: str) -> str:
    def bound() -> str | None:
        pvc = kube.api.get(kube.path("persistentvolumeclaims", claim))
        if pvc["status"].get("phase") == "Bound":
            return str(pvc["spec"]["volumeName"])
        return None

    return wait_for(f"claim {claim} bound", bound)


def provision(kube: Kube, claim: str, classes: Mapping[str, Mapping[str, Any]]) -> bool:
    """The provisioner's part: a claim kube-scheduler chose a node for (selected-node) gets a PV there.
    A claim that does not exist (a scenario's pod may name one) has nothing to provision."""
    try:
        pvc = kube.api.get(kube.path("persistentvolumeclaims", claim))
    except ApiError as err:
        if err.status == 404:
            return False
        raise
    node = pvc["metadata"].get("annotations", {}).get(SELECTED_NODE)
    sc = classes.get(pvc["spec"].get("storageClassName", ""))
    if not node or pvc["spec"].get("volumeName") or sc is None or sc.get("provisioner") == NO_PROVISIONER:
        return False
    name = f"pvc-{pvc['metadata']['uid']}"
    hostname = {"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}
    kube.create_cluster_object(
        "/api/v1/persistentvolumes",
        {
            "metadata": {"name": name, "annotations": {"pv.kubernetes.io/provisioned-by": sc["provisioner"]}},
            "spec": {
                "capacity": {"storage": pvc["spec"]["resources"]["requests"]["storage"]},
                "accessModes": pvc["spec"]["accessModes"],
                "persistentVolumeReclaimPolicy": "Delete",
                "storageClassName": sc["metadata"]["name"],
                "csi": {"driver": sc["provisioner"], "volumeHandle": name},
                "claimRef": {"namespace": kube.ns, "name": claim, "uid": pvc["metadata"]["uid"]},
                "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [hostname]}]}},
            },
        },
    )
    return True


def pods_in(kube: Kube) -> dict[str, dict[str, Any]]:
    return {p["metadata"]["name"]: p for p in kube.api.get(kube.path("pods"))["items"]}


def kube_decide(kube: Kube, pending: Pending, classes: Mapping[str, Mapping[str, Any]], before: set[str]) -> KubeResult:
    """Take the gate off and wait for kube-scheduler's decision (and a preemption's aftermath)."""
    name = pending.pod["metadata"]["name"]
    claims = [v["persistentVolumeClaim"]["claimName"] for v in pending.pod["spec"].get("volumes", [])]
    out = KubeResult()
    kube.api.patch(kube.path("pods", name), {"spec": {"schedulingGates": None}})

    def decided() -> dict[str, Any] | None:
        pod = kube.get_pod(name)
        if pod["spec"].get("nodeName"):
            return pod
        cond = condition(pod, "PodScheduled")
        if cond and cond.get("status") == "False" and cond.get("reason") == "Unschedulable":
            return pod
        for claim in claims:
            if claim not in out.provisioned and provision(kube, claim, classes):
                out.provisioned.append(claim)
        return None

    pod = wait_for(f"kube-scheduler's decision on {name}", decided, describe=lambda: kube.describe(name))
    if pod["spec"].get("nodeName"):
        out.bound = pod["spec"]["nodeName"]
        gone = before - set(pods_in(kube))
        if gone:  # it preempted, and was bound before its Unschedulable status was seen
            out.victims = sorted(f"{kube.ns}/{v}" for v in gone)
            out.nominated = pod.get("status", {}).get("nominatedNodeName") or out.bound
            out.message = first_failed_scheduling(kube, name)
    else:
        out.message = condition(pod, "PodScheduled").get("message", "")  # type: ignore[union-attr]
        out.nominated = pod.get("status", {}).get("nominatedNodeName", "")
        if pending.nominated and out.nominated in (pending.nominated, ""):
            out.nominated = ""  # the scenario's own nomination, kept or cleared: the pod stays, pending
            return out
        if out.nominated:
            out.victims, out.bound = aftermath(kube, name, before)
        else:
            kube.api.delete(kube.path("pods", name), gracePeriodSeconds=0)
            wait_for(f"pod {name} deleted", lambda: None if kube.api.exists(kube.path("pods", name)) else True)
            return out
    if out.bound:
        started(kube, name, datetime.now(UTC))
        for claim in claims:
            out.volumes[f"{kube.ns}/{claim}"] = wait_claim_bound(kube, claim)
    return out


def first_failed_scheduling(kube: Kube, name: str) -> str:
    events = kube.events(name, "FailedScheduling")
    if not events:
        events = wait_for(f"FailedScheduling event of {name}", lambda: kube.events(name, "FailedScheduling") or None)
    events.sort(key=lambda e: e.get("eventTime") or e.get("firstTimestamp") or "")
    return str(events[0].get("message", ""))


def aftermath(kube: Kube, name: str, before: set[str]) -> tuple[list[str], str | None]:
    """After kube-scheduler nominated the pod: the victims it deleted (still terminating ones are deleted, as a
    kubelet would), and the node the pod is bound to then (None if it is not within the wait)."""
    victims: set[str] = set()

    def settled() -> str | None:
        now = pods_in(kube)
        for gone in before - set(now):
            victims.add(gone)
        for other, p in now.items():
            if other != name and p["metadata"].get("deletionTimestamp"):
                victims.add(other)
                kube.api.delete(kube.path("pods", other), gracePeriodSeconds=0)
        mine = now.get(name)
        return str(mine["spec"]["nodeName"]) if mine and mine["spec"].get("nodeName") else None

    try:
        bound: str | None = wait_for(f"preemptor {name} bound", settled, timeout=20)
    except Timeout:
        bound = None
    return sorted(f"{kube.ns}/{v}" for v in victims), bound


# ---- one scenario ---------------------------------------------------------------------------------------


@dataclass
class Outcome:
    pod: str
    kube: KubeResult
    berth: Decision
    differences: list[str]

    def line(self) -> str:
        k = self.kube
        said = f"bound {k.bound}" if k.bound and not k.nominated else f"{k.message!r}"
        if k.nominated:
            said += f" nominated {k.nominated} victims {k.victims}"
        return f"{self.pod}: kube {said}; berth {self.berth.status} {self.berth.node or self.berth.message!r}"


def run(kube: Kube, sc: Scenario, profile: Mapping[str, Any] | None) -> list[Outcome]:
    """The scenario on kube and on berth (with `profile`, kube's KubeSchedulerProfile; None: the default)."""
    from tests.e2e.compare.compare import differences

    setup(kube, sc)
    config = berth_config(profile)
    classes = {obj["metadata"]["name"]: obj for path, obj in sc.cluster if path.endswith("/storageclasses")}
    outcomes: list[Outcome] = []
    for pending in sc.pending:
        for claim in pending.claims:
            kube.api.create(kube.path("persistentvolumeclaims"), claim)
        before = set(pods_in(kube))
        manifest = copy.deepcopy(pending.pod)
        manifest["spec"]["schedulingGates"] = [{"name": GATE}]
        kube.api.create(kube.path("pods"), manifest)
        name = manifest["metadata"]["name"]
        if pending.nominated:
            status = {"status": {"nominatedNodeName": pending.nominated}}
            kube.api.patch(kube.path("pods", name) + "/status", status)
        berth = berth_decide(snapshot(kube), config, f"{kube.ns}/{name}")
        try:
            result = kube_decide(kube, pending, classes, before)
        except ApiError:
            raise
        found = differences(kube, berth, result)
        outcomes.append(Outcome(f"{kube.ns}/{name}", result, berth.decision, found))
    return outcomes
