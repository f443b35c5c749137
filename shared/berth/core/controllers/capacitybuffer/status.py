"""Status conditions as upstream writes them, and the status as JSON.

Setting a condition replaces the one of the same type; lastTransitionTime
changes only when the status flips; other types are kept.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import msgspec

from berth.core.api.autoscaling.model import BufferStatus, Condition

READY = "ReadyForProvisioning"
LIMITED = "LimitedByQuotas"
SCHEDULE = "ScheduleActive"  # berth's own

NOT_READY_PREFIX = "Buffer not ready for provisioning: "


def ready() -> Condition:
    return Condition(READY, "True", "AttributesSetSuccessfully", "ready")


def not_ready(error: str) -> Condition:
    return Condition(READY, "False", "error", NOT_READY_PREFIX + error)


def limited(desired: int, allowed: int, quotas: tuple[str, ...], generation: int) -> Condition:
    message = f"Buffer replicas limited from {desired} to {allowed} due to quotas: {', '.join(quotas)}"
    return Condition(LIMITED, "True", "ResourceQuotasAllocated", message, observed_generation=generation)


def not_limited(generation: int) -> Condition:
    return Condition(LIMITED, "False", "ResourceQuotasAllocated", "", observed_generation=generation)


def set_condition(conditions: tuple[Condition, ...], new: Condition, now: datetime) -> tuple[Condition, ...]:
    now = now.astimezone(UTC).replace(microsecond=0)
    out = []
    found = False
    for c in conditions:
        if c.type != new.type:
            out.append(c)
            continue
        found = True
        kept = c.last_transition_time if c.status == new.status else None
        out.append(msgspec.structs.replace(new, last_transition_time=kept or now))
    if not found:
        out.append(msgspec.structs.replace(new, last_transition_time=now))
    return tuple(out)


def remove_condition(conditions: tuple[Condition, ...], type_: str) -> tuple[Condition, ...]:
    return tuple(c for c in conditions if c.type != type_)


def is_ready(status: BufferStatus) -> bool:
    c = status.condition(READY)
    return c is not None and c.status == "True"


def _time(t: datetime | None) -> str:
    return "" if t is None else t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def condition_json(c: Condition) -> dict[str, Any]:
    out: dict[str, Any] = {"type": c.type, "status": c.status}
    if c.observed_generation:
        out["observedGeneration"] = c.observed_generation
    out["lastTransitionTime"] = _time(c.last_transition_time)
    out["reason"] = c.reason
    out["message"] = c.message
    return out


def status_json(s: BufferStatus) -> dict[str, Any]:
    """The status as the API server returns it: unset fields are left out."""
    out: dict[str, Any] = {}
    if s.pod_template_ref is not None:
        out["podTemplateRef"] = {"name": s.pod_template_ref}
    if s.replicas is not None:
        out["replicas"] = s.replicas
    if s.pod_template_generation is not None:
        out["podTemplateGeneration"] = s.pod_template_generation
    if s.conditions:
        out["conditions"] = [condition_json(c) for c in s.conditions]
    if s.provisioning_strategy is not None:
        out["provisioningStrategy"] = s.provisioning_strategy
    return out
