"""CapacityBuffers and the objects they read, as msgspec Structs.

Resource amounts for limits and quotas are milli-units for every resource
(kube's MilliValue, rounded up), so a limit of 1.5 units stays exact.
"""

from __future__ import annotations

from datetime import datetime

import msgspec

from berth.core.api.meta.normalise import MilliList

GROUP = "autoscaling.x-k8s.io"
VERSIONS = ("v1beta1", "v1alpha1")
OWNER_API_VERSION = f"{GROUP}/v1beta1"
ACTIVE_CAPACITY = "buffer.x-k8s.io/active-capacity"
SCHEDULE_ANNOTATION = "berth.dev/buffer-schedule"
INT32_MAX = 2**31 - 1


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
