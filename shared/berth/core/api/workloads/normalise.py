"""Normalisation of the workload kinds: wire Structs to models."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar

from berth.core.api.meta.normalise import EMPTY_META, Bad, label_selector, name_of, namespace_of
from berth.core.api.meta.selectors import LabelSelector
from berth.core.api.meta.wire import ObjectMeta
from berth.core.api.workloads import wire as ww
from berth.core.api.workloads.model import (
    Deployment,
    Job,
    PodTemplate,
    ReplicaSet,
    ReplicationController,
    StatefulSet,
    Workload,
)


def pod_template(v: ww.PodTemplate) -> PodTemplate:
    meta = v.metadata or EMPTY_META
    return PodTemplate(
        namespace=namespace_of(meta),
        name=name_of(meta),
        uid=meta.uid or "",
        resource_version=meta.resource_version or "",
        generation=meta.generation or 0,
        template=dict(v.template or {}),
    )


def _template_labels(template: dict[str, object]) -> dict[str, str]:
    """spec.template.metadata.labels, kept whole in the template and checked here."""
    meta = template.get("metadata")
    if meta is None:
        return {}
    if not isinstance(meta, Mapping):
        raise Bad("spec.template.metadata", "expected an object")
    labels = meta.get("labels")
    if labels is None:
        return {}
    if not isinstance(labels, Mapping):
        raise Bad("spec.template.metadata.labels", "expected an object")
    for k, x in labels.items():
        if not isinstance(x, str):
            raise Bad(f"spec.template.metadata.labels[{k}]", f"expected a string, got {x!r}")
    return dict(labels)


_W = TypeVar("_W", bound=Workload)  # each kind's normalisation names its own model (berth.core.api.kinds)


def _workload(cls: type[_W], meta: ObjectMeta, template: dict[str, object], selector: LabelSelector,
              count: int | None, status: ww.WorkloadStatus | None) -> _W:  # fmt: skip
    return cls(
        namespace=namespace_of(meta),
        name=name_of(meta),
        uid=meta.uid or "",
        resource_version=meta.resource_version or "",
        selector=selector,
        template=template,
        spec_replicas=1 if count is None else count,
        status_replicas=(status.replicas or 0) if status is not None else 0,
    )


def _apps(cls: type[_W], v: ww.Workload) -> _W:
    spec = v.spec or ww.WorkloadSpec()
    template = dict(spec.template or {})
    labels = _template_labels(template)
    if spec.selector is None:  # apps/v1 requires one; read a missing one as RC defaulting does
        selector = LabelSelector(match_labels=tuple(sorted(labels.items())))
    else:
        selector = label_selector(spec.selector)
    count = spec.parallelism if cls is Job else spec.replicas
    return _workload(cls, v.metadata or EMPTY_META, template, selector, count, v.status)


def deployment(v: ww.Workload) -> Deployment:
    return _apps(Deployment, v)


def replica_set(v: ww.Workload) -> ReplicaSet:
    return _apps(ReplicaSet, v)


def stateful_set(v: ww.Workload) -> StatefulSet:
    return _apps(StatefulSet, v)


def job(v: ww.Workload) -> Job:
    return _apps(Job, v)


def replication_controller(v: ww.ReplicationController) -> ReplicationController:
    spec = v.spec or ww.ControllerSpec()
    template = dict(spec.template or {})
    labels = spec.selector or _template_labels(template)
    selector = LabelSelector(match_labels=tuple(sorted(labels.items())))
    return _workload(ReplicationController, v.metadata or EMPTY_META, template, selector, spec.replicas, v.status)


# ---- ResourceQuota ---------------------------------------------------------------
