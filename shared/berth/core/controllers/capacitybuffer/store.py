"""The ClusterState extension that keeps buffers and the objects they read.

Register it with `ClusterState(extensions=[store])`; the buffer kinds' models (berth.core.api.kinds)
then land here through `state.apply`.
"""

from __future__ import annotations

from typing import Any

from berth.core.api.autoscaling.model import CapacityBuffer
from berth.core.api.core.model import Pod, ResourceQuota
from berth.core.api.workloads.model import PodTemplate, Workload
from berth.core.cache.extension import StateExtension

FAKE_POD_TYPE = ("podType", "capacityBufferFakePod")


def is_fake(pod: Pod) -> bool:
    return pod.annotations.get(FAKE_POD_TYPE[0]) == FAKE_POD_TYPE[1]


class BufferStore(StateExtension):
    """Buffers and what they read, by kind; node changes only move readyReplicas, computed on demand."""

    kinds: tuple[type, ...] = (CapacityBuffer, PodTemplate, Workload, ResourceQuota)

    def __init__(self) -> None:
        self.buffers: dict[str, CapacityBuffer] = {}
        self.by_namespace: dict[str, dict[str, CapacityBuffer]] = {}  # the same buffers, by namespace
        self.templates: dict[str, PodTemplate] = {}
        self.workloads: dict[tuple[str, str, str], Workload] = {}  # (group, kind, ns/name)
        self.quotas: dict[str, ResourceQuota] = {}
        self.pods: dict[str, dict[str, Pod]] = {}  # namespace -> name -> pod
        self.dirty: set[str] = set()  # namespaces changed since the last take_dirty()

    # ---- the extension hooks ------------------------------------------------
    def apply(self, state: Any, obj: Any, deleted: bool) -> None:
        if isinstance(obj, CapacityBuffer):
            _put(self.buffers, obj.key, obj, deleted)
            _put(self.by_namespace.setdefault(obj.namespace, {}), obj.name, obj, deleted)
        elif isinstance(obj, PodTemplate):
            _put(self.templates, obj.key, obj, deleted)
        elif isinstance(obj, Workload):
            _put(self.workloads, (obj.group, obj.kind, obj.key), obj, deleted)
        elif isinstance(obj, ResourceQuota):
            _put(self.quotas, obj.key, obj, deleted)
        else:
            return
        self.dirty.add(obj.namespace)

    def pod_changed(self, state: Any, old: Pod | None, new: Pod | None) -> None:
        if old is not None and not is_fake(old):
            self.pods.setdefault(old.namespace, {}).pop(old.name, None)
            self.dirty.add(old.namespace)
        if new is not None and not is_fake(new):
            self.pods.setdefault(new.namespace, {})[new.name] = new
            self.dirty.add(new.namespace)

    # node changes only move readyReplicas, which is computed on demand

    # ---- reads ------------------------------------------------------------
    def namespaces(self) -> list[str]:
        return sorted(ns for ns, found in self.by_namespace.items() if found)

    def buffers_in(self, namespace: str) -> list[CapacityBuffer]:
        return list(self.by_namespace.get(namespace, {}).values())

    def quotas_in(self, namespace: str) -> list[ResourceQuota]:
        return [q for q in self.quotas.values() if q.namespace == namespace]

    def pods_in(self, namespace: str) -> list[Pod]:
        return list(self.pods.get(namespace, {}).values())

    def take_dirty(self) -> set[str]:
        out, self.dirty = self.dirty, set()
        return out


def _put(store: dict[Any, Any], key: Any, obj: Any, deleted: bool) -> None:
    if deleted:
        store.pop(key, None)
    else:
        store[key] = obj
