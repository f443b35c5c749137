"""The shape of one chunk: which pod a buffer stands for.

podTemplateRef: the referenced PodTemplate. scalableRef: first the newest pod
matched by the workload's scale selector (kinds with a scale subresource),
then the workload's own pod template. Templates go through the defaulting
resolver: container requests default to limits, `kube-api-access-*` volumes go.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import msgspec

from berth.core.api.autoscaling.model import CapacityBuffer, ScalableRef
from berth.core.api.core.model import Pod
from berth.core.api.kinds import pod_from_raw
from berth.core.api.workloads.model import PodTemplate, Workload
from berth.core.errors import InputError

API_ACCESS_PREFIX = "kube-api-access-"
_OLDEST = datetime.min.replace(tzinfo=UTC)

# Kinds with a scale subresource, by (API group, kind), and kube's resource names.
SCALABLE = {
    ("apps", "Deployment"): "deployments.apps",
    ("apps", "ReplicaSet"): "replicasets.apps",
    ("apps", "StatefulSet"): "statefulsets.apps",
    ("", "ReplicationController"): "replicationcontrollers",
    ("batch", "Job"): "jobs.batch",  # has no /scale: the live-pod path always fails for it
}
# The template fallback, keyed "<apiGroup>-<kind>" exactly as upstream (RC is "core").
FALLBACK = {
    "apps-Deployment": ("apps", "Deployment", "deployment.apps"),
    "apps-ReplicaSet": ("apps", "ReplicaSet", "replicaset.apps"),
    "apps-StatefulSet": ("apps", "StatefulSet", "statefulset.apps"),
    "core-ReplicationController": ("", "ReplicationController", "replicationcontroller"),
    "batch-Job": ("batch", "Job", "job.batch"),
}


NO_SCALE = "failed to get scale sub resource: the server could not find the requested resource"


class ShapeError(Exception):
    """Resolution failed; str() is the text after `Buffer not ready for provisioning: `."""


class Chunk(msgspec.Struct, frozen=True):
    labels: dict[str, str]
    annotations: dict[str, str]
    spec: dict[str, Any]  # the resolved pod spec, as the managed PodTemplate holds it
    pod: Pod  # the same chunk as berth's model reads it
    cross_namespace_affinity: bool = False


class Resolved(msgspec.Struct, frozen=True):
    chunk: Chunk
    scalable_replicas: int | None = None


def managed_name(buffer_name: str) -> str:
    return f"capacitybuffer-{buffer_name[:225]}-pod-template"


# ---- templates -------------------------------------------------------------------


def _default_resources(container: Any) -> Any:
    if not isinstance(container, Mapping) or not isinstance(container.get("resources"), Mapping):
        return container
    res = dict(container["resources"])
    limits, requests = res.get("limits"), res.get("requests")
    if isinstance(limits, Mapping) and (requests is None or isinstance(requests, Mapping)):
        res["requests"] = {**limits, **(requests or {})}
    return {**container, "resources": res}


def _strip_api_access(container: Any) -> Any:
    if not isinstance(container, Mapping) or not isinstance(container.get("volumeMounts"), list):
        return container
    mounts = [m for m in container["volumeMounts"] if not _is_api_access(m)]
    return {**container, "volumeMounts": mounts}


def _is_api_access(item: Any) -> bool:
    return isinstance(item, Mapping) and str(item.get("name", "")).startswith(API_ACCESS_PREFIX)


def resolve_spec(spec: Mapping[str, Any]) -> dict[str, Any]:
    """The defaulting resolver: requests from limits, no API access volumes, no node.

    Copies only what it changes; the input's nested values are shared, never mutated.
    """
    out = dict(spec)
    out.pop("nodeName", None)
    for field in ("containers", "initContainers"):
        if isinstance(out.get(field), list):
            out[field] = [_strip_api_access(_default_resources(c)) for c in out[field]]
    if isinstance(out.get("resources"), Mapping):
        out = _default_resources(out)
    if isinstance(out.get("volumes"), list):
        out["volumes"] = [v for v in out["volumes"] if not _is_api_access(v)]
    return out


def _cross_namespace(spec: Mapping[str, Any]) -> bool:
    """True if any pod (anti-)affinity term names namespaces or a namespaceSelector."""
    affinity = spec.get("affinity")
    if not isinstance(affinity, Mapping):
        return False
    for kind in ("podAffinity", "podAntiAffinity"):
        rules = affinity.get(kind)
        if not isinstance(rules, Mapping):
            continue
        terms = list(rules.get("requiredDuringSchedulingIgnoredDuringExecution") or [])
        for weighted in rules.get("preferredDuringSchedulingIgnoredDuringExecution") or []:
            if isinstance(weighted, Mapping):
                terms.append(weighted.get("podAffinityTerm"))
        for t in terms:
            if isinstance(t, Mapping) and (t.get("namespaces") or t.get("namespaceSelector") is not None):
                return True
    return False


def chunk_from_template(namespace: str, name: str, template: Mapping[str, Any]) -> Chunk:
    """A chunk from a raw PodTemplateSpec; raises InputError for a malformed one."""
    meta = template.get("metadata") or {}
    spec = template.get("spec") or {}
    if not isinstance(meta, Mapping) or not isinstance(spec, Mapping):
        raise InputError("template", "", "expected metadata and spec objects")
    resolved = resolve_spec(spec)
    raw_pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": meta.get("labels") or {},
            "annotations": meta.get("annotations") or {},
        },
        "spec": resolved,
    }
    pod = pod_from_raw(raw_pod)
    return Chunk(
        labels=dict(pod.labels),
        annotations=dict(pod.annotations),
        spec=resolved,
        pod=pod,
        cross_namespace_affinity=_cross_namespace(resolved),
    )


# ---- live pods -------------------------------------------------------------------


def _quantities(amounts: Mapping[str, int]) -> dict[str, str]:
    return {k: f"{v}m" if k == "cpu" else str(v) for k, v in sorted(amounts.items())}


def spec_from_pod(pod: Pod) -> dict[str, Any]:
    """A pod spec carrying what berth's model keeps of a live pod.

    Containers collapse into one `chunk` container holding the pod's effective
    requests and limits, so the totals an autoscaler sums stay the same.
    """
    spec: dict[str, Any] = {
        "containers": [
            {
                "name": "chunk",
                "resources": {"requests": _quantities(pod.requests), "limits": _quantities(pod.limits)},
            }
        ],
        "schedulerName": pod.scheduler_name,
    }
    if pod.priority_class_name:
        spec["priorityClassName"] = pod.priority_class_name
    if pod.priority is not None:
        spec["priority"] = pod.priority
    if pod.node_selector:
        spec["nodeSelector"] = dict(pod.node_selector)
    if pod.affinity is not None:
        terms = [
            {
                "matchExpressions": [msgspec.to_builtins(r) for r in t.match_expressions],
                "matchFields": [msgspec.to_builtins(r) for r in t.match_fields],
            }
            for t in pod.affinity.terms
        ]
        spec["affinity"] = {
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}
        }
    if pod.tolerations:
        spec["tolerations"] = [{k: v for k, v in msgspec.to_builtins(t).items() if v} for t in pod.tolerations]
    volumes = [
        {"name": v.name, "persistentVolumeClaim": {"claimName": v.claim_name}} for v in pod.volumes if not v.ephemeral
    ]
    if volumes:
        spec["volumes"] = volumes
    return spec


def chunk_from_pod(pod: Pod) -> Chunk:
    live = msgspec.structs.replace(
        pod,
        name="",
        uid="",
        resource_version="",
        owner_refs=(),
        creation=None,
        deleting=False,
        node_name="",
        phase="Pending",
        conditions=(),
    )
    return Chunk(
        labels=dict(pod.labels),
        annotations=dict(pod.annotations),
        spec=spec_from_pod(pod),
        pod=live,
    )


def newest(pods: list[Pod]) -> Pod:
    """The most recently created pod (ties: the last name)."""
    return max(pods, key=lambda p: (p.creation or _OLDEST, p.name))


# ---- resolution ------------------------------------------------------------------


def resolve_template_ref(buffer: CapacityBuffer, templates: Mapping[str, PodTemplate]) -> Resolved:
    assert buffer.spec.pod_template_ref is not None
    name = buffer.spec.pod_template_ref.name
    source = templates.get(f"{buffer.namespace}/{name}")
    if source is None:
        raise ShapeError(f'capacity buffer client can\'t get pod template: podtemplates "{name}" not found')
    try:
        chunk = chunk_from_template(buffer.namespace, managed_name(buffer.name), source.template)
    except InputError as e:
        raise ShapeError(f"failed to create fake pod: {_problem(e)}") from None
    return Resolved(chunk)


def _live(
    ref: ScalableRef, namespace: str, workloads: Mapping[tuple[str, str, str], Workload], pods: list[Pod]
) -> Resolved | None:
    """The live-pod path; None when no pod matches, ShapeError text when it fails."""
    resource = SCALABLE.get((ref.api_group, ref.kind))
    if resource is None:
        raise ShapeError(f'failed to get scale object: no matches for kind "{ref.kind}" in group "{ref.api_group}"')
    if ref.kind == "Job":  # the API has jobs, but no /scale for them
        raise ShapeError(f"failed to get scale object: {NO_SCALE}")
    w = workloads.get((ref.api_group, ref.kind, f"{namespace}/{ref.name}"))
    if w is None:
        raise ShapeError(
            f'failed to get scale object: failed to get scale sub resource: {resource} "{ref.name}" not found'
        )
    if not w.selector.valid:
        raise ShapeError(
            "failed to get existing pod for scale object: failed to parse label selector: invalid selector"
        )
    matched = [p for p in pods if w.selector.matches(p.labels)]
    if not matched:
        return None
    return Resolved(chunk_from_pod(newest(matched)), w.status_replicas)


def _fallback(
    buffer: CapacityBuffer, ref: ScalableRef, workloads: Mapping[tuple[str, str, str], Workload]
) -> tuple[Workload, int]:
    found = FALLBACK.get(f"{ref.api_group}-{ref.kind}")
    if found is None:
        raise ShapeError(f"kind {ref.api_group}/{ref.kind} is not supported to use pod template")
    group, kind, resource = found
    w = workloads.get((group, kind, f"{buffer.namespace}/{ref.name}"))
    if w is None:
        # Every kind says "Deployment" first: an upstream copy-paste kept for fidelity.
        raise ShapeError(f'failed to get Deployment: failed to get {kind}: {resource} "{ref.name}" not found')
    return w, w.spec_replicas


def resolve_scalable(
    buffer: CapacityBuffer,
    workloads: Mapping[tuple[str, str, str], Workload],
    pods: list[Pod],
) -> Resolved:
    ref = buffer.spec.scalable_ref
    assert ref is not None
    live_error = None
    try:
        live = _live(ref, buffer.namespace, workloads, pods)
        if live is not None:
            return live
    except ShapeError as e:
        live_error = str(e)
    try:
        w, replicas = _fallback(buffer, ref, workloads)
    except ShapeError as e:
        if live_error is not None:
            raise ShapeError(
                f"failed to resolve live pod: {live_error}, failed to resolve scalable object: {e}"
            ) from None
        raise ShapeError(f"failed to resolve scalable object: {e}") from None
    try:
        chunk = chunk_from_template(buffer.namespace, managed_name(buffer.name), w.template)
    except InputError as e:
        raise ShapeError(f"failed to resolve pod spec: {_problem(e)}") from None
    return Resolved(chunk, replicas)


def _problem(e: InputError) -> str:
    return f"{e.field}: {e.problem}" if e.field else e.problem


# ---- the managed PodTemplate -------------------------------------------------------


def managed_template(chunk: Chunk) -> dict[str, Any]:
    meta: dict[str, Any] = {}
    if chunk.labels:
        meta["labels"] = chunk.labels
    if chunk.annotations:
        meta["annotations"] = chunk.annotations
    return {"metadata": meta, "spec": chunk.spec}


def _normal(template: Mapping[str, Any]) -> dict[str, Any]:
    meta = template.get("metadata") or {}
    meta = meta if isinstance(meta, Mapping) else {}
    return {
        "labels": meta.get("labels") or {},
        "annotations": meta.get("annotations") or {},
        "spec": template.get("spec") or {},
    }


def managed_generation(existing: PodTemplate | None, chunk: Chunk) -> int:
    """What the managed template's generation would be after ensuring it.

    The API server starts at 1 and bumps it when the template changes; a
    semantically equal template is left alone.
    """
    if existing is None:
        return 1
    same = _normal(existing.template) == _normal(managed_template(chunk))
    return existing.generation if same else existing.generation + 1
