"""Raw Kubernetes JSON (as the API server and kubectl print it) to the cluster model.

This is the one edge where raw dicts become Structs; the policies never see dicts.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from berth.core import resources
from berth.core.errors import InputError
from berth.core.model import (
    ANN_BETA_CLASS,
    ANN_CLASS_WEIGHT,
    ClaimRef,
    CSIDriver,
    CSIStorageCapacity,
    Node,
    OwnerRef,
    PersistentVolume,
    PersistentVolumeClaim,
    Pod,
    PodCondition,
    PodVolume,
    StorageClass,
    Taint,
    Toleration,
)
from berth.core.rawfields import Fields
from berth.core.selectors import (
    LabelSelector,
    NodeSelector,
    NodeSelectorTerm,
    Requirement,
    TopologyTerm,
)

Converter = Callable[[Mapping[str, Any]], Any]


def group_of(api_version: str) -> str:
    return api_version.rpartition("/")[0] if "/" in api_version else ""


def requirements(f: Fields, items: list[Any], at: str) -> tuple[Requirement, ...]:
    out = []
    for i, r in enumerate(items):
        here = f"{at}[{i}]"
        out.append(
            Requirement(
                key=f.str("key", base=r, at=f"{here}.key"),
                operator=f.str("operator", base=r, at=f"{here}.operator"),
                values=f.str_list("values", base=r, at=f"{here}.values"),
            )
        )
    return tuple(out)


def node_selector(f: Fields, raw: Any, at: str) -> NodeSelector:
    terms = []
    for i, t in enumerate(f.list("nodeSelectorTerms", base=raw, at=f"{at}.nodeSelectorTerms")):
        here = f"{at}.nodeSelectorTerms[{i}]"
        terms.append(
            NodeSelectorTerm(
                match_expressions=requirements(
                    f,
                    f.list("matchExpressions", t, f"{here}.matchExpressions"),
                    f"{here}.matchExpressions",
                ),
                match_fields=requirements(f, f.list("matchFields", t, f"{here}.matchFields"), f"{here}.matchFields"),
            )
        )
    return NodeSelector(terms=tuple(terms))


def label_selector(f: Fields, raw: Any, at: str) -> LabelSelector:
    return LabelSelector(
        match_labels=tuple(sorted(f.str_map("matchLabels", raw, f"{at}.matchLabels").items())),
        match_expressions=requirements(
            f, f.list("matchExpressions", raw, f"{at}.matchExpressions"), f"{at}.matchExpressions"
        ),
    )


def owner_refs(f: Fields) -> tuple[OwnerRef, ...]:
    out = []
    for i, o in enumerate(f.list("metadata.ownerReferences")):
        at = f"metadata.ownerReferences[{i}]"
        out.append(
            OwnerRef(
                kind=f.str("kind", base=o, at=f"{at}.kind"),
                name=f.str("name", base=o, at=f"{at}.name"),
                uid=f.str("uid", base=o, at=f"{at}.uid"),
                api_version=f.str("apiVersion", base=o, at=f"{at}.apiVersion"),
                controller=f.bool("controller", base=o, at=f"{at}.controller"),
            )
        )
    return tuple(out)


def name_of(f: Fields) -> str:
    """metadata.name, required."""
    name = f.str("metadata.name")
    if not name:
        raise f.error("metadata.name", "is required")
    return name


def _container_resources(f: Fields, c: Any, at: str) -> tuple[dict[str, int], dict[str, int]]:
    """(requests, limits) of one container; requests default to limits as the API server does."""
    limits = f.resources("resources.limits", base=c, at=f"{at}.resources.limits")
    requests = f.resources("resources.requests", base=c, at=f"{at}.resources.requests")
    return {**limits, **requests}, limits


def pod_spec_resources(f: Fields, spec: Any, at: str) -> tuple[dict[str, int], dict[str, int]]:
    """Effective (requests, limits) of a pod spec."""
    reqs, lims = [], []
    for i, c in enumerate(f.list("containers", spec, f"{at}.containers")):
        r, lim = _container_resources(f, c, f"{at}.containers[{i}]")
        reqs.append(r)
        lims.append(lim)
    init_r, init_l = [], []
    for i, c in enumerate(f.list("initContainers", spec, f"{at}.initContainers")):
        here = f"{at}.initContainers[{i}]"
        r, lim = _container_resources(f, c, here)
        sidecar = f.str("restartPolicy", base=c, at=f"{here}.restartPolicy") == "Always"
        init_r.append((r, sidecar))
        init_l.append((lim, sidecar))
    overhead = f.resources("overhead", spec, f"{at}.overhead")
    pod_lim = f.resources("resources.limits", spec, f"{at}.resources.limits")
    pod_req = {**pod_lim, **f.resources("resources.requests", spec, f"{at}.resources.requests")}
    limits = resources.effective(lims, init_l, {}, pod_lim)
    # kube adds overhead only to the limits that are set
    limits = resources.add(limits, {k: v for k, v in overhead.items() if k in limits})
    return resources.effective(reqs, init_r, overhead, pod_req), limits


def pod_from_raw(raw: Mapping[str, Any]) -> Pod:
    f = Fields(raw)
    name = name_of(f)
    spec = f.mapping("spec")
    requests, limits = pod_spec_resources(f, spec, "spec")
    volumes = []
    for i, v in enumerate(f.list("spec.volumes")):
        at = f"spec.volumes[{i}]"
        vname = f.str("name", base=v, at=f"{at}.name")
        claim = f.str("persistentVolumeClaim.claimName", base=v, at=f"{at}.persistentVolumeClaim.claimName")
        if claim:
            volumes.append(PodVolume(name=vname, claim_name=claim))
        elif f.get("ephemeral", base=v) is not None:
            volumes.append(PodVolume(name=vname, claim_name=f"{name}-{vname}", ephemeral=True))
    affinity_raw = f.get("spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution")
    tolerations = []
    for i, t in enumerate(f.list("spec.tolerations")):
        at = f"spec.tolerations[{i}]"
        tolerations.append(
            Toleration(
                key=f.str("key", base=t, at=f"{at}.key"),
                operator=f.str("operator", base=t, at=f"{at}.operator") or "Equal",
                value=f.str("value", base=t, at=f"{at}.value"),
                effect=f.str("effect", base=t, at=f"{at}.effect"),
            )
        )
    conditions = []
    for i, c in enumerate(f.list("status.conditions")):
        at = f"status.conditions[{i}]"
        conditions.append(
            PodCondition(
                type=f.str("type", base=c, at=f"{at}.type"),
                status=f.str("status", base=c, at=f"{at}.status"),
                last_transition_time=f.time("lastTransitionTime", base=c, at=f"{at}.lastTransitionTime"),
            )
        )
    return Pod(
        namespace=f.str("metadata.namespace") or "default",
        name=name,
        uid=f.str("metadata.uid"),
        resource_version=f.str("metadata.resourceVersion"),
        labels=f.str_map("metadata.labels"),
        annotations=f.str_map("metadata.annotations"),
        owner_refs=owner_refs(f),
        creation=f.time("metadata.creationTimestamp"),
        deleting=f.get("metadata.deletionTimestamp") is not None,
        node_name=f.str("spec.nodeName"),
        phase=f.str("status.phase") or "Pending",
        scheduler_name=f.str("spec.schedulerName") or "default-scheduler",
        priority=f.int("spec.priority"),
        priority_class_name=f.str("spec.priorityClassName"),
        node_selector=f.str_map("spec.nodeSelector"),
        affinity=None
        if affinity_raw is None
        else node_selector(
            f,
            affinity_raw,
            "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution",
        ),
        tolerations=tuple(tolerations),
        volumes=tuple(volumes),
        requests=requests,
        limits=limits,
        conditions=tuple(conditions),
    )


def node_from_raw(raw: Mapping[str, Any]) -> Node:
    f = Fields(raw)
    taints = []
    for i, t in enumerate(f.list("spec.taints")):
        at = f"spec.taints[{i}]"
        taints.append(
            Taint(
                key=f.str("key", base=t, at=f"{at}.key"),
                value=f.str("value", base=t, at=f"{at}.value"),
                effect=f.str("effect", base=t, at=f"{at}.effect"),
            )
        )
    capacity = f.resources("status.capacity")
    allocatable = f.resources("status.allocatable") or capacity
    return Node(
        name=name_of(f),
        uid=f.str("metadata.uid"),
        resource_version=f.str("metadata.resourceVersion"),
        labels=f.str_map("metadata.labels"),
        annotations=f.str_map("metadata.annotations"),
        unschedulable=f.bool("spec.unschedulable"),
        taints=tuple(taints),
        allocatable=allocatable,
        capacity=capacity,
    )


def _class_of(f: Fields) -> str:
    annotations = f.str_map("metadata.annotations")
    if ANN_BETA_CLASS in annotations:
        return annotations[ANN_BETA_CLASS]
    return f.str("spec.storageClassName")


def pv_from_raw(raw: Mapping[str, Any]) -> PersistentVolume:
    f = Fields(raw)
    ref = f.get("spec.claimRef")
    affinity = f.get("spec.nodeAffinity.required")
    return PersistentVolume(
        name=name_of(f),
        resource_version=f.str("metadata.resourceVersion"),
        labels=f.str_map("metadata.labels"),
        annotations=f.str_map("metadata.annotations"),
        storage_class=_class_of(f),
        capacity=f.quantity("spec.capacity.storage") or 0,
        access_modes=f.str_list("spec.accessModes"),
        volume_mode=f.str("spec.volumeMode") or "Filesystem",
        claim_ref=None
        if ref is None
        else ClaimRef(
            namespace=f.str("spec.claimRef.namespace"),
            name=f.str("spec.claimRef.name"),
            uid=f.str("spec.claimRef.uid"),
        ),
        phase=f.str("status.phase"),
        deleting=f.get("metadata.deletionTimestamp") is not None,
        node_affinity=None if affinity is None else node_selector(f, affinity, "spec.nodeAffinity.required"),
        attributes_class=f.str("spec.volumeAttributesClassName"),
    )


def pvc_from_raw(raw: Mapping[str, Any]) -> PersistentVolumeClaim:
    f = Fields(raw)
    selector = f.get("spec.selector")
    return PersistentVolumeClaim(
        namespace=f.str("metadata.namespace") or "default",
        name=name_of(f),
        uid=f.str("metadata.uid"),
        resource_version=f.str("metadata.resourceVersion"),
        labels=f.str_map("metadata.labels"),
        annotations=f.str_map("metadata.annotations"),
        owner_refs=owner_refs(f),
        storage_class=_class_of(f),
        volume_name=f.str("spec.volumeName"),
        request=f.quantity("spec.resources.requests.storage"),
        access_modes=f.str_list("spec.accessModes"),
        volume_mode=f.str("spec.volumeMode") or "Filesystem",
        selector=None if selector is None else label_selector(f, selector, "spec.selector"),
        phase=f.str("status.phase"),
        deleting=f.get("metadata.deletionTimestamp") is not None,
        attributes_class=f.str("spec.volumeAttributesClassName"),
    )


def storage_class_from_raw(raw: Mapping[str, Any]) -> StorageClass:
    f = Fields(raw)
    annotations = f.str_map("metadata.annotations")
    weight = None
    if ANN_CLASS_WEIGHT in annotations:
        text = annotations[ANN_CLASS_WEIGHT]
        if not text.isdigit() or int(text) < 1:
            raise f.error(
                f"metadata.annotations[{ANN_CLASS_WEIGHT}]",
                f"must be a positive integer, got {text!r}",
            )
        weight = int(text)
    terms = []
    for i, t in enumerate(f.list("allowedTopologies")):
        at = f"allowedTopologies[{i}].matchLabelExpressions"
        exprs = []
        for j, e in enumerate(f.list("matchLabelExpressions", t, at)):
            exprs.append((f.str("key", base=e, at=f"{at}[{j}].key"), f.str_list("values", e, f"{at}[{j}].values")))
        terms.append(TopologyTerm(expressions=tuple(exprs)))
    mode = f.str("volumeBindingMode") or None
    if mode not in (None, "Immediate", "WaitForFirstConsumer"):
        raise f.error(
            "volumeBindingMode",
            f"unsupported value {mode!r}: want Immediate or WaitForFirstConsumer",
        )
    return StorageClass(
        name=name_of(f),
        resource_version=f.str("metadata.resourceVersion"),
        annotations=annotations,
        provisioner=f.str("provisioner"),
        binding_mode=mode,
        allowed_topologies=tuple(terms),
        weight=weight,
    )


def csi_driver_from_raw(raw: Mapping[str, Any]) -> CSIDriver:
    f = Fields(raw)
    return CSIDriver(
        name=name_of(f),
        resource_version=f.str("metadata.resourceVersion"),
        storage_capacity=f.bool("spec.storageCapacity"),
    )


def csi_capacity_from_raw(raw: Mapping[str, Any]) -> CSIStorageCapacity:
    f = Fields(raw)
    topology = f.get("nodeTopology")
    return CSIStorageCapacity(
        namespace=f.str("metadata.namespace") or "default",
        name=name_of(f),
        resource_version=f.str("metadata.resourceVersion"),
        storage_class=f.str("storageClassName"),
        capacity=f.quantity("capacity"),
        maximum_volume_size=f.quantity("maximumVolumeSize"),
        node_topology=None if topology is None else label_selector(f, topology, "nodeTopology"),
    )


# (API group, kind) -> converter. Later policies add their kinds here.
CONVERTERS: dict[tuple[str, str], Converter] = {
    ("", "Pod"): pod_from_raw,
    ("", "Node"): node_from_raw,
    ("", "PersistentVolume"): pv_from_raw,
    ("", "PersistentVolumeClaim"): pvc_from_raw,
    ("storage.k8s.io", "StorageClass"): storage_class_from_raw,
    ("storage.k8s.io", "CSIDriver"): csi_driver_from_raw,
    ("storage.k8s.io", "CSIStorageCapacity"): csi_capacity_from_raw,
}


def kind_key(raw: Mapping[str, Any]) -> tuple[str, str]:
    """(group, kind) of a raw object; raises InputError when kind is missing."""
    kind = raw.get("kind")
    api_version = raw.get("apiVersion", "")
    if not isinstance(kind, str) or not kind:
        raise Fields(raw).error("kind", "is required")
    if not isinstance(api_version, str):
        raise Fields(raw).error("apiVersion", "expected a string")
    return group_of(api_version), kind


def convert(raw: Mapping[str, Any]) -> Any | None:
    """The model object for a raw object, or None when berth does not read that kind."""
    if not isinstance(raw, Mapping):
        raise InputError("object", "", f"expected a Kubernetes object, got {type(raw).__name__}")
    fn = CONVERTERS.get(kind_key(raw))
    return None if fn is None else fn(raw)
