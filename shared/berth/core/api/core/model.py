"""The cluster objects the policies read, as msgspec Structs.

Quantities: storage sizes (PV capacity, claim requests, CSIStorageCapacity) are
exact nano-units (see quantity.py). Resource lists map a resource name to kube's
integer form: millicores for cpu, whole units (rounded up) for everything else.
Times are timezone-aware datetimes.

Models (here and in loadaware, buffers, preemption and selectors) are trees of immutable data that
never take part in a reference cycle: they are left out of the garbage collector (gc=False), which
saves each its collector header and the collector's young passes their scanning.
"""

from __future__ import annotations

import sys
from datetime import datetime

import msgspec

from berth.core.api.meta.model import OwnerRef
from berth.core.api.meta.normalise import MilliList
from berth.core.api.meta.selectors import LabelSelector, NodeSelector, TopologyTerm

ResourceList = dict[str, int]
_set, _intern = msgspec.structs.force_setattr, sys.intern

ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node"
ANN_BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
ANN_BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
ANN_BETA_CLASS = "volume.beta.kubernetes.io/storage-class"
ANN_CLASS_WEIGHT = "storageclass.kubernetes.io/weight"


class Toleration(msgspec.Struct, frozen=True, gc=False):
    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""

    def tolerates(self, taint: Taint) -> bool:
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator == "Exists":
            return True
        return self.operator in ("", "Equal") and self.value == taint.value


class Taint(msgspec.Struct, frozen=True, gc=False):
    key: str
    value: str = ""
    effect: str = ""


class PodCondition(msgspec.Struct, frozen=True, gc=False):
    type: str
    status: str
    last_transition_time: datetime | None = None
    reason: str = ""


class PodVolume(msgspec.Struct, frozen=True, gc=False):
    """A PVC-backed pod volume: a persistentVolumeClaim or a generic ephemeral volume."""

    name: str
    claim_name: str
    ephemeral: bool = False


class InlineDisk(msgspec.Struct, frozen=True, gc=False):
    """An inline gcePersistentDisk, awsElasticBlockStore, iscsi or rbd volume: what names the disk
    (pdName, volumeID, iqn, image), the RBD pool and monitors, and readOnly."""

    kind: str  # gce | aws | iscsi | rbd
    name: str
    read_only: bool = False
    pool: str = ""
    monitors: tuple[str, ...] = ()


class Pod(msgspec.Struct, frozen=True, gc=False):
    namespace: str
    name: str
    uid: str = ""
    resource_version: str = ""
    labels: dict[str, str] = {}
    annotations: dict[str, str] = {}
    owner_refs: tuple[OwnerRef, ...] = ()
    creation: datetime | None = None
    deleting: bool = False
    node_name: str = ""
    phase: str = "Pending"
    scheduler_name: str = "default-scheduler"
    priority: int | None = None
    priority_class_name: str = ""
    node_selector: dict[str, str] = {}
    affinity: NodeSelector | None = None
    tolerations: tuple[Toleration, ...] = ()
    volumes: tuple[PodVolume, ...] = ()
    requests: ResourceList = {}
    limits: ResourceList = {}
    conditions: tuple[PodCondition, ...] = ()
    # inter-pod affinity and topology spread (InterPodAffinity, PodTopologySpread)
    pod_affinity: PodAffinity | None = None
    spread: tuple[SpreadConstraint, ...] = ()
    # cpu and memory as kube's scoring counts them (100m / 200Mi for a container naming neither);
    # empty when every container names both: then they are the requests' own
    nonzero_requests: ResourceList = {}
    # preferred node affinity: (weight, the term as a one-term selector), weight-0 terms left out
    preferred_affinity: tuple[tuple[int, NodeSelector], ...] = ()
    # host ports of sidecars then containers: (hostIP, protocol, hostPort), "0.0.0.0" and "TCP" when unset
    host_ports: tuple[tuple[str, str, int], ...] = ()
    inline_disks: tuple[InlineDisk, ...] = ()
    images: tuple[str, ...] = ()  # init containers' then containers' images, `:latest` when untagged
    # preemption: spec.preemptionPolicy ("" when unset), status.startTime, status.nominatedNodeName
    preemption_policy: str = ""
    start_time: datetime | None = None
    nominated_node: str = ""
    # inline AWS EBS, GCE PD and Azure Disk volumes as CSI sees them: (driver, handle) (berth.core.api.core.intree)
    inline_csi: tuple[tuple[str, str], ...] = ()
    scheduling_gates: tuple[str, ...] = ()  # spec.schedulingGates' names: kube's SchedulingGates holds the pod back
    # namespace/name, set when the pod is made (whatever is passed is replaced); interned, as every
    # index keeps its own reference to it
    key: str = ""
    # the spec's own requests when an in-place resize makes `requests` differ from them (Koordinator's
    # estimator reads these); None when they are `requests`
    spec_requests: ResourceList | None = None
    # spec.resourceClaims' names: dynamic resource allocation, which berth does not model (DynamicResources)
    resource_claims: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        _set(self, "key", _intern(f"{self.namespace}/{self.name}"))

    @property
    def terminated(self) -> bool:
        return self.phase in ("Succeeded", "Failed")

    @property
    def pending(self) -> bool:
        """Waiting for a placement: no node, not finished, not being deleted."""
        return not self.node_name and not self.terminated and not self.deleting

    def controller(self) -> OwnerRef | None:
        return next((o for o in self.owner_refs if o.controller), None)


class Node(msgspec.Struct, frozen=True, gc=False):
    name: str
    uid: str = ""
    resource_version: str = ""
    labels: dict[str, str] = {}
    annotations: dict[str, str] = {}
    unschedulable: bool = False
    taints: tuple[Taint, ...] = ()
    allocatable: ResourceList = {}
    capacity: ResourceList = {}
    images: dict[str, int] = {}  # status.images: each name as written -> the image's size in bytes


class ClaimRef(msgspec.Struct, frozen=True, gc=False):
    namespace: str
    name: str
    uid: str = ""

    def names(self, claim: PersistentVolumeClaim) -> bool:
        """True if this reference is to that claim (uid checked only when set)."""
        return self.namespace == claim.namespace and self.name == claim.name and (not self.uid or self.uid == claim.uid)


class PersistentVolume(msgspec.Struct, frozen=True, gc=False):
    name: str
    resource_version: str = ""
    labels: dict[str, str] = {}
    annotations: dict[str, str] = {}
    storage_class: str = ""
    capacity: int = 0
    access_modes: tuple[str, ...] = ()
    volume_mode: str = "Filesystem"
    claim_ref: ClaimRef | None = None
    phase: str = ""
    deleting: bool = False
    node_affinity: NodeSelector | None = None
    attributes_class: str = ""
    csi_driver: str = ""  # spec.csi: the driver and the volume's handle
    csi_handle: str = ""
    # an in-tree AWS EBS, GCE PD or Azure Disk source as CSI sees it (berth.core.api.core.intree); "" otherwise
    migrated_driver: str = ""
    migrated_handle: str = ""


class PersistentVolumeClaim(msgspec.Struct, frozen=True, gc=False):
    namespace: str
    name: str
    uid: str = ""
    resource_version: str = ""
    labels: dict[str, str] = {}
    annotations: dict[str, str] = {}
    owner_refs: tuple[OwnerRef, ...] = ()
    storage_class: str = ""
    volume_name: str = ""
    request: int | None = None
    access_modes: tuple[str, ...] = ()
    volume_mode: str = "Filesystem"
    selector: LabelSelector | None = None
    phase: str = ""
    deleting: bool = False
    attributes_class: str = ""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def bound(self) -> bool:
        return bool(self.volume_name) and ANN_BIND_COMPLETED in self.annotations

    @property
    def selected_node(self) -> str | None:
        return self.annotations.get(ANN_SELECTED_NODE)


class StorageClass(msgspec.Struct, frozen=True, gc=False):
    name: str
    resource_version: str = ""
    annotations: dict[str, str] = {}
    provisioner: str = ""
    binding_mode: str | None = None
    allowed_topologies: tuple[TopologyTerm, ...] = ()
    weight: int | None = None

    @property
    def can_provision(self) -> bool:
        return self.provisioner not in ("", "kubernetes.io/no-provisioner")


class CSIDriver(msgspec.Struct, frozen=True, gc=False):
    name: str
    resource_version: str = ""
    storage_capacity: bool = False


class CSIStorageCapacity(msgspec.Struct, frozen=True, gc=False):
    namespace: str
    name: str
    resource_version: str = ""
    storage_class: str = ""
    capacity: int | None = None
    maximum_volume_size: int | None = None
    node_topology: LabelSelector | None = None

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def limit(self) -> int | None:
        return self.maximum_volume_size if self.maximum_volume_size is not None else self.capacity


# ---- inter-pod affinity, topology spread and namespaces (InterPodAffinity, PodTopologySpread) ----


class PodAffinityTerm(msgspec.Struct, frozen=True, gc=False):
    """One pod (anti-)affinity term. selector None matches no pod; namespaces empty and namespace_selector
    None mean the namespace of the pod that owns the term. weight: a preferred term's weight."""

    topology_key: str
    selector: LabelSelector | None = None
    namespaces: tuple[str, ...] = ()
    namespace_selector: LabelSelector | None = None
    weight: int = 0


class PodAffinity(msgspec.Struct, frozen=True, gc=False):
    """A pod's podAffinity and podAntiAffinity (present: the pod is a "pod with affinity", even if empty)."""

    required: tuple[PodAffinityTerm, ...] = ()
    required_anti: tuple[PodAffinityTerm, ...] = ()
    preferred: tuple[PodAffinityTerm, ...] = ()
    preferred_anti: tuple[PodAffinityTerm, ...] = ()


class SpreadConstraint(msgspec.Struct, frozen=True, gc=False):
    """One topologySpreadConstraints entry; policies and minDomains defaulted as the plugin does."""

    max_skew: int
    topology_key: str
    when_unsatisfiable: str  # DoNotSchedule | ScheduleAnyway
    selector: LabelSelector | None = None
    min_domains: int = 1
    node_affinity_policy: str = "Honor"
    node_taints_policy: str = "Ignore"
    match_label_keys: tuple[str, ...] = ()


class Namespace(msgspec.Struct, frozen=True, gc=False):
    name: str
    resource_version: str = ""
    labels: dict[str, str] = {}


class Service(msgspec.Struct, frozen=True, gc=False):
    """A Service's pod selector (PodTopologySpread's default constraints); None: no selector, no pod."""

    namespace: str
    name: str
    resource_version: str = ""
    selector: dict[str, str] | None = None


class CSINode(msgspec.Struct, frozen=True, gc=False):
    """A node's CSI drivers; `limits`: per driver, the most volumes it can attach (allocatable.count)."""

    name: str
    resource_version: str = ""
    drivers: tuple[str, ...] = ()
    limits: dict[str, int] = {}


class VolumeAttachment(msgspec.Struct, frozen=True, gc=False):
    """A volume the attach/detach controller attaches to a node: `attacher` (the CSI driver), the node
    and the PersistentVolume it attaches (spec.source.persistentVolumeName; "" for an inline spec)."""

    name: str
    resource_version: str = ""
    attacher: str = ""
    node_name: str = ""
    pv_name: str = ""


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
