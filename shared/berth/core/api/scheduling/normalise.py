"""Normalisation of PriorityClass and PodDisruptionBudget wire objects."""

from __future__ import annotations

import re

from berth.core.api.meta.normalise import EMPTY_META, Bad, label_selector, name_of, namespace_of
from berth.core.api.scheduling import wire as ws
from berth.core.api.scheduling.model import NEVER, PREEMPT_LOWER, PodDisruptionBudget, PriorityClass

_PERCENT = re.compile(r"^[0-9]+%$")


def priority_class(v: ws.PriorityClass) -> PriorityClass:
    meta = v.metadata or EMPTY_META
    policy = v.preemption_policy or PREEMPT_LOWER
    if policy not in (PREEMPT_LOWER, NEVER):
        raise Bad("preemptionPolicy", f"want {PREEMPT_LOWER} or {NEVER}, got {policy!r}")
    return PriorityClass(
        name=name_of(meta),
        resource_version=meta.resource_version or "",
        value=v.value or 0,
        global_default=bool(v.global_default),
        preemption_policy=policy,
    )


def _int_or_percent(v: int | str | None, path: str) -> int | str | None:
    if isinstance(v, str) and not _PERCENT.match(v):
        raise Bad(path, f'expected an integer or a percentage such as "50%", got {v!r}')
    if isinstance(v, int) and v < 0:
        raise Bad(path, f"must be non-negative, got {v}")
    return v


def pod_disruption_budget(v: ws.PodDisruptionBudget) -> PodDisruptionBudget:
    meta = v.metadata or EMPTY_META
    spec = v.spec or ws.PodDisruptionBudgetSpec()
    status = v.status or ws.PodDisruptionBudgetStatus()
    return PodDisruptionBudget(
        namespace=namespace_of(meta),
        name=name_of(meta),
        resource_version=meta.resource_version or "",
        selector=None if spec.selector is None else label_selector(spec.selector),
        min_available=_int_or_percent(spec.min_available, "spec.minAvailable"),
        max_unavailable=_int_or_percent(spec.max_unavailable, "spec.maxUnavailable"),
        disruptions_allowed=status.disruptions_allowed or 0,
        disrupted_pods=frozenset(status.disrupted_pods or ()),
    )
