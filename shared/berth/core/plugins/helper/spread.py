"""The selector kube gives a pod's default spread constraints (upstream helper.DefaultSelector).

In the pod's namespace: the selectors of the Services that select the pod (a Service without a
selector selects nothing), then its controller's: a ReplicationController's map merged in, or the
requirements of a ReplicaSet's or StatefulSet's selector added. The owner is looked up by name and
API version; a missing one adds nothing.
"""

from __future__ import annotations

from typing import Any

from berth.core.api.core.model import Pod, Service
from berth.core.api.meta.selectors import LabelSelector
from berth.core.api.workloads.model import ReplicaSet, ReplicationController, StatefulSet, Workload

# the controller kinds kube reads, by (apiVersion, kind) as an owner reference names them
_OWNERS: dict[tuple[str, str], type[Workload]] = {
    ("v1", "ReplicationController"): ReplicationController,
    ("apps/v1", "ReplicaSet"): ReplicaSet,
    ("apps/v1", "StatefulSet"): StatefulSet,
}


class Owners:
    """Services and controllers by namespace and name, as the applier sees them."""

    kinds: tuple[type, ...] = (Service, ReplicationController, ReplicaSet, StatefulSet)

    def __init__(self) -> None:
        self.services: dict[str, dict[str, Service]] = {}
        self.controllers: dict[tuple[type, str, str], Workload] = {}

    def apply(self, obj: Any, deleted: bool) -> None:
        if isinstance(obj, Service):
            in_ns = self.services.setdefault(obj.namespace, {})
            if deleted:
                in_ns.pop(obj.name, None)
            else:
                in_ns[obj.name] = obj
            return
        key = (type(obj), obj.namespace, obj.name)
        if deleted:
            self.controllers.pop(key, None)
        else:
            self.controllers[key] = obj

    def selector(self, pod: Pod) -> LabelSelector | None:
        """The pod's default selector; None when it is empty (then kube gives no default constraints)."""
        labels: dict[str, str] = {}
        for svc in self.services.get(pod.namespace, {}).values():
            if svc.selector is not None and all(
                pod.labels.get(k) == v and k in pod.labels for k, v in svc.selector.items()
            ):
                labels.update(svc.selector)
        extra = LabelSelector()
        owner = pod.controller()
        cls = _OWNERS.get((owner.api_version, owner.kind)) if owner is not None else None
        if owner is not None and cls is not None:
            got = self.controllers.get((cls, pod.namespace, owner.name))
            if got is not None and cls is ReplicationController:
                labels.update(got.selector.match_labels)
            elif got is not None and got.selector.valid:
                extra = got.selector
        out = LabelSelector(
            match_labels=(*sorted(labels.items()), *extra.match_labels), match_expressions=extra.match_expressions
        )
        return out if out.match_labels or out.match_expressions else None
