"""Normalisation of the core kinds: wire Structs (berth.core.wire) to the cluster model.

Each function takes a decoded wire object and returns the model, or raises `Bad` naming the field;
`berth.core.api.kinds` decodes the bytes or Python objects and names the object in the error.
"""

from __future__ import annotations

import sys

from berth.core.api.core import intree
from berth.core.api.core import wire as wc
from berth.core.api.core.model import (
    ANN_BETA_CLASS,
    ANN_CLASS_WEIGHT,
    ClaimRef,
    CSIDriver,
    CSINode,
    CSIStorageCapacity,
    InlineDisk,
    Namespace,
    Node,
    PersistentVolume,
    PersistentVolumeClaim,
    Pod,
    PodAffinity,
    PodAffinityTerm,
    PodCondition,
    PodVolume,
    ResourceQuota,
    ScopeRequirement,
    Service,
    SpreadConstraint,
    StorageClass,
    Taint,
    Toleration,
    VolumeAttachment,
)
from berth.core.api.core.resources import pod_amounts
from berth.core.api.meta import wire as w
from berth.core.api.meta.normalise import (
    EMPTY_META,
    NO_TEXTS,
    TEXTS,
    Bad,
    label_selector,
    milli_list,
    moment,
    name_of,
    namespace_of,
    nanos,
    node_selector,
    owner_refs,
    positional,
    resource_list,
    shared,
    texts,
)
from berth.core.api.meta.selectors import LabelSelector, NodeSelector, Requirement, TopologyTerm

_IMAGES: dict[str, str] = {}  # image name -> normalised: many pods share an image


def preferred_terms(
    affinity: wc.NodeAffinity | None,
) -> tuple[tuple[int, NodeSelector], ...]:
    """Preferred node-affinity terms with a weight, each as a one-term selector (its masks are cached)."""
    terms = None if affinity is None else affinity.preferred_during_scheduling_ignored_during_execution
    return tuple(
        (t.weight, node_selector(w.NodeSelector(node_selector_terms=(t.preference,))))
        for t in terms or ()
        if t.weight and t.preference is not None
    )


def host_ports(spec: wc.PodSpec) -> tuple[tuple[str, str, int], ...]:
    """kube's GetHostPorts: sidecars' (restartable init containers') then containers' host ports."""
    inits = spec.init_containers
    sources = [c for c in inits if c.ports and c.restart_policy == "Always"] if inits else []
    for c in spec.containers or ():
        if c.ports:
            sources.append(c)
    if not sources:
        return ()
    return tuple(
        (p.host_ip or "0.0.0.0", p.protocol or "TCP", p.host_port)
        for c in sources
        for p in c.ports or ()
        if p.host_port is not None and p.host_port > 0
    )


def inline_disks(vol: wc.Volume) -> list[InlineDisk]:
    """An inline gcePersistentDisk, awsElasticBlockStore, iscsi or rbd volume, as VolumeRestrictions compares them."""
    out = []
    if vol.gce_persistent_disk is not None:
        d = vol.gce_persistent_disk
        out.append(InlineDisk("gce", d.pd_name or "", bool(d.read_only)))
    if vol.aws_elastic_block_store is not None:
        a = vol.aws_elastic_block_store
        out.append(InlineDisk("aws", a.volume_id or "", bool(a.read_only)))
    if vol.iscsi is not None:
        out.append(InlineDisk("iscsi", vol.iscsi.iqn or "", bool(vol.iscsi.read_only)))
    if vol.rbd is not None:
        r = vol.rbd
        out.append(InlineDisk("rbd", r.image or "", bool(r.read_only), r.pool or "", tuple(r.monitors or ())))
    return out


_CONDITIONS: dict[tuple[wc.PodCondition, ...], tuple[PodCondition, ...]] = {}
positional(PodCondition, "type", "status", "last_transition_time", "reason")


def conditions(v: list[wc.PodCondition]) -> tuple[PodCondition, ...]:
    """A pod's conditions; one tuple shared by the pods whose conditions are equal (those that started
    in the same second), as models never change them; a bounded cache."""
    if not v:
        return ()
    key = tuple(v)  # wire Structs, hashable: every field they have is read
    out = _CONDITIONS.get(key)
    if out is None:
        made = []
        for i, c in enumerate(v):
            try:
                stamp = moment(c.last_transition_time)
            except Bad as e:
                raise e.under(f"status.conditions[{i}].lastTransitionTime") from None
            made.append(PodCondition(_intern(c.type or ""), _intern(c.status or ""), stamp, _intern(c.reason or "")))
        out = tuple(made)
        if len(_CONDITIONS) >= 65536:
            _CONDITIONS.clear()
        _CONDITIONS[key] = out
    return out


_TOLERATIONS: dict[tuple[wc.Toleration, ...], tuple[Toleration, ...]] = {}  # most pods have admission's defaults


def tolerations(v: tuple[wc.Toleration, ...]) -> tuple[Toleration, ...]:
    """A pod's tolerations; one tuple shared by the pods that list the same ones (a workload's pods)."""
    out = _TOLERATIONS.get(v)
    if out is None:
        out = tuple(
            Toleration(key=t.key or "", operator=t.operator or "Equal", value=t.value or "", effect=t.effect or "")
            for t in v
        )
        if len(_TOLERATIONS) >= 4096:
            _TOLERATIONS.clear()
        _TOLERATIONS[v] = out
    return out


def image_name(name: str) -> str:
    """kube's normalizedImageName: `:latest` for an image without a tag or digest."""
    out = _IMAGES.get(name)
    if out is None:
        out = name if name.rfind(":") > name.rfind("/") else f"{name}:latest"
        if len(_IMAGES) >= 16384:
            _IMAGES.clear()
        _IMAGES[name] = out
    return out


def pod_images(spec: wc.PodSpec) -> tuple[str, ...]:
    """Init containers' then containers' images, normalised."""
    inits = spec.init_containers
    containers = spec.containers or ()
    if inits:
        containers = (*inits, *containers)
    known = _IMAGES.get
    return tuple([known(c.image or "") or image_name(c.image or "") for c in containers])


positional(
    Pod,
    "namespace", "name", "uid", "resource_version", "labels", "annotations", "owner_refs", "creation",
    "deleting", "node_name", "phase", "scheduler_name", "priority", "priority_class_name", "node_selector",
    "affinity", "tolerations", "volumes", "requests", "limits", "conditions", "pod_affinity", "spread",
    "nonzero_requests", "preferred_affinity", "host_ports", "inline_disks", "images", "preemption_policy",
    "start_time", "nominated_node", "inline_csi", "scheduling_gates", "key", "spec_requests", "resource_claims",
)  # fmt: skip
positional(PodVolume, "name", "claim_name", "ephemeral")
positional(Requirement, "key", "operator", "values")
positional(LabelSelector, "match_labels", "match_expressions")
_NO_POD_SPEC = wc.PodSpec()
_NO_POD_STATUS = wc.PodStatus()


def pod(v: wc.Pod) -> Pod:
    meta = v.metadata or EMPTY_META
    name = meta.name
    if not name:
        raise Bad("metadata.name", "is required")
    spec = v.spec or _NO_POD_SPEC
    status = v.status or _NO_POD_STATUS
    requests, limits, nonzero, spec_requests = pod_amounts(spec, "spec", status)
    volumes = []
    disks: list[InlineDisk] = []
    inline: list[tuple[str, str]] = []
    for vol in spec.volumes or ():
        source = vol.persistent_volume_claim
        claim = "" if source is None else source.claim_name
        aws, gce, azure = vol.aws_elastic_block_store, vol.gce_persistent_disk, vol.azure_disk
        if claim:
            volumes.append(PodVolume(vol.name or "", claim, False))
        elif vol.ephemeral is not None:
            vname = vol.name or ""
            volumes.append(PodVolume(vname, f"{name}-{vname}", True))
        elif gce or aws or vol.iscsi or vol.rbd:
            disks.extend(inline_disks(vol))
        if aws is None and gce is None and azure is None:
            continue
        migrated = _migrated(aws, gce, azure, None)
        if migrated is not None and not claim and vol.ephemeral is None:
            inline.append(migrated)
    affinity = spec.affinity
    node_affinity = None if affinity is None else affinity.node_affinity
    required = None if node_affinity is None else node_affinity.required_during_scheduling_ignored_during_execution
    conds = conditions(status.conditions) if status.conditions else ()
    try:
        creation = moment(meta.creation_timestamp)
    except Bad as e:
        raise e.under("metadata.creationTimestamp") from None
    try:
        started = moment(status.start_time)
    except Bad as e:
        raise e.under("status.startTime") from None
    gates, claims = spec.scheduling_gates, spec.resource_claims
    return Pod(
        _intern(meta.namespace or "default"),
        name,
        meta.uid or "",
        meta.resource_version or "",
        shared(TEXTS, meta.labels) if meta.labels else NO_TEXTS,  # labels
        shared(TEXTS, meta.annotations) if meta.annotations else NO_TEXTS,  # annotations
        owner_refs(meta),
        creation,
        meta.deletion_timestamp is not None,  # deleting
        _intern(spec.node_name or ""),  # node_name
        _intern(status.phase or "Pending"),  # phase
        _intern(spec.scheduler_name or "default-scheduler"),  # scheduler_name
        spec.priority,
        _intern(spec.priority_class_name or ""),  # priority_class_name
        shared(TEXTS, spec.node_selector) if spec.node_selector else NO_TEXTS,  # node_selector
        None if required is None else node_selector(required),  # affinity
        tolerations(spec.tolerations) if spec.tolerations else (),
        tuple(volumes),
        requests,
        limits,
        conds,  # conditions
        None if affinity is None else pod_affinity(affinity),  # pod_affinity
        spread_constraints(spec.topology_spread_constraints) if spec.topology_spread_constraints else (),  # spread
        nonzero,  # nonzero_requests
        () if node_affinity is None else preferred_terms(node_affinity),  # preferred_affinity
        host_ports(spec),
        tuple(disks),  # inline_disks
        pod_images(spec),  # images
        _intern(spec.preemption_policy or ""),  # preemption_policy
        started,  # start_time
        status.nominated_node_name or "",  # nominated_node
        tuple(inline),  # inline_csi
        tuple(g.name or "" for g in gates) if gates else (),  # scheduling_gates
        "",  # key: the model sets it from namespace and name
        spec_requests,
        tuple(c.name or "" for c in claims) if claims else (),  # resource_claims
    )


def node(v: wc.Node) -> Node:
    meta = v.metadata or EMPTY_META
    spec = v.spec or wc.NodeSpec()
    status = v.status or wc.NodeStatus()
    try:
        capacity = resource_list(status.capacity)
    except Bad as e:
        raise e.under("status.capacity") from None
    try:
        allocatable = resource_list(status.allocatable) or capacity
    except Bad as e:
        raise e.under("status.allocatable") from None
    return Node(
        name=name_of(meta),
        uid=meta.uid or "",
        resource_version=meta.resource_version or "",
        labels=texts(meta.labels),
        annotations=texts(meta.annotations),
        unschedulable=bool(spec.unschedulable),
        taints=tuple(Taint(key=t.key or "", value=t.value or "", effect=t.effect or "") for t in spec.taints or ()),
        allocatable=allocatable,
        capacity=capacity,
        images={n: i.size_bytes or 0 for i in status.images or () for n in i.names or ()},
    )


_STORAGE: dict[object, int] = {}  # sizes repeat (10Gi, 100Gi, 1Ti): parsed once, a bounded cache


def size(q: w.Quantity, path: str) -> int:
    """A storage size: any quantity, compared exactly (Quantity.Cmp), but not below 0, which the API server
    rejects (ValidateNonnegativeQuantity)."""
    n = nanos(q, path, bounded=False)
    if n < 0:
        raise Bad(path, f"{q!r} must be greater than or equal to 0")
    return n


def _storage(v: wc.Storage | None, at: str) -> int | None:
    if v is None:
        return None
    q = v.storage
    if q is None:
        return None
    n = _STORAGE.get(q)
    if n is None:
        n = size(q, f"{at}.storage")
        if len(_STORAGE) >= 4096:
            _STORAGE.clear()
        _STORAGE[q] = n
    return n


def _migrated(
    aws: wc.AWSElasticBlockStore | None,
    gce: wc.GCEPersistentDisk | None,
    azure: wc.AzureDisk | None,
    labels: dict[str, str] | None,
) -> tuple[str, str] | None:
    """An in-tree disk's CSI driver and handle (labels: a PV's, for a GCE PD's zone; None inline)."""
    if aws is not None and aws.volume_id:
        handle = intree.aws_handle(aws.volume_id)
        return None if handle is None else (intree.AWS_EBS, handle)
    if gce is not None and gce.pd_name:
        handle = intree.gce_handle(gce.pd_name, labels)
        return None if handle is None else (intree.GCE_PD, handle)
    if azure is not None and azure.disk_uri:
        return intree.AZURE_DISK, azure.disk_uri
    return None


_ACCESS_MODES: dict[tuple[str, ...], tuple[str, ...]] = {}


def access_modes(v: list[str] | None) -> tuple[str, ...]:
    """A PV's access modes; one tuple shared by the PVs that list the same ones."""
    if not v:
        return ()
    key = tuple(v)
    out = _ACCESS_MODES.get(key)
    if out is None:
        if len(_ACCESS_MODES) >= 1024:
            _ACCESS_MODES.clear()
        out = _ACCESS_MODES[key] = tuple(sys.intern(m) for m in key)
    return out


positional(
    PersistentVolume,
    "name", "resource_version", "labels", "annotations", "storage_class", "capacity", "access_modes",
    "volume_mode", "claim_ref", "phase", "deleting", "node_affinity", "attributes_class", "csi_driver",
    "csi_handle", "migrated_driver", "migrated_handle",
)  # fmt: skip
positional(ClaimRef, "namespace", "name", "uid")
_NO_PV_SPEC = wc.PersistentVolumeSpec()
_intern = sys.intern


class _PVRun:
    """What the last PV had and was given: a node's PVs come in runs (the same annotations, node
    affinity and access modes), and comparing with the last costs less than a cache's key. Each
    attribute is replaced whole (a pair for wire value and model), never changed in place."""

    __slots__ = ("affinity", "annotations", "labels", "modes")

    def __init__(self) -> None:
        self.labels: dict[str, str] = NO_TEXTS
        self.annotations: dict[str, str] = NO_TEXTS
        self.affinity: tuple[w.NodeSelector | None, NodeSelector | None] = (None, None)
        self.modes: tuple[list[str] | None, tuple[str, ...]] = (None, ())


_PV_RUN = _PVRun()


def _same(v: dict[str, str], kept: dict[str, str]) -> bool:
    """Equal and in the same order (a model's maps keep the order they came in, as `shared` does)."""
    return v == kept and (len(v) < 2 or list(v) == list(kept))


def pv(v: wc.PersistentVolume) -> PersistentVolume:
    meta = v.metadata or EMPTY_META
    name = meta.name
    if not name:
        raise Bad("metadata.name", "is required")
    spec = v.spec or _NO_PV_SPEC
    run = _PV_RUN
    labels = meta.labels
    kept_labels, annotations = run.labels, run.annotations
    if labels and not _same(labels, kept_labels):
        kept_labels = run.labels = shared(TEXTS, labels)
    if not meta.annotations:
        annotations = NO_TEXTS
    elif not _same(meta.annotations, annotations):
        annotations = run.annotations = shared(TEXTS, meta.annotations)
    ref = spec.claim_ref
    affinity = spec.node_affinity
    required = None if affinity is None else affinity.required
    affinity_of = run.affinity
    if required is not None and required != affinity_of[0]:
        affinity_of = run.affinity = (required, node_selector(required))
    modes = run.modes
    if spec.access_modes != modes[0]:
        modes = run.modes = (spec.access_modes, access_modes(spec.access_modes))
    csi = spec.csi
    aws, gce, azure = spec.aws_elastic_block_store, spec.gce_persistent_disk, spec.azure_disk
    migrated = None if aws is None and gce is None and azure is None else _migrated(aws, gce, azure, labels or {})
    status = v.status
    return PersistentVolume(
        name,
        meta.resource_version or "",
        kept_labels if labels else NO_TEXTS,
        annotations,
        _intern(annotations.get(ANN_BETA_CLASS, spec.storage_class_name or "")),  # storage_class
        _storage(spec.capacity, "spec.capacity") or 0,  # capacity
        modes[1],  # access_modes
        _intern(spec.volume_mode or "Filesystem"),
        None if ref is None else ClaimRef(_intern(ref.namespace or ""), ref.name or "", ref.uid or ""),
        _intern(status.phase or "") if status is not None else "",  # phase
        meta.deletion_timestamp is not None,  # deleting
        None if required is None else affinity_of[1],  # node_affinity
        _intern(spec.volume_attributes_class_name or ""),  # attributes_class
        _intern(csi.driver or "") if csi is not None else "",  # csi_driver
        (csi.volume_handle or "") if csi is not None else "",  # csi_handle
        migrated[0] if migrated is not None else "",  # migrated_driver
        migrated[1] if migrated is not None else "",  # migrated_handle
    )


positional(
    PersistentVolumeClaim,
    "namespace", "name", "uid", "resource_version", "labels", "annotations", "owner_refs", "storage_class",
    "volume_name", "request", "access_modes", "volume_mode", "selector", "phase", "deleting", "attributes_class",
)  # fmt: skip
_NO_PVC_SPEC = wc.PersistentVolumeClaimSpec()


def pvc(v: wc.PersistentVolumeClaim) -> PersistentVolumeClaim:
    meta = v.metadata or EMPTY_META
    name = meta.name
    if not name:
        raise Bad("metadata.name", "is required")
    spec = v.spec or _NO_PVC_SPEC
    annotations = shared(TEXTS, meta.annotations) if meta.annotations else NO_TEXTS
    requests = None if spec.resources is None else spec.resources.requests
    return PersistentVolumeClaim(
        meta.namespace or "default",
        name,
        meta.uid or "",
        meta.resource_version or "",
        shared(TEXTS, meta.labels) if meta.labels else NO_TEXTS,
        annotations,
        owner_refs(meta),
        annotations.get(ANN_BETA_CLASS, spec.storage_class_name or ""),  # storage_class
        spec.volume_name or "",
        _storage(requests, "spec.resources.requests"),  # request
        tuple(spec.access_modes) if spec.access_modes else (),
        spec.volume_mode or "Filesystem",
        None if spec.selector is None else label_selector(spec.selector),
        (v.status.phase or "") if v.status is not None else "",  # phase
        meta.deletion_timestamp is not None,  # deleting
        spec.volume_attributes_class_name or "",  # attributes_class
    )


def storage_class(v: wc.StorageClass) -> StorageClass:
    meta = v.metadata or EMPTY_META
    annotations = texts(meta.annotations)
    weight = None
    if ANN_CLASS_WEIGHT in annotations:
        text = annotations[ANN_CLASS_WEIGHT]
        if not text.isdigit() or int(text) < 1:
            raise Bad(f"metadata.annotations[{ANN_CLASS_WEIGHT}]", f"must be a positive integer, got {text!r}")
        weight = int(text)
    terms = tuple(
        TopologyTerm(
            expressions=tuple(
                (e.key or "", tuple(e.values) if e.values else ()) for e in t.match_label_expressions or ()
            )
        )
        for t in v.allowed_topologies or ()
    )
    mode = v.volume_binding_mode or None
    if mode not in (None, "Immediate", "WaitForFirstConsumer"):
        raise Bad("volumeBindingMode", f"unsupported value {mode!r}: want Immediate or WaitForFirstConsumer")
    return StorageClass(
        name=name_of(meta),
        resource_version=meta.resource_version or "",
        annotations=annotations,
        provisioner=v.provisioner or "",
        binding_mode=mode,
        allowed_topologies=terms,
        weight=weight,
    )


def csi_driver(v: wc.CSIDriver) -> CSIDriver:
    meta = v.metadata or EMPTY_META
    return CSIDriver(
        name=name_of(meta),
        resource_version=meta.resource_version or "",
        storage_capacity=bool(v.spec is not None and v.spec.storage_capacity),
    )


def csi_capacity(v: wc.CSIStorageCapacity) -> CSIStorageCapacity:
    meta = v.metadata or EMPTY_META
    return CSIStorageCapacity(
        namespace=meta.namespace or "default",
        name=name_of(meta),
        resource_version=meta.resource_version or "",
        storage_class=v.storage_class_name or "",
        capacity=None if v.capacity is None else size(v.capacity, "capacity"),
        maximum_volume_size=None if v.maximum_volume_size is None else size(v.maximum_volume_size, "maximumVolumeSize"),
        node_topology=None if v.node_topology is None else label_selector(v.node_topology),
    )


# ---- inter-pod affinity, topology spread, namespaces ----


positional(PodAffinityTerm, "topology_key", "selector", "namespaces", "namespace_selector", "weight")
_NO_AFFINITY_TERM = wc.PodAffinityTerm()


def _affinity_term(t: wc.PodAffinityTerm | None, weight: int = 0) -> PodAffinityTerm:
    t = t or _NO_AFFINITY_TERM
    return PodAffinityTerm(
        t.topology_key or "",
        None if t.label_selector is None else label_selector(t.label_selector),  # selector
        tuple(t.namespaces) if t.namespaces else (),  # namespaces
        None if t.namespace_selector is None else label_selector(t.namespace_selector),  # namespace_selector
        weight,
    )


def _terms(v: wc.PodAffinity | None) -> tuple[tuple[PodAffinityTerm, ...], tuple[PodAffinityTerm, ...]]:
    if v is None:
        return (), ()
    required = tuple(_affinity_term(t) for t in v.required_during_scheduling_ignored_during_execution or ())
    preferred = tuple(
        _affinity_term(w.pod_affinity_term, w.weight or 0)
        for w in v.preferred_during_scheduling_ignored_during_execution or ()
    )
    return required, preferred


def pod_affinity(v: wc.Affinity | None) -> PodAffinity | None:
    """podAffinity and podAntiAffinity; None when the pod has neither."""
    if v is None or (v.pod_affinity is None and v.pod_anti_affinity is None):
        return None
    required, preferred = _terms(v.pod_affinity)
    required_anti, preferred_anti = _terms(v.pod_anti_affinity)
    return PodAffinity(required, required_anti, preferred, preferred_anti)


positional(
    SpreadConstraint,
    "max_skew", "topology_key", "when_unsatisfiable", "selector", "min_domains", "node_affinity_policy",
    "node_taints_policy", "match_label_keys",
)  # fmt: skip


def spread_constraints(items: list[wc.TopologySpreadConstraint] | None) -> tuple[SpreadConstraint, ...]:
    return tuple(
        [
            SpreadConstraint(
                c.max_skew or 0,
                c.topology_key or "",
                c.when_unsatisfiable or "",
                None if c.label_selector is None else label_selector(c.label_selector),  # selector
                1 if c.min_domains is None else c.min_domains,  # min_domains
                c.node_affinity_policy or "Honor",
                c.node_taints_policy or "Ignore",
                tuple(c.match_label_keys) if c.match_label_keys else (),  # match_label_keys
            )
            for c in items or ()
        ]
    )


def namespace(v: wc.Namespace) -> Namespace:
    meta = v.metadata or EMPTY_META
    return Namespace(name=name_of(meta), resource_version=meta.resource_version or "", labels=meta.labels or {})


def service(v: wc.Service) -> Service:
    meta = v.metadata or EMPTY_META
    selector = v.spec.selector if v.spec is not None else None
    return Service(
        namespace=namespace_of(meta),
        name=name_of(meta),
        resource_version=meta.resource_version or "",
        selector=None if selector is None else dict(selector),
    )


def csi_node(v: wc.CSINode) -> CSINode:
    meta = v.metadata or EMPTY_META
    drivers = [d for d in (v.spec.drivers or ()) if d.name] if v.spec is not None else []
    return CSINode(
        name=name_of(meta),
        resource_version=meta.resource_version or "",
        drivers=tuple(d.name or "" for d in drivers),
        limits={
            d.name or "": d.allocatable.count
            for d in drivers
            if d.allocatable is not None and d.allocatable.count is not None
        },
    )


def volume_attachment(v: wc.VolumeAttachment) -> VolumeAttachment:
    meta = v.metadata or EMPTY_META
    spec = v.spec or wc.VolumeAttachmentSpec()
    source = spec.source
    return VolumeAttachment(
        name=name_of(meta),
        resource_version=meta.resource_version or "",
        attacher=spec.attacher or "",
        node_name=spec.node_name or "",
        pv_name=(source.persistent_volume_name or "") if source is not None else "",
    )


def resource_quota(v: wc.ResourceQuota) -> ResourceQuota:
    meta = v.metadata or EMPTY_META
    spec = v.spec or wc.ResourceQuotaSpec()
    status = v.status or wc.ResourceQuotaStatus()
    scope = spec.scope_selector
    try:
        hard = milli_list(status.hard)
    except Bad as e:
        raise e.under("status.hard") from None
    try:
        used = milli_list(status.used)
    except Bad as e:
        raise e.under("status.used") from None
    return ResourceQuota(
        namespace=namespace_of(meta),
        name=name_of(meta),
        uid=meta.uid or "",
        resource_version=meta.resource_version or "",
        hard=hard,
        used=used,
        scopes=tuple(spec.scopes) if spec.scopes else (),
        scope_selector=tuple(
            ScopeRequirement(scope_name=r.scope_name or "", operator=r.operator or "", values=tuple(r.values or ()))
            for r in (scope.match_expressions or () if scope is not None else ())
        ),
    )
