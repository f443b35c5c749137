"""CapacityBuffers and the objects they read, as msgspec Structs.

Resource amounts for limits and quotas are milli-units for every resource
(kube's MilliValue, rounded up), so a limit of 1.5 units stays exact.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import msgspec

from berth.core.selectors import LabelSelector

GROUP = "autoscaling.x-k8s.io"
VERSIONS = ("v1beta1", "v1alpha1")
OWNER_API_VERSION = f"{GROUP}/v1beta1"
ACTIVE_CAPACITY = "buffer.x-k8s.io/active-capacity"
SCHEDULE_ANNOTATION = "berth.dev/buffer-schedule"
INT32_MAX = 2**31 - 1

MilliList = dict[str, int]


class LocalRef(msgspec.Struct, frozen=True, gc=False):
    name: str


class ScalableRef(msgspec.Struct, frozen=True, gc=False):
    api_group: str
    kind: str
    name: str


class BufferSpec(msgspec.Struct, frozen=True, gc=False):
    pod_template_ref: LocalRef | None = None
    scalable_ref: ScalableRef | None = None
    replicas: int | None = None
    percentage: int | None = None
    limits: MilliList | None = None
    provisioning_strategy: str = ACTIVE_CAPACITY


class Condition(msgspec.Struct, frozen=True, gc=False):
    type: str
    status: str
    reason: str
    message: str
    last_transition_time: datetime | None = None
    observed_generation: int = 0


class BufferStatus(msgspec.Struct, frozen=True, gc=False):
    pod_template_ref: str | None = None
    replicas: int | None = None
    pod_template_generation: int | None = None
    conditions: tuple[Condition, ...] = ()
    provisioning_strategy: str | None = None

    def condition(self, type_: str) -> Condition | None:
        return next((c for c in self.conditions if c.type == type_), None)


class CapacityBuffer(msgspec.Struct, frozen=True, gc=False):
    namespace: str
    name: str
    uid: str = ""
    resource_version: str = ""
    generation: int = 0
    creation: datetime | None = None
    annotations: dict[str, str] = {}
    spec: BufferSpec = BufferSpec()
    spec_error: str = ""  # why the spec would not pass CRD validation; "" when it does
    status: BufferStatus = BufferStatus()

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


class PodTemplate(msgspec.Struct, frozen=True, gc=False):
    namespace: str
    name: str
    uid: str = ""
    resource_version: str = ""
    generation: int = 0
    template: dict[str, Any] = {}  # the raw `template` (metadata + spec)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


class Workload(msgspec.Struct, frozen=True, gc=False):
    """A workload with a pod template; one subclass per kind keeps state keys apart."""

    namespace: str
    name: str
    uid: str = ""
    resource_version: str = ""
    selector: LabelSelector = LabelSelector()
    template: dict[str, Any] = {}  # the raw spec.template
    spec_replicas: int = 1  # spec.replicas (Job: spec.parallelism), defaulted as the API server does
    status_replicas: int = 0  # what the scale subresource reports

    group: str = ""  # overridden per kind
    kind: str = ""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


class Deployment(Workload, frozen=True):
    group: str = "apps"
    kind: str = "Deployment"


class ReplicaSet(Workload, frozen=True):
    group: str = "apps"
    kind: str = "ReplicaSet"


class StatefulSet(Workload, frozen=True):
    group: str = "apps"
    kind: str = "StatefulSet"


class ReplicationController(Workload, frozen=True):
    group: str = ""
    kind: str = "ReplicationController"


class Job(Workload, frozen=True):
    group: str = "batch"
    kind: str = "Job"


WORKLOAD_TYPES: tuple[type[Workload], ...] = (
    Deployment,
    ReplicaSet,
    StatefulSet,
    ReplicationController,
    Job,
)


class ScopeRequirement(msgspec.Struct, frozen=True, gc=False):
    scope_name: str
    operator: str
    values: tuple[str, ...] = ()


class ResourceQuota(msgspec.Struct, frozen=True, gc=False):
    namespace: str
    name: str
    uid: str = ""
    resource_version: str = ""
    hard: MilliList = {}  # status.hard
    used: MilliList = {}  # status.used
    scopes: tuple[str, ...] = ()
    scope_selector: tuple[ScopeRequirement, ...] = ()

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


def to_milli(requests: dict[str, int]) -> MilliList:
    """A model ResourceList (cpu in millicores, the rest in whole units) in milli-units."""
    return {k: v if k == "cpu" else v * 1000 for k, v in requests.items()}
