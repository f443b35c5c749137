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
from berth.core.rawfields import (
    Fields,
    Irregular,
    fast_path,
    flag,
    integer,
    items,
    meta_fast,
    moment,
    obj,
    objects,
    quantity,
    resource_list,
    text,
    text_list,
    text_map,
)
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


# ---- fast paths (see rawfields): the common well-formed shapes, Irregular for the rest ----


# In the loops below, string fields are read as `d.get(name, "")` and checked together: only a
# null or a wrong type goes through `text`, which reads null as "" and raises Irregular otherwise.


def _requirements_fast(v: Any) -> tuple[Requirement, ...]:
    out = []
    for r in objects(v):
        key, op = r.get("key", ""), r.get("operator", "")
        if not (type(key) is type(op) is str):
            key, op = text(key), text(op)
        out.append(Requirement(key=key, operator=op, values=text_list(r.get("values"))))
    return tuple(out)


def _node_selector_fast(v: Any) -> NodeSelector:
    if type(v) is not dict:
        raise Irregular
    terms = []
    for t in objects(v.get("nodeSelectorTerms")):
        terms.append(
            NodeSelectorTerm(
                match_expressions=_requirements_fast(t.get("matchExpressions")),
                match_fields=_requirements_fast(t.get("matchFields")),
            )
        )
    return NodeSelector(terms=tuple(terms))


def label_selector_fast(v: Any) -> LabelSelector:
    """`label_selector` on the fast path, for a selector that is present."""
    if type(v) is not dict:
        raise Irregular
    return LabelSelector(
        match_labels=tuple(sorted(text_map(v.get("matchLabels")).items())),
        match_expressions=_requirements_fast(v.get("matchExpressions")),
    )


def _owner_refs_fast(meta: dict[str, Any]) -> tuple[OwnerRef, ...]:
    refs = meta.get("ownerReferences")
    if refs is None:
        return ()
    out = []
    for o in objects(refs):
        kind, name, uid, api = o.get("kind", ""), o.get("name", ""), o.get("uid", ""), o.get("apiVersion", "")
        if not (type(kind) is type(name) is type(uid) is type(api) is str):
            kind, name, uid, api = text(kind), text(name), text(uid), text(api)
        controller = o.get("controller", False)
        if type(controller) is not bool:
            controller = flag(controller)
        out.append(OwnerRef(kind=kind, name=name, uid=uid, api_version=api, controller=controller))
    return tuple(out)


def ids_fast(meta: dict[str, Any]) -> tuple[str, str, str]:
    """(namespace or "default", uid, resourceVersion) of an object's metadata."""
    ns, uid, rv = meta.get("namespace", ""), meta.get("uid", ""), meta.get("resourceVersion", "")
    if not (type(ns) is type(uid) is type(rv) is str):
        ns, uid, rv = text(ns), text(uid), text(rv)
    return ns or "default", uid, rv


def _container_resources_fast(c: Any) -> tuple[dict[str, int], dict[str, int]]:
    if type(c) is not dict:
        raise Irregular
    res = obj(c.get("resources"))
    if res is None:
        return {}, {}
    limits = resource_list(res.get("limits"))
    requests = resource_list(res.get("requests"))
    return {**limits, **requests}, limits


def _pod_spec_resources_fast(spec: dict[str, Any]) -> tuple[dict[str, int], dict[str, int]]:
    reqs, lims = [], []
    for c in items(spec.get("containers")):
        r, lim = _container_resources_fast(c)
        reqs.append(r)
        lims.append(lim)
    init_r, init_l = [], []
    for c in items(spec.get("initContainers")):
        r, lim = _container_resources_fast(c)
        sidecar = text(c.get("restartPolicy")) == "Always"
        init_r.append((r, sidecar))
        init_l.append((lim, sidecar))
    overhead = resource_list(spec.get("overhead"))
    pod_level = obj(spec.get("resources"))
    pod_lim = {} if pod_level is None else resource_list(pod_level.get("limits"))
    pod_req = {**pod_lim, **({} if pod_level is None else resource_list(pod_level.get("requests")))}
    limits = resources.effective(lims, init_l, {}, pod_lim)
    limits = resources.add(limits, {k: v for k, v in overhead.items() if k in limits})
    return resources.effective(reqs, init_r, overhead, pod_req), limits


def _pod_fast(raw: dict[str, Any]) -> Pod:
    meta, name = meta_fast(raw)
    spec = raw.get("spec")
    if type(spec) is not dict:
        raise Irregular
    status = obj(raw.get("status")) or {}
    requests, limits = _pod_spec_resources_fast(spec)
    volumes = []
    for v in objects(spec.get("volumes")):
        vname = text(v.get("name"))
        source = obj(v.get("persistentVolumeClaim"))
        claim = "" if source is None else text(source.get("claimName"))
        if claim:
            volumes.append(PodVolume(name=vname, claim_name=claim))
        elif v.get("ephemeral") is not None:
            volumes.append(PodVolume(name=vname, claim_name=f"{name}-{vname}", ephemeral=True))
    affinity_raw = obj(spec.get("affinity"))
    node_affinity = None if affinity_raw is None else obj(affinity_raw.get("nodeAffinity"))
    required = None if node_affinity is None else node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    tolerations = []
    for t in objects(spec.get("tolerations")):
        key, op, value, effect = t.get("key", ""), t.get("operator", ""), t.get("value", ""), t.get("effect", "")
        if not (type(key) is type(op) is type(value) is type(effect) is str):
            key, op, value, effect = text(key), text(op), text(value), text(effect)
        tolerations.append(Toleration(key=key, operator=op or "Equal", value=value, effect=effect))
    conditions = []
    for c in objects(status.get("conditions")):
        ctype, cstatus = c.get("type", ""), c.get("status", "")
        if not (type(ctype) is type(cstatus) is str):
            ctype, cstatus = text(ctype), text(cstatus)
        conditions.append(
            PodCondition(type=ctype, status=cstatus, last_transition_time=moment(c.get("lastTransitionTime")))
        )
    namespace, uid, resource_version = ids_fast(meta)
    return Pod(
        namespace=namespace,
        name=name,
        uid=uid,
        resource_version=resource_version,
        labels=text_map(meta.get("labels")),
        annotations=text_map(meta.get("annotations")),
        owner_refs=_owner_refs_fast(meta),
        creation=moment(meta.get("creationTimestamp")),
        deleting=meta.get("deletionTimestamp") is not None,
        node_name=text(spec.get("nodeName")),
        phase=text(status.get("phase")) or "Pending",
        scheduler_name=text(spec.get("schedulerName")) or "default-scheduler",
        priority=integer(spec.get("priority")),
        priority_class_name=text(spec.get("priorityClassName")),
        node_selector=text_map(spec.get("nodeSelector")),
        affinity=None if required is None else _node_selector_fast(required),
        tolerations=tuple(tolerations),
        volumes=tuple(volumes),
        requests=requests,
        limits=limits,
        conditions=tuple(conditions),
    )


@fast_path(_pod_fast)
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


def _node_fast(raw: dict[str, Any]) -> Node:
    meta, name = meta_fast(raw)
    spec = obj(raw.get("spec")) or {}
    status = obj(raw.get("status")) or {}
    taints = []
    for t in objects(spec.get("taints")):
        taints.append(Taint(key=text(t.get("key")), value=text(t.get("value")), effect=text(t.get("effect"))))
    capacity = resource_list(status.get("capacity"))
    return Node(
        name=name,
        uid=text(meta.get("uid")),
        resource_version=text(meta.get("resourceVersion")),
        labels=text_map(meta.get("labels")),
        annotations=text_map(meta.get("annotations")),
        unschedulable=flag(spec.get("unschedulable")),
        taints=tuple(taints),
        allocatable=resource_list(status.get("allocatable")) or capacity,
        capacity=capacity,
    )


@fast_path(_node_fast)
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


def _volume_texts(annotations: dict[str, str], spec: dict[str, Any]) -> tuple[str, str, str]:
    """(storage class, volume mode or "Filesystem", attributes class) of a PV or PVC."""
    cls, mode, attrs = (
        spec.get("storageClassName", ""),
        spec.get("volumeMode", ""),
        spec.get("volumeAttributesClassName", ""),
    )
    if not (type(cls) is type(mode) is type(attrs) is str):
        mode, attrs = text(mode), text(attrs)
        if ANN_BETA_CLASS not in annotations:  # the general path reads storageClassName only then
            cls = text(cls)
    return annotations.get(ANN_BETA_CLASS, cls), mode or "Filesystem", attrs


def _pv_fast(raw: dict[str, Any]) -> PersistentVolume:
    meta, name = meta_fast(raw)
    spec = obj(raw.get("spec")) or {}
    status = obj(raw.get("status")) or {}
    annotations = text_map(meta.get("annotations"))
    capacity = obj(spec.get("capacity"))
    storage = None if capacity is None else capacity.get("storage")
    ref = obj(spec.get("claimRef"))
    claim_ref = None
    if ref is not None:
        ns, claim, uid = ref.get("namespace", ""), ref.get("name", ""), ref.get("uid", "")
        if not (type(ns) is type(claim) is type(uid) is str):
            ns, claim, uid = text(ns), text(claim), text(uid)
        claim_ref = ClaimRef(namespace=ns, name=claim, uid=uid)
    affinity = obj(spec.get("nodeAffinity"))
    required = None if affinity is None else affinity.get("required")
    storage_class, volume_mode, attributes_class = _volume_texts(annotations, spec)
    return PersistentVolume(
        name=name,
        resource_version=text(meta.get("resourceVersion")),
        labels=text_map(meta.get("labels")),
        annotations=annotations,
        storage_class=storage_class,
        capacity=0 if storage is None else quantity(storage),
        access_modes=text_list(spec.get("accessModes")),
        volume_mode=volume_mode,
        claim_ref=claim_ref,
        phase=text(status.get("phase")),
        deleting=meta.get("deletionTimestamp") is not None,
        node_affinity=None if required is None else _node_selector_fast(required),
        attributes_class=attributes_class,
    )


@fast_path(_pv_fast)
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


def _pvc_fast(raw: dict[str, Any]) -> PersistentVolumeClaim:
    meta, name = meta_fast(raw)
    spec = obj(raw.get("spec")) or {}
    status = obj(raw.get("status")) or {}
    annotations = text_map(meta.get("annotations"))
    res = obj(spec.get("resources"))
    requests = None if res is None else obj(res.get("requests"))
    storage = None if requests is None else requests.get("storage")
    selector = spec.get("selector")
    namespace, uid, resource_version = ids_fast(meta)
    storage_class, volume_mode, attributes_class = _volume_texts(annotations, spec)
    return PersistentVolumeClaim(
        namespace=namespace,
        name=name,
        uid=uid,
        resource_version=resource_version,
        labels=text_map(meta.get("labels")),
        annotations=annotations,
        owner_refs=_owner_refs_fast(meta),
        storage_class=storage_class,
        volume_name=text(spec.get("volumeName")),
        request=None if storage is None else quantity(storage),
        access_modes=text_list(spec.get("accessModes")),
        volume_mode=volume_mode,
        selector=None if selector is None else label_selector_fast(selector),
        phase=text(status.get("phase")),
        deleting=meta.get("deletionTimestamp") is not None,
        attributes_class=attributes_class,
    )


@fast_path(_pvc_fast)
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
