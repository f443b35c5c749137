"""The workload kinds on the wire: PodTemplate, Deployment, ReplicaSet, StatefulSet, Job, ReplicationController."""

from __future__ import annotations

from typing import Any

from berth.core.api.meta.wire import Int32, LabelSelector, Object, Wire


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
