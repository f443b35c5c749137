"""Normalisation of the buffer kinds: wire Structs (berth.core.api.autoscaling.wire) to the buffer models.

A CapacityBuffer whose spec is malformed or would fail CRD validation still
converts: the problem is kept in `spec_error` and becomes its status condition,
so one bad buffer never stops the others.
"""

from __future__ import annotations

from collections.abc import Mapping

from berth.core.api.autoscaling import wire as wa
from berth.core.api.autoscaling.model import (
    ACTIVE_CAPACITY,
    GROUP,
    INT32_MAX,
    VERSIONS,
    BufferSpec,
    BufferStatus,
    CapacityBuffer,
    Condition,
    LocalRef,
    ScalableRef,
)
from berth.core.api.meta.normalise import EMPTY_META, Bad, moment, name_of, namespace_of
from berth.core.api.meta.quantity import ceil_milli
from berth.core.api.meta.rawfields import Fields
from berth.core.errors import InputError


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


def capacity_buffer(v: wa.CapacityBuffer) -> CapacityBuffer:
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
