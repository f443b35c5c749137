"""One test's view of the real control plane: its own namespace, the cluster-scoped objects it made (Nodes,
PersistentVolumes, StorageClasses) removed again at its end, and waits on what kube-scheduler and the
controllers did. Nodes are API objects (no kubelet): capacity, allocatable, labels, taints and a Ready=True
condition, the status written through the status subresource as a kubelet would."""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, TypeVar

from tests.e2e.controlplane import ApiError, Client, ControlPlane

T = TypeVar("T")
WAIT = 30.0  # seconds: scheduling, binding and the PV controller take well under one here
POLL = 0.05
PAUSE = "registry.k8s.io/pause:3.10"  # never pulled: no kubelet runs


class Timeout(AssertionError):
    pass


def wait_for(
    what: str, probe: Callable[[], T | None], timeout: float = WAIT, describe: Callable[[], str] | None = None
) -> T:
    """probe() until it returns something other than None; AssertionError (with describe()) after timeout."""
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value is not None:
            return value
        if time.monotonic() > deadline:
            raise Timeout(f"{what}: not after {timeout:.0f} s" + (f"\n{describe()}" if describe else ""))
        time.sleep(POLL)


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def condition(obj: Mapping[str, Any], kind: str) -> dict[str, Any] | None:
    for cond in obj.get("status", {}).get("conditions") or []:
        if cond.get("type") == kind:
            return dict(cond)
    return None


class Kube:
    """Made per test by the `kube` fixture; cleanup() runs at the test's end."""

    def __init__(self, plane: ControlPlane, test_name: str) -> None:
        self.plane = plane
        self.api: Client = plane.client
        self.id = uuid.uuid4().hex[:6]
        slug = re.sub(r"[^a-z0-9]+", "-", test_name.lower()).strip("-")[:40].strip("-")
        self.ns = f"{slug}-{self.id}"
        self.cluster_objects: list[str] = []  # paths of cluster-scoped objects this test made, to delete

    # ---- setup and teardown

    def setup(self) -> None:
        leftover = [n["metadata"]["name"] for n in self.api.get("/api/v1/nodes")["items"]]
        assert not leftover, f"nodes left by an earlier test: {leftover}"
        self.api.create("/api/v1/namespaces", {"metadata": {"name": self.ns}})
        # the ServiceAccount admission plugin refuses pods until the namespace's default account exists
        wait_for(
            f"serviceaccount {self.ns}/default",
            lambda: self.api.exists(self.path("serviceaccounts", "default")) or None,
        )

    def cleanup(self) -> None:
        """Pods go at once (no kubelet finishes a graceful deletion), then the namespace and the cluster-scoped
        objects; Nodes are waited for, so the next test's scheduler sees only its own."""
        if self.api.exists(f"/api/v1/namespaces/{self.ns}"):
            self.api.delete(self.path("pods"), gracePeriodSeconds=0)
            self.api.delete(f"/api/v1/namespaces/{self.ns}")
        for path in reversed(self.cluster_objects):
            self.api.delete(path)
        for path in self.cluster_objects:
            if path.startswith("/api/v1/nodes/"):
                self._wait_gone(path)

    def _wait_gone(self, path: str) -> None:
        wait_for(f"{path} deleted", lambda: None if self.api.exists(path) else True)

    # ---- paths and generic objects

    def path(self, plural: str, name: str = "", group: str = "") -> str:
        """The path of a namespaced resource in this test's namespace (group "": core/v1)."""
        base = f"/apis/{group}" if group else "/api/v1"
        return f"{base}/namespaces/{self.ns}/{plural}" + (f"/{name}" if name else "")

    def create_cluster_object(self, collection: str, obj: Mapping[str, Any]) -> dict[str, Any]:
        """Create a cluster-scoped object (POST to collection), deleted at the test's end."""
        made: dict[str, Any] = self.api.create(collection, obj)
        self.cluster_objects.append(f"{collection}/{made['metadata']['name']}")
        return made

    # ---- nodes

    def node(
        self,
        name: str,
        cpu: str = "1",
        memory: str = "4Gi",
        pods: str = "110",
        *,
        labels: Mapping[str, str] | None = None,
        taints: Sequence[Mapping[str, str]] = (),
        allocatable: Mapping[str, str] | None = None,
        capacity: Mapping[str, str] | None = None,
        images: Sequence[Mapping[str, Any]] = (),
        unschedulable: bool = False,
    ) -> str:
        """A Node named name-<test id>, Ready, with kubernetes.io/hostname set; allocatable defaults to capacity;
        images as a kubelet lists them in status.images ({names, sizeBytes}); unschedulable cordons it.
        Returns its name."""
        full = f"{name}-{self.id}"
        cap = {"cpu": cpu, "memory": memory, "pods": pods} | dict(capacity or {})
        alloc = cap | dict(allocatable or {})
        meta = {
            "name": full,
            "labels": {"kubernetes.io/hostname": full, "kubernetes.io/os": "linux"} | dict(labels or {}),
        }
        spec: dict[str, Any] = {"taints": list(taints)} | ({"unschedulable": True} if unschedulable else {})
        self.create_cluster_object("/api/v1/nodes", {"metadata": meta, "spec": spec})
        now = _now()
        ready = {
            "type": "Ready",
            "status": "True",
            "reason": "KubeletReady",
            "message": "berth e2e: a Node object without a kubelet",
            "lastHeartbeatTime": now,
            "lastTransitionTime": now,
        }
        status = {"capacity": cap, "allocatable": alloc, "conditions": [ready]} | (
            {"images": list(images)} if images else {}
        )
        self.api.patch(f"/api/v1/nodes/{full}/status", {"status": status})
        return full

    # ---- pods

    def pod(
        self,
        name: str,
        requests: Mapping[str, str] | None = None,
        *,
        claims: Sequence[str] = (),
        spec: Mapping[str, Any] | None = None,
        labels: Mapping[str, str] | None = None,
    ) -> dict[str, Any]:
        """A pod of one pause container with these requests, mounting these PVCs; spec overrides the rest."""
        container: dict[str, Any] = {"name": "c", "image": PAUSE}
        if requests:
            container["resources"] = {"requests": dict(requests)}
        if claims:
            container["volumeMounts"] = [{"name": f"v{i}", "mountPath": f"/v{i}"} for i in range(len(claims))]
        body: dict[str, Any] = {"containers": [container], "terminationGracePeriodSeconds": 0}
        if claims:
            body["volumes"] = [
                {"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}} for i, c in enumerate(claims)
            ]
        body |= dict(spec or {})
        meta = {"name": name, "labels": dict(labels or {})}
        made: dict[str, Any] = self.api.create(self.path("pods"), {"metadata": meta, "spec": body})
        return made

    def get_pod(self, name: str) -> dict[str, Any]:
        pod: dict[str, Any] = self.api.get(self.path("pods", name))
        return pod

    def events(self, name: str, reason: str | None = None) -> list[dict[str, Any]]:
        """core/v1 Events about the object called name in this namespace (kube-scheduler writes events.k8s.io/v1;
        the apiserver serves them in both)."""
        selector = f"involvedObject.name={name}" + (f",reason={reason}" if reason else "")
        items: list[dict[str, Any]] = self.api.get(self.path("events"), fieldSelector=selector)["items"]
        return items

    def describe(self, name: str) -> str:
        try:
            pod = self.get_pod(name)
        except ApiError as err:
            return str(err)
        events = [f"{e['reason']}: {e['message']}" for e in self.events(name)]
        return f"pod {self.ns}/{name}: spec.nodeName={pod['spec'].get('nodeName')} status={pod.get('status')}\nevents: {events}"

    def wait_bound(self, name: str, timeout: float = WAIT) -> str:
        """The node kube-scheduler bound the pod to."""

        def bound() -> str | None:
            node: str | None = self.get_pod(name)["spec"].get("nodeName")
            return node

        return wait_for(f"pod {name} bound", bound, timeout, lambda: self.describe(name))

    def wait_unschedulable(self, name: str, expect: str | None = None, timeout: float = WAIT) -> str:
        """The message of the pod's PodScheduled=False (reason Unschedulable) condition. With expect, waits until
        the message is that (a pod made just after its nodes can first fail on a scheduler that has not
        seen them yet) and returns the last one seen if it never is."""
        last: list[str] = []

        def unschedulable() -> str | None:
            pod = self.get_pod(name)
            assert not pod["spec"].get("nodeName"), f"pod {name} was bound to {pod['spec']['nodeName']}"
            cond = condition(pod, "PodScheduled")
            if cond is None or cond.get("status") != "False" or cond.get("reason") != "Unschedulable":
                return None
            last[:] = [cond.get("message", "")]
            return last[0] if expect is None or last[0] == expect else None

        try:
            return wait_for(f"pod {name} unschedulable", unschedulable, timeout, lambda: self.describe(name))
        except Timeout:
            if last:
                return last[0]
            raise

    def failed_scheduling(self, name: str, timeout: float = WAIT) -> list[str]:
        """The messages of the FailedScheduling events kube-scheduler wrote about the pod (waits for one)."""

        def messages() -> list[str] | None:
            found = [e.get("message", "") for e in self.events(name, "FailedScheduling")]
            return found or None

        return wait_for(f"FailedScheduling event for {name}", messages, timeout, lambda: self.describe(name))
