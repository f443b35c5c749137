"""The workload kinds as berth reads them."""

from __future__ import annotations

from typing import Any

import msgspec

from berth.core.api.meta.selectors import LabelSelector


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
