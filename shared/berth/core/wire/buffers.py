"""CapacityBuffer and what buffers read: PodTemplate, ResourceQuota, the workload kinds."""

from __future__ import annotations

from typing import Any

from berth.core.wire.common import LabelSelector, ObjectMeta, Quantities, Wire


class CapacityBuffer(Wire, frozen=True):
    """spec and status stay as they arrive: a malformed spec is the buffer's condition, not an error."""

    api_version: str | None = None
    metadata: ObjectMeta | None = None
    spec: Any = None
    status: Any = None


class PodTemplate(Wire, frozen=True):
    metadata: ObjectMeta | None = None
    template: dict[str, Any] | None = None


class TemplateMeta(Wire, frozen=True):
    labels: dict[str, str] | None = None


class WorkloadSpec(Wire, frozen=True):
    template: dict[str, Any] | None = None  # kept whole: buffers turn it into fake pods
    selector: LabelSelector | None = None
    replicas: int | None = None
    parallelism: int | None = None


class WorkloadStatus(Wire, frozen=True):
    replicas: int | None = None


class Workload(Wire, frozen=True):
    """Deployment, ReplicaSet, StatefulSet and Job."""

    metadata: ObjectMeta | None = None
    spec: WorkloadSpec | None = None
    status: WorkloadStatus | None = None


class ControllerSpec(Wire, frozen=True):
    template: dict[str, Any] | None = None
    selector: dict[str, str] | None = None  # a ReplicationController's selector is a plain map
    replicas: int | None = None


class ReplicationController(Wire, frozen=True):
    metadata: ObjectMeta | None = None
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


class ResourceQuota(Wire, frozen=True):
    metadata: ObjectMeta | None = None
    spec: ResourceQuotaSpec | None = None
    status: ResourceQuotaStatus | None = None
