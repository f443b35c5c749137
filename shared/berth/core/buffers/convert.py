"""Raw JSON to the buffer Structs. Register `CONVERTERS` next to the core ones.

A CapacityBuffer whose spec is malformed or would fail CRD validation still
converts: the problem is kept in `spec_error` and becomes its status condition,
so one bad buffer never stops the others.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

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
    MilliList,
    PodTemplate,
    ReplicaSet,
    ReplicationController,
    ResourceQuota,
    ScalableRef,
    ScopeRequirement,
    StatefulSet,
    Workload,
)
from berth.core.convert import ids_fast, label_selector, label_selector_fast, name_of
from berth.core.errors import InputError
from berth.core.quantity import ceil_milli
from berth.core.rawfields import (
    FastPath,
    Fields,
    fast_path,
    integer,
    meta_fast,
    milli_amounts,
    obj,
    objects,
    text,
    text_list,
    text_map,
)
from berth.core.selectors import LabelSelector

Converter = Callable[[Mapping[str, Any]], Any]


def _namespace(f: Fields) -> str:
    return f.str("metadata.namespace") or "default"


def milli_list(f: Fields, path: str) -> MilliList:
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
        limits = milli_list(f, "spec.limits")
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
                observed_generation=f.int("observedGeneration", base=c, at=f"{at}.observedGeneration") or 0,
            )
        )
    ref = f.str("status.podTemplateRef.name") if f.get("status.podTemplateRef") is not None else None
    strategy = f.get("status.provisioningStrategy")
    return BufferStatus(
        pod_template_ref=ref,
        replicas=f.int("status.replicas"),
        pod_template_generation=f.int("status.podTemplateGeneration"),
        conditions=tuple(conditions),
        provisioning_strategy=None if strategy is None else f.str("status.provisioningStrategy"),
    )


def buffer_from_raw(raw: Mapping[str, Any]) -> CapacityBuffer:
    f = Fields(raw)
    api_version = f.str("apiVersion")
    group, _, version = api_version.rpartition("/")
    if group != GROUP or version not in VERSIONS:
        want = " or ".join(f"{GROUP}/{v}" for v in VERSIONS)
        raise f.error("apiVersion", f"unsupported version {api_version!r}: want {want}")
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
    return CapacityBuffer(
        namespace=_namespace(f),
        name=name_of(f),
        uid=f.str("metadata.uid"),
        resource_version=f.str("metadata.resourceVersion"),
        generation=f.int("metadata.generation") or 0,
        creation=f.time("metadata.creationTimestamp"),
        annotations=f.str_map("metadata.annotations"),
        spec=spec,
        spec_error="; ".join(problems),
        status=status,
    )


# ---- PodTemplate and workloads ---------------------------------------------------


def pod_template_from_raw(raw: Mapping[str, Any]) -> PodTemplate:
    f = Fields(raw)
    return PodTemplate(
        namespace=_namespace(f),
        name=name_of(f),
        uid=f.str("metadata.uid"),
        resource_version=f.str("metadata.resourceVersion"),
        generation=f.int("metadata.generation") or 0,
        template=dict(f.mapping("template")),
    )


def _workload(cls: type[Workload]) -> Converter:
    count_key = "parallelism" if cls is Job else "replicas"

    def fast(raw: dict[str, Any]) -> Workload:
        meta, name = meta_fast(raw)
        spec = obj(raw.get("spec")) or {}
        status = obj(raw.get("status")) or {}
        template = dict(obj(spec.get("template")) or {})
        template_meta = obj(template.get("metadata"))
        template_labels = {} if template_meta is None else text_map(template_meta.get("labels"))
        raw_selector = spec.get("selector")
        if cls is ReplicationController:
            labels = text_map(raw_selector) or template_labels
            selector = LabelSelector(match_labels=tuple(sorted(labels.items())))
        elif raw_selector is None:
            selector = LabelSelector(match_labels=tuple(sorted(template_labels.items())))
        else:
            selector = label_selector_fast(raw_selector)
        count = integer(spec.get(count_key))
        namespace, uid, resource_version = ids_fast(meta)
        return cls(
            namespace=namespace,
            name=name,
            uid=uid,
            resource_version=resource_version,
            selector=selector,
            template=template,
            spec_replicas=1 if count is None else count,
            status_replicas=integer(status.get("replicas")) or 0,
        )

    def convert(raw: Mapping[str, Any]) -> Workload:
        f = Fields(raw)
        template = dict(f.mapping("spec.template"))
        template_labels = f.str_map("metadata.labels", base=template, at="spec.template.metadata.labels")
        raw_selector = f.get("spec.selector")
        if cls is ReplicationController:
            labels = f.str_map("spec.selector") or template_labels
            selector = LabelSelector(match_labels=tuple(sorted(labels.items())))
        elif raw_selector is None:  # apps/v1 requires one; read a missing one as RC defaulting does
            selector = LabelSelector(match_labels=tuple(sorted(template_labels.items())))
        else:
            f.mapping("spec.selector")
            selector = label_selector(f, raw_selector, "spec.selector")
        count_field = "spec.parallelism" if cls is Job else "spec.replicas"
        count = f.int(count_field)
        return cls(
            namespace=_namespace(f),
            name=name_of(f),
            uid=f.str("metadata.uid"),
            resource_version=f.str("metadata.resourceVersion"),
            selector=selector,
            template=template,
            spec_replicas=1 if count is None else count,
            status_replicas=f.int("status.replicas") or 0,
        )

    return FastPath(fast, convert)


# ---- ResourceQuota ---------------------------------------------------------------


def _quota_fast(raw: dict[str, Any]) -> ResourceQuota:
    meta, name = meta_fast(raw)
    spec = obj(raw.get("spec")) or {}
    status = obj(raw.get("status")) or {}
    scope_selector = obj(spec.get("scopeSelector"))
    selector = []
    for r in objects(None if scope_selector is None else scope_selector.get("matchExpressions")):
        selector.append(
            ScopeRequirement(
                scope_name=text(r.get("scopeName")),
                operator=text(r.get("operator")),
                values=text_list(r.get("values")),
            )
        )
    namespace, uid, resource_version = ids_fast(meta)
    return ResourceQuota(
        namespace=namespace,
        name=name,
        uid=uid,
        resource_version=resource_version,
        hard=milli_amounts(status.get("hard")),
        used=milli_amounts(status.get("used")),
        scopes=text_list(spec.get("scopes")),
        scope_selector=tuple(selector),
    )


@fast_path(_quota_fast)
def quota_from_raw(raw: Mapping[str, Any]) -> ResourceQuota:
    f = Fields(raw)
    selector = []
    path = "spec.scopeSelector.matchExpressions"
    for i, r in enumerate(f.list(path)):
        at = f"{path}[{i}]"
        selector.append(
            ScopeRequirement(
                scope_name=f.str("scopeName", base=r, at=f"{at}.scopeName"),
                operator=f.str("operator", base=r, at=f"{at}.operator"),
                values=f.str_list("values", base=r, at=f"{at}.values"),
            )
        )
    return ResourceQuota(
        namespace=_namespace(f),
        name=name_of(f),
        uid=f.str("metadata.uid"),
        resource_version=f.str("metadata.resourceVersion"),
        hard=milli_list(f, "status.hard"),
        used=milli_list(f, "status.used"),
        scopes=f.str_list("spec.scopes"),
        scope_selector=tuple(selector),
    )


# (API group, kind) -> converter, to merge with berth.core.convert.CONVERTERS.
CONVERTERS: dict[tuple[str, str], Converter] = {
    (GROUP, "CapacityBuffer"): buffer_from_raw,
    ("", "PodTemplate"): pod_template_from_raw,
    ("apps", "Deployment"): _workload(Deployment),
    ("apps", "ReplicaSet"): _workload(ReplicaSet),
    ("apps", "StatefulSet"): _workload(StatefulSet),
    ("batch", "Job"): _workload(Job),
    ("", "ReplicationController"): _workload(ReplicationController),
    ("", "ResourceQuota"): quota_from_raw,
}
