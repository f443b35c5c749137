"""Normalisation of the buffer kinds: wire Structs (berth.core.wire.buffers) to the buffer models.

A CapacityBuffer whose spec is malformed or would fail CRD validation still
converts: the problem is kept in `spec_error` and becomes its status condition,
so one bad buffer never stops the others.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar

from berth.core.amounts import Bad, milli_list, moment
from berth.core.buffers.model import (
    ACTIVE_CAPACITY,
    GROUP,
    INT32_MAX,
    VERSIONS,
    BufferSpec,
    BufferStatus,
    CapacityBuffer,
    Condition,
    Deployment,
    Job,
    LocalRef,
    PodTemplate,
    ReplicaSet,
    ReplicationController,
    ResourceQuota,
    ScalableRef,
    ScopeRequirement,
    StatefulSet,
    Workload,
)
from berth.core.convert import EMPTY_META, label_selector, name_of, namespace_of
from berth.core.errors import InputError
from berth.core.quantity import ceil_milli
from berth.core.rawfields import Fields
from berth.core.selectors import LabelSelector
from berth.core.wire import buffers as wb
from berth.core.wire.common import ObjectMeta


def _milli(f: Fields, path: str) -> dict[str, int]:
    return {k: ceil_milli(f.quantity_value(v, f"{path}.{k}")) for k, v in f.mapping(path).items()}


# ---- CapacityBuffer ------------------------------------------------------------


def _strategy(f: Fields) -> str:
    """spec.provisioningStrategy with the CRD default applied; junk reads as the default."""
    spec = f.raw.get("spec")
    value = spec.get("provisioningStrategy") if isinstance(spec, Mapping) else None
    return value if isinstance(value, str) else ACTIVE_CAPACITY


def _bounded(f: Fields, path: str, problems: list[str]) -> int | None:
    value = f.int(path)
    if value is None:
        return None
    if value < 0:
        problems.append(f"{path} in body should be greater than or equal to 0")
    elif value > INT32_MAX:
        problems.append(f"{path} in body should be less than or equal to {INT32_MAX}")
    return value


def _required_name(f: Fields, path: str, problems: list[str]) -> str:
    value = f.get(path)
    if value is None:
        problems.append(f"{path}: Required value")
        return ""
    text = f.str(path)
    if not text:
        problems.append(f"{path} in body should be at least 1 chars long")
    return text


def read_spec(f: Fields, problems: list[str]) -> BufferSpec:
    """The spec as the API server would store it; validation problems are appended."""
    if f.get("spec") is None:
        problems.append("spec: Required value")
        return BufferSpec()
    f.mapping("spec")
    template_ref = None
    if f.get("spec.podTemplateRef") is not None:
        f.mapping("spec.podTemplateRef")
        template_ref = LocalRef(_required_name(f, "spec.podTemplateRef.name", problems))
    scalable_ref = None
    if f.get("spec.scalableRef") is not None:
        f.mapping("spec.scalableRef")
        scalable_ref = ScalableRef(
            api_group=f.str("spec.scalableRef.apiGroup"),
            kind=_required_name(f, "spec.scalableRef.kind", problems),
            name=_required_name(f, "spec.scalableRef.name", problems),
        )
    if template_ref is not None and scalable_ref is not None:
        problems.append("You must define either PodTemplateRef or ScalableRef, but not both")
    replicas = _bounded(f, "spec.replicas", problems)
    percentage = _bounded(f, "spec.percentage", problems)
    limits = None
    if f.get("spec.limits") is not None:
        limits = _milli(f, "spec.limits")
        for res, amount in sorted(limits.items()):
            if amount < 0:
                problems.append(f"spec.limits.{res} should be greater than or equal to 0")
    return BufferSpec(
        pod_template_ref=template_ref,
        scalable_ref=scalable_ref,
        replicas=replicas,
        percentage=percentage,
        limits=limits,
        provisioning_strategy=_strategy(f),
    )


def read_status(f: Fields) -> BufferStatus:
    """The status as last written (conditions keep their transition times)."""
    conditions = []
    for i, c in enumerate(f.list("status.conditions")):
        at = f"status.conditions[{i}]"
        conditions.append(
            Condition(
                type=f.str("type", base=c, at=f"{at}.type"),
                status=f.str("status", base=c, at=f"{at}.status"),
                reason=f.str("reason", base=c, at=f"{at}.reason"),
                message=f.str("message", base=c, at=f"{at}.message"),
                last_transition_time=f.time("lastTransitionTime", base=c, at=f"{at}.lastTransitionTime"),
                observed_generation=f.int("observedGeneration", base=c, at=f"{at}.observedGeneration", bits=64) or 0,
            )
        )
    ref = f.str("status.podTemplateRef.name") if f.get("status.podTemplateRef") is not None else None
    strategy = f.get("status.provisioningStrategy")
    return BufferStatus(
        pod_template_ref=ref,
        replicas=f.int("status.replicas", bits=32),
        pod_template_generation=f.int("status.podTemplateGeneration", bits=64),
        conditions=tuple(conditions),
        provisioning_strategy=None if strategy is None else f.str("status.provisioningStrategy"),
    )


def capacity_buffer(v: wb.CapacityBuffer) -> CapacityBuffer:
    """spec and status are read from the object as it arrived: their problems become the buffer's condition."""
    meta = v.metadata or EMPTY_META
    api_version = v.api_version or ""
    group, _, version = api_version.rpartition("/")
    if group != GROUP or version not in VERSIONS:
        want = " or ".join(f"{GROUP}/{x}" for x in VERSIONS)
        raise Bad("apiVersion", f"unsupported version {api_version!r}: want {want}")
    f = Fields({"spec": v.spec, "status": v.status}, "CapacityBuffer")
    problems: list[str] = []
    try:
        spec = read_spec(f, problems)
    except InputError as e:
        spec = BufferSpec(provisioning_strategy=_strategy(f))
        problems = [f"{e.field}: {e.problem}"]
    try:
        status = read_status(f)
    except InputError:
        status = BufferStatus()  # a malformed old status is replaced, never fatal
    name = name_of(meta)
    try:
        creation = moment(meta.creation_timestamp)
    except Bad as e:
        raise e.under("metadata.creationTimestamp") from None
    return CapacityBuffer(
        namespace=namespace_of(meta),
        name=name,
        uid=meta.uid or "",
        resource_version=meta.resource_version or "",
        generation=meta.generation or 0,
        creation=creation,
        annotations=meta.annotations or {},
        spec=spec,
        spec_error="; ".join(problems),
        status=status,
    )


# ---- PodTemplate and workloads ---------------------------------------------------


def pod_template(v: wb.PodTemplate) -> PodTemplate:
    meta = v.metadata or EMPTY_META
    return PodTemplate(
        namespace=namespace_of(meta),
        name=name_of(meta),
        uid=meta.uid or "",
        resource_version=meta.resource_version or "",
        generation=meta.generation or 0,
        template=dict(v.template or {}),
    )


def _template_labels(template: dict[str, object]) -> dict[str, str]:
    """spec.template.metadata.labels, kept whole in the template and checked here."""
    meta = template.get("metadata")
    if meta is None:
        return {}
    if not isinstance(meta, Mapping):
        raise Bad("spec.template.metadata", "expected an object")
    labels = meta.get("labels")
    if labels is None:
        return {}
    if not isinstance(labels, Mapping):
        raise Bad("spec.template.metadata.labels", "expected an object")
    for k, x in labels.items():
        if not isinstance(x, str):
            raise Bad(f"spec.template.metadata.labels[{k}]", f"expected a string, got {x!r}")
    return dict(labels)


_W = TypeVar("_W", bound=Workload)  # each kind's normalisation names its own model (berth.core.kinds)


def _workload(cls: type[_W], meta: ObjectMeta, template: dict[str, object], selector: LabelSelector,
              count: int | None, status: wb.WorkloadStatus | None) -> _W:  # fmt: skip
    return cls(
        namespace=namespace_of(meta),
        name=name_of(meta),
        uid=meta.uid or "",
        resource_version=meta.resource_version or "",
        selector=selector,
        template=template,
        spec_replicas=1 if count is None else count,
        status_replicas=(status.replicas or 0) if status is not None else 0,
    )


def _apps(cls: type[_W], v: wb.Workload) -> _W:
    spec = v.spec or wb.WorkloadSpec()
    template = dict(spec.template or {})
    labels = _template_labels(template)
    if spec.selector is None:  # apps/v1 requires one; read a missing one as RC defaulting does
        selector = LabelSelector(match_labels=tuple(sorted(labels.items())))
    else:
        selector = label_selector(spec.selector)
    count = spec.parallelism if cls is Job else spec.replicas
    return _workload(cls, v.metadata or EMPTY_META, template, selector, count, v.status)


def deployment(v: wb.Workload) -> Deployment:
    return _apps(Deployment, v)


def replica_set(v: wb.Workload) -> ReplicaSet:
    return _apps(ReplicaSet, v)


def stateful_set(v: wb.Workload) -> StatefulSet:
    return _apps(StatefulSet, v)


def job(v: wb.Workload) -> Job:
    return _apps(Job, v)


def replication_controller(v: wb.ReplicationController) -> ReplicationController:
    spec = v.spec or wb.ControllerSpec()
    template = dict(spec.template or {})
    labels = spec.selector or _template_labels(template)
    selector = LabelSelector(match_labels=tuple(sorted(labels.items())))
    return _workload(ReplicationController, v.metadata or EMPTY_META, template, selector, spec.replicas, v.status)


# ---- ResourceQuota ---------------------------------------------------------------


def resource_quota(v: wb.ResourceQuota) -> ResourceQuota:
    meta = v.metadata or EMPTY_META
    spec = v.spec or wb.ResourceQuotaSpec()
    status = v.status or wb.ResourceQuotaStatus()
    scope = spec.scope_selector
    try:
        hard = milli_list(status.hard)
    except Bad as e:
        raise e.under("status.hard") from None
    try:
        used = milli_list(status.used)
    except Bad as e:
        raise e.under("status.used") from None
    return ResourceQuota(
        namespace=namespace_of(meta),
        name=name_of(meta),
        uid=meta.uid or "",
        resource_version=meta.resource_version or "",
        hard=hard,
        used=used,
        scopes=tuple(spec.scopes) if spec.scopes else (),
        scope_selector=tuple(
            ScopeRequirement(scope_name=r.scope_name or "", operator=r.operator or "", values=tuple(r.values or ()))
            for r in (scope.match_expressions or () if scope is not None else ())
        ),
    )
