"""berth on the real control plane: its CRDs and RBAC from deploy/, ServiceAccount kubeconfigs made with the
TokenRequest API, one object of every kind berth reads, and the objects berth holds after reading events (a
record, the cluster-events topic) or a fresh `kubectl get -o json` of the cluster (berth's snapshot reader)."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import aiohttp
import yaml

from berth.adapters.files.eventlog import read_events
from berth.adapters.files.snapshot import load_objects
from berth.adapters.kube.client import KINDS, Kind, KubeClient
from berth.adapters.kube.watch import Watcher
from berth.core.api.kinds import convert
from berth.core.api.watch import Event, encode_event, parse_event
from berth.core.cache.state import newer
from tests.e2e.cluster import WAIT, Kube, wait_for
from tests.e2e.controlplane import REPO, ControlPlane, _kubectl

T = TypeVar("T")
BERTH = str(Path(sys.executable).parent / "berth")
DEPLOY = REPO / "deploy"
# every ServiceAccount's rights: the watcher and the scorer's binder, and the buffer controller's status writes
RBAC_OVERLAYS = (DEPLOY / "overlays" / "binder", DEPLOY / "overlays" / "write-status")
RBAC_KINDS = ("Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding")
CRDS = ("capacitybuffers.autoscaling.x-k8s.io", "nodemetrics.slo.koordinator.sh")


# ---------------------------------------------------------------- deploy/: CRDs and RBAC


def install_crds(plane: ControlPlane) -> None:
    """deploy/crds as a user installs them (`kubectl apply -k`), served once Established."""
    plane.kubectl("apply", "-k", str(DEPLOY / "crds"))
    plane.kubectl("wait", "--for=condition=Established", "--timeout=30s", *(f"crd/{c}" for c in CRDS))


@functools.cache
def rbac_objects() -> list[dict[str, Any]]:
    """The Namespace, ServiceAccounts, Roles and bindings of the overlays, rendered as `kubectl kustomize` does."""
    seen: dict[tuple[str, str | None, str], dict[str, Any]] = {}
    for overlay in RBAC_OVERLAYS:
        out = subprocess.run(
            [_kubectl(), "kustomize", str(overlay)], capture_output=True, text=True, check=True, timeout=60
        )
        for doc in yaml.safe_load_all(out.stdout):
            if doc and doc["kind"] in RBAC_KINDS:
                meta = doc["metadata"]
                seen[(doc["kind"], meta.get("namespace"), meta["name"])] = doc
    return list(seen.values())


@dataclass
class Accounts:
    """berth's ServiceAccounts with the rights deploy/ grants them, and nothing else."""

    plane: ControlPlane
    namespace: str
    roles: list[str] = field(default_factory=list)  # kubectl names of the cluster-scoped objects, to delete

    def token(self, account: str, seconds: int = 3600) -> str:
        """A token for the account from the TokenRequest API (as kubelet gets one for a pod)."""
        path = f"/api/v1/namespaces/{self.namespace}/serviceaccounts/{account}/token"
        made = self.plane.client.create(path, {"spec": {"expirationSeconds": seconds}})
        token: str = made["status"]["token"]
        return token

    def kubeconfig(self, account: str, folder: Path) -> Path:
        """A kubeconfig that authenticates as the account with a bearer token."""
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "berth-e2e",
                    "cluster": {"server": self.plane.server, "certificate-authority": str(self.plane.pki / "ca.crt")},
                }
            ],
            "users": [{"name": account, "user": {"token": self.token(account)}}],
            "contexts": [{"name": account, "context": {"cluster": "berth-e2e", "user": account}}],
            "current-context": account,
        }
        path = folder / f"{account}.kubeconfig"
        path.write_text(json.dumps(config, indent=2))
        return path

    def can(self, account: str, verb: str, resource: str, group: str = "", subresource: str = "") -> bool:
        """What the authorizer answers for the account (a SubjectAccessReview, asked as admin)."""
        attributes = {"verb": verb, "resource": resource, "group": group, "subresource": subresource}
        review = {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SubjectAccessReview",
            "spec": {
                "user": f"system:serviceaccount:{self.namespace}:{account}",
                "groups": [
                    "system:serviceaccounts",
                    f"system:serviceaccounts:{self.namespace}",
                    "system:authenticated",
                ],
                "resourceAttributes": attributes,
            },
        }
        answer = self.plane.client.create("/apis/authorization.k8s.io/v1/subjectaccessreviews", review)
        return bool(answer["status"].get("allowed"))

    def remove(self) -> None:
        for name in self.roles:
            self.plane.kubectl("delete", "--ignore-not-found", "--wait=false", name, check=False)


def install_rbac(plane: ControlPlane) -> Accounts:
    objects = rbac_objects()
    namespaces = {o["metadata"]["name"] for o in objects if o["kind"] == "Namespace"}
    assert len(namespaces) == 1, namespaces
    plane.kubectl("apply", "-f", "-", input_text=json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))
    accounts = Accounts(plane, namespaces.pop())
    accounts.roles = [
        f"{o['kind'].lower()}/{o['metadata']['name']}"
        for o in objects
        if o["kind"] in ("ClusterRole", "ClusterRoleBinding", "Namespace")
    ]
    return accounts


# ---------------------------------------------------------------- one object of every kind


def every_kind(kube: Kube, node: str) -> dict[str, str]:
    """One object of each kind berth reads (the CRDs must be installed), named after the test; returns kind ->
    the object's key as berth keys events (kind/namespace/name)."""
    ns, i = kube.ns, kube.id
    api = kube.api
    sc, pv, prio = f"local-{i}", f"pv-{i}", f"prio-{i}"
    made: dict[str, str] = {"Node": f"Node//{node}", "Namespace": f"Namespace//{ns}"}

    def cluster(kind: str, collection: str, obj: dict[str, Any]) -> None:
        kube.create_cluster_object(collection, obj)
        made[kind] = f"{kind}//{obj['metadata']['name']}"

    def namespaced(kind: str, collection: str, obj: dict[str, Any]) -> dict[str, Any]:
        got: dict[str, Any] = api.create(collection.format(ns=ns), obj)
        made[kind] = f"{kind}/{ns}/{obj['metadata']['name']}"
        return got

    template = {
        "metadata": {"labels": {"app": "web"}},
        "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10", "resources": {"requests": {"cpu": "100m"}}}]},
    }  # fmt: skip
    selector = {"matchLabels": {"app": "web"}}
    cluster("StorageClass", "/apis/storage.k8s.io/v1/storageclasses", {
        "metadata": {"name": sc}, "provisioner": "kubernetes.io/no-provisioner", "volumeBindingMode": "WaitForFirstConsumer",
    })  # fmt: skip
    cluster("CSIDriver", "/apis/storage.k8s.io/v1/csidrivers", {
        "metadata": {"name": f"csi-{i}.example.com"}, "spec": {"attachRequired": False, "storageCapacity": True},
    })  # fmt: skip
    cluster("CSINode", "/apis/storage.k8s.io/v1/csinodes", {
        "metadata": {"name": node}, "spec": {"drivers": [{"name": f"csi-{i}.example.com", "nodeID": node, "allocatable": {"count": 8}}]},
    })  # fmt: skip
    cluster("PriorityClass", "/apis/scheduling.k8s.io/v1/priorityclasses", {"metadata": {"name": prio}, "value": 1000})
    cluster("PersistentVolume", "/api/v1/persistentvolumes", local_pv(pv, "10Gi", sc, node))
    cluster("VolumeAttachment", "/apis/storage.k8s.io/v1/volumeattachments", {
        "metadata": {"name": f"va-{i}"}, "spec": {"attacher": f"csi-{i}.example.com", "nodeName": node, "source": {"persistentVolumeName": pv}},
    })  # fmt: skip
    cluster("NodeMetric", "/apis/slo.koordinator.sh/v1alpha1/nodemetrics", {
        "apiVersion": "slo.koordinator.sh/v1alpha1", "kind": "NodeMetric", "metadata": {"name": node}, "spec": {},
    })  # fmt: skip
    api.patch(f"/apis/slo.koordinator.sh/v1alpha1/nodemetrics/{node}/status", {"status": {
        "updateTime": "2026-11-01T12:00:00Z", "nodeMetric": {"nodeUsage": {"resources": {"cpu": "500m", "memory": "1Gi"}}},
    }})  # fmt: skip
    namespaced("PodDisruptionBudget", "/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets", {
        "metadata": {"name": "web"}, "spec": {"maxUnavailable": 1, "selector": selector},
    })  # fmt: skip
    namespaced("CSIStorageCapacity", "/apis/storage.k8s.io/v1/namespaces/{ns}/csistoragecapacities", {
        "metadata": {"name": "cap"}, "storageClassName": sc, "capacity": "100Gi",
        "nodeTopology": {"matchLabels": {"kubernetes.io/hostname": node}},
    })  # fmt: skip
    namespaced("PersistentVolumeClaim", "/api/v1/namespaces/{ns}/persistentvolumeclaims", claim("data", "5Gi", sc))
    namespaced("ResourceQuota", "/api/v1/namespaces/{ns}/resourcequotas", {
        "metadata": {"name": "quota"}, "spec": {"hard": {"requests.cpu": "8"}},
    })  # fmt: skip
    namespaced(
        "PodTemplate", "/api/v1/namespaces/{ns}/podtemplates", {"metadata": {"name": "chunk"}, "template": template}
    )
    for kind, plural, extra in (
        ("Deployment", "deployments", {"replicas": 1}),
        ("ReplicaSet", "replicasets", {"replicas": 1}),
        ("StatefulSet", "statefulsets", {"replicas": 1, "serviceName": "web"}),
    ):
        namespaced(kind, f"/apis/apps/v1/namespaces/{{ns}}/{plural}", {
            "metadata": {"name": "web"}, "spec": {"selector": selector, "template": template, **extra},
        })  # fmt: skip
    namespaced("ReplicationController", "/api/v1/namespaces/{ns}/replicationcontrollers", {
        "metadata": {"name": "web"}, "spec": {"replicas": 1, "selector": {"app": "web"}, "template": template},
    })  # fmt: skip
    namespaced("Service", "/api/v1/namespaces/{ns}/services", {
        "metadata": {"name": "web"}, "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]},
    })  # fmt: skip
    job_template = {**template, "spec": {**template["spec"], "restartPolicy": "Never"}}
    namespaced(
        "Job", "/apis/batch/v1/namespaces/{ns}/jobs", {"metadata": {"name": "once"}, "spec": {"template": job_template}}
    )
    namespaced("CapacityBuffer", "/apis/autoscaling.x-k8s.io/v1beta1/namespaces/{ns}/capacitybuffers", {
        "apiVersion": "autoscaling.x-k8s.io/v1beta1", "kind": "CapacityBuffer",
        "metadata": {"name": "headroom"}, "spec": {"podTemplateRef": {"name": "chunk"}, "replicas": 2},
    })  # fmt: skip
    kube.pod("web-0", {"cpu": "100m"}, labels={"app": "web"}, spec={"priorityClassName": prio})
    made["Pod"] = f"Pod/{ns}/web-0"
    missing = {k.kind for k in KINDS} - set(made)
    assert not missing, f"every_kind makes no {sorted(missing)}"
    return made


def local_pv(name: str, size: str, storage_class: str, node: str) -> dict[str, Any]:
    """A local PersistentVolume on one node, as a static provisioner makes them."""
    term = {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}]}
    return {
        "metadata": {"name": name},
        "spec": {
            "capacity": {"storage": size},
            "accessModes": ["ReadWriteOnce"],
            "persistentVolumeReclaimPolicy": "Retain",
            "storageClassName": storage_class,
            "local": {"path": f"/mnt/{name}"},
            "nodeAffinity": {"required": {"nodeSelectorTerms": [term]}},
        },
    }


def claim(name: str, size: str, storage_class: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": storage_class,
            "resources": {"requests": {"storage": size}},
        },
    }


def topic(name: str) -> str:
    return f"e2e.{uuid.uuid4().hex[:8]}.{name}"


def storage_class(kube: Kube, name: str, provisioner: str = "kubernetes.io/no-provisioner") -> str:
    kube.create_cluster_object(
        "/apis/storage.k8s.io/v1/storageclasses",
        {"metadata": {"name": name}, "provisioner": provisioner, "volumeBindingMode": "WaitForFirstConsumer"},
    )
    return name


def phase(kube: Kube, plural: str, name: str, want: str) -> dict[str, Any] | None:
    path = f"/api/v1/{plural}/{name}" if plural == "persistentvolumes" else kube.path(plural, name)
    obj: dict[str, Any] = kube.api.get(path)
    return obj if obj.get("status", {}).get("phase") == want else None


# ---------------------------------------------------------------- what berth holds


Held = dict[str, Any]  # kind/namespace/name -> the object's model


def held_after(events: Iterable[Event]) -> Held:
    """The objects berth holds after applying these events as its state does: per object, the newest
    resourceVersion wins (stale events are ignored) and DELETED removes it."""
    out: Held = {}
    versions: dict[str, str] = {}
    for ev in events:
        if ev.model is None:
            continue
        key = ev.key.decode()
        rv = getattr(ev.model, "resource_version", "")
        last = versions.get(key, "")
        if last and rv and (rv == last or not newer(rv, last)):
            continue
        versions[key] = rv
        if ev.deleted:
            out.pop(key, None)
        else:
            out[key] = ev.model
    return out


def held_in_record(path: Path) -> Held:
    return held_after(read_events(str(path), strict=True))


def kubectl_kinds() -> str:
    """Every kind berth reads, as kubectl names them (plural.group)."""
    return ",".join(f"{k.plural}.{k.group}" if k.group else k.plural for k in KINDS)


def held_in_fresh_list(plane: ControlPlane, folder: Path) -> Held:
    """A fresh `kubectl get KINDS -A -o json` of the cluster, read through berth's snapshot reader."""
    out = plane.kubectl("get", kubectl_kinds(), "--all-namespaces", "-o", "json")
    path = folder / "fresh.json"
    path.write_text(out.stdout)
    held: Held = {}
    for raw in load_objects(str(path)):
        meta = raw["metadata"]
        held[f"{raw['kind']}/{meta.get('namespace', '')}/{meta['name']}"] = convert(raw)
    return held


def differences(got: Mapping[str, Any], want: Mapping[str, Any]) -> list[str]:
    """What differs between two Held maps, for an assertion message."""
    out = [f"missing {k}" for k in sorted(want.keys() - got.keys())]
    out += [f"extra {k}" for k in sorted(got.keys() - want.keys())]
    for k in sorted(got.keys() & want.keys()):
        if got[k] != want[k]:
            out.append(
                f"differs {k}: rv {getattr(got[k], 'resource_version', '?')} != {getattr(want[k], 'resource_version', '?')}"
            )
    return out


def wait_quiet(kube: Kube) -> None:
    """Until no namespace is being deleted (an earlier test's): the cluster then changes only as this test does."""

    def quiet() -> bool | None:
        items = kube.api.get("/api/v1/namespaces")["items"]
        return all(n.get("status", {}).get("phase") != "Terminating" for n in items) or None

    wait_for("namespaces of earlier tests deleted", quiet, timeout=60)


# ---------------------------------------------------------------- berth's clients, recorded


class Recording(KubeClient):
    """berth's KubeClient, keeping (method, path, query, HTTP status) of every request it made."""

    def __init__(self, api: Any, timeouts: Any = None) -> None:
        super().__init__(api, timeouts)
        self.made: list[tuple[str, str, list[tuple[str, str]], int]] = []

    async def _send(
        self,
        method: str,
        path: str,
        query: Iterable[tuple[str, str]],
        timeout: aiohttp.ClientTimeout,
        body: Any = None,
        content_type: str | None = None,
    ) -> aiohttp.ClientResponse:
        query = list(query)
        resp = await super()._send(method, path, query, timeout, body, content_type)
        self.made.append((method, path, query, resp.status))
        return resp

    def failed(self) -> list[str]:
        return [f"{m} {p} -> {s}" for m, p, _, s in self.made if not 200 <= s < 300]


async def connect_as(accounts: Accounts, account: str, folder: Path) -> Recording:
    client = await Recording.connect(str(accounts.kubeconfig(account, folder)))
    assert isinstance(client, Recording)
    return client


@contextlib.asynccontextmanager
async def following(
    client: KubeClient, handle: Callable[[Event], Awaitable[None]], kinds: Iterable[Kind] = KINDS
) -> AsyncIterator[Watcher]:
    """berth's watcher, watching, hands each event to `handle` as a consumer decodes it off the bus (encoded,
    then parsed), in order. At the end an event in hand is handled to its end (a bind under way finishes,
    as a service stopping on a signal finishes its batch), then the watch stops. What `handle` raises is
    raised here at the end."""
    watcher = Watcher(client, kinds)
    busy = asyncio.Lock()

    async def run() -> None:
        async with contextlib.aclosing(watcher.events()) as events:
            async for ev in events:
                async with busy:
                    await handle(parse_event(encode_event(ev)))

    task = asyncio.create_task(run(), name="following")
    try:
        yield watcher
    finally:
        async with busy:
            task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def eventually(
    what: str, probe: Callable[[], T | None], timeout: float = WAIT, describe: Callable[[], str] | None = None
) -> T:
    """wait_for in a thread: the event loop (berth's watcher and handlers) runs meanwhile."""
    return await asyncio.to_thread(wait_for, what, probe, timeout, describe)
