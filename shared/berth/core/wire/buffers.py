"""CapacityBuffer and what buffers read: PodTemplate, ResourceQuota, the workload kinds."""

from __future__ import annotations

from typing import Any

from berth.core.wire.common import Int32, LabelSelector, Object, Quantities, Wire


class CapacityBuffer(Object, frozen=True):
    """spec and status stay as they arrive: a malformed spec is the buffer's condition, not an error."""

    spec: Any = None
    status: Any = None


class PodTemplate(Object, frozen=True):
    template: dict[str, Any] | None = None


class WorkloadSpec(Wire, frozen=True):
    template: dict[str, Any] | None = None  # kept whole: buffers turn it into fake pods
    selector: LabelSelector | None = None
    replicas: Int32 | None = None
    parallelism: Int32 | None = None


class WorkloadStatus(Wire, frozen=True):
    replicas: Int32 | None = None


class Workload(Object, frozen=True):
    """What Deployment, ReplicaSet, StatefulSet and Job have in common (one Struct per kind below)."""

    spec: WorkloadSpec | None = None
    status: WorkloadStatus | None = None


class ControllerSpec(Wire, frozen=True):
    template: dict[str, Any] | None = None
    selector: dict[str, str] | None = None  # a ReplicationController's selector is a plain map
    replicas: Int32 | None = None


class Deployment(Workload, frozen=True):
    pass


class ReplicaSet(Workload, frozen=True):
    pass


class StatefulSet(Workload, frozen=True):
    pass


class Job(Workload, frozen=True):
    pass


class ReplicationController(Object, frozen=True):
    spec: ControllerSpec | None = None
    status: WorkloadStatus | None = None


class ScopeRequirement(Wire, frozen=True):
    scope_name: str | None = None
    operator: str | None = None
    values: list[str] | None = None


class ScopeSelector(Wire, frozen=True):
    match_expressions: list[ScopeRequirement] | None = None


class ResourceQuotaSpec(Wire, frozen=True):
    scopes: list[str] | None = None
    scope_selector: ScopeSelector | None = None


class ResourceQuotaStatus(Wire, frozen=True):
    hard: Quantities | None = None
    used: Quantities | None = None


class ResourceQuota(Object, frozen=True):
    spec: ResourceQuotaSpec | None = None
    status: ResourceQuotaStatus | None = None
