"""Kinds preemption reads: PriorityClass (scheduling.k8s.io/v1) and PodDisruptionBudget (policy/v1)."""

from __future__ import annotations

from typing import Any

from berth.core.api.meta.wire import LabelSelector, Object, Wire


class PriorityClass(Object, frozen=True):
    """value, globalDefault and preemptionPolicy sit at the top level, beside metadata."""

    value: int | None = None
    global_default: bool | None = None
    preemption_policy: str | None = None


class PodDisruptionBudgetSpec(Wire, frozen=True):
    selector: LabelSelector | None = None
    min_available: int | str | None = None
    max_unavailable: int | str | None = None


class PodDisruptionBudgetStatus(Wire, frozen=True):
    disruptions_allowed: int | None = None
    disrupted_pods: dict[str, Any] | None = None  # pod name -> time; only the names are read


class PodDisruptionBudget(Object, frozen=True):
    spec: PodDisruptionBudgetSpec | None = None
    status: PodDisruptionBudgetStatus | None = None
