"""Builders for raw CapacityBuffers and the objects they read, and a store holding them."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from berth.core.api.kinds import convert
from berth.core.cache.state import ClusterState
from berth.core.controllers.capacitybuffer.controller import BufferResult, reconcile
from berth.core.controllers.capacitybuffer.store import BufferStore

NOW = datetime(2026, 11, 2, 12, 0, 0, tzinfo=UTC)  # a Monday
API = "autoscaling.x-k8s.io/v1beta1"


def resources(cpu: str | None, memory: str | None, **extra: str) -> dict[str, str]:
    out = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    return {**out, **extra}


def pod_spec(cpu: str | None = "1", memory: str | None = "1Gi", limits: bool = False, **extra: Any) -> dict[str, Any]:
    res = resources(cpu, memory, **extra.pop("requests", {}))
    container = {"name": "main", "image": "app", "resources": {"limits" if limits else "requests": res}}
    return {"containers": [container], **extra}


def buffer(
    name: str,
    ns: str = "default",
    *,
    template: str | None = None,
    scalable: tuple[str, str, str] | None = None,
    replicas: Any = None,
    percentage: Any = None,
    limits: dict[str, Any] | None = None,
    strategy: str | None = None,
    created: str | None = "2026-11-01T10:00:00Z",
    annotations: dict[str, str] | None = None,
    status: dict[str, Any] | None = None,
    version: str = API,
    generation: int = 1,
    spec: dict[str, Any] | None = None,
) -> dict[str, Any]:
    body: dict[str, Any] = {}
    if template is not None:
        body["podTemplateRef"] = {"name": template}
    if scalable is not None:
        group, kind, target = scalable
        body["scalableRef"] = {"apiGroup": group, "kind": kind, "name": target}
    for key, value in (("replicas", replicas), ("percentage", percentage), ("limits", limits)):
        if value is not None:
            body[key] = value
    if strategy is not None:
        body["provisioningStrategy"] = strategy
    meta: dict[str, Any] = {"name": name, "namespace": ns, "uid": f"uid-{name}", "generation": generation}
    if created is not None:
        meta["creationTimestamp"] = created
    if annotations:
        meta["annotations"] = annotations
    obj: dict[str, Any] = {
        "apiVersion": version,
        "kind": "CapacityBuffer",
        "metadata": meta,
        "spec": body if spec is None else spec,
    }
    if status is not None:
        obj["status"] = status
    return obj


def pod_template(
    name: str, ns: str = "default", labels: dict[str, str] | None = None, generation: int = 1, **spec: Any
) -> dict[str, Any]:
    meta = {"labels": labels} if labels else {}
    return {
        "apiVersion": "v1",
        "kind": "PodTemplate",
        "metadata": {"name": name, "namespace": ns, "generation": generation},
        "template": {"metadata": meta, "spec": pod_spec(**spec)},
    }


def workload(
    name: str,
    ns: str = "default",
    kind: str = "Deployment",
    replicas: int | None = 3,
    ready: int | None = None,
    labels: dict[str, str] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    labels = labels or {"app": name}
    api = {"Job": "batch/v1", "ReplicationController": "v1"}.get(kind, "apps/v1")
    body: dict[str, Any] = {"template": {"metadata": {"labels": labels}, "spec": pod_spec(**spec)}}
    body["selector"] = labels if kind == "ReplicationController" else {"matchLabels": labels}
    if replicas is not None:
        body["parallelism" if kind == "Job" else "replicas"] = replicas
    obj: dict[str, Any] = {"apiVersion": api, "kind": kind, "metadata": {"name": name, "namespace": ns}, "spec": body}
    if ready is not None:
        obj["status"] = {"replicas": ready}
    return obj


def live_pod(
    name: str,
    ns: str = "default",
    labels: dict[str, str] | None = None,
    created: str = "2026-11-01T09:00:00Z",
    **spec: Any,
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "labels": labels or {}, "creationTimestamp": created},
        "spec": {"nodeName": "node-a", **pod_spec(**spec)},
        "status": {"phase": "Running"},
    }


def quota(
    name: str,
    ns: str = "default",
    hard: dict[str, str] | None = None,
    used: dict[str, str] | None = None,
    scopes: list[str] | None = None,
    selector: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"hard": dict(hard or {})}
    if scopes:
        spec["scopes"] = scopes
    if selector:
        spec["scopeSelector"] = {"matchExpressions": selector}
    return {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": name, "namespace": ns, "uid": f"uid-{name}"},
        "spec": spec,
        "status": {"hard": dict(hard or {}), "used": dict(used or {})},
    }


def load(*raws: dict[str, Any]) -> tuple[ClusterState, BufferStore]:
    store = BufferStore()
    state = ClusterState(extensions=[store])
    for raw in raws:
        state.apply(convert(raw))
    return state, store


def results(*raws: dict[str, Any], now: datetime = NOW) -> dict[str, BufferResult]:
    _, store = load(*raws)
    return {r.buffer.key: r for r in reconcile(store, now)}


def one(*raws: dict[str, Any], now: datetime = NOW) -> BufferResult:
    out = results(*raws, now=now)
    assert len(out) == 1
    return next(iter(out.values()))


def ready_message(r: BufferResult) -> tuple[str, str, str]:
    c = r.status.condition("ReadyForProvisioning")
    assert c is not None
    return c.status, c.reason, c.message
