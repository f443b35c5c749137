"""Core Kubernetes kinds: Pod, Node, PersistentVolume(Claim), StorageClass, CSIDriver, CSIStorageCapacity, CSINode,
VolumeAttachment, Namespace, Service."""

# ---- Pod ----
from __future__ import annotations

from typing import Any

import msgspec

from berth.core.api.meta.wire import (
    Int32,
    Int64,
    LabelSelector,
    NodeSelector,
    NodeSelectorTerm,
    Object,
    Quantities,
    Quantity,
    Texts,
    Wire,
)


class ResourceRequirements(Wire, frozen=True):
    limits: Quantities | None = None
    requests: Quantities | None = None


class ContainerPort(Wire, frozen=True):
    host_port: Int32 | None = None
    host_ip: str | None = msgspec.field(default=None, name="hostIP")
    protocol: str | None = None


class Container(Wire, frozen=True):
    name: str | None = None
    image: str | None = None
    resources: ResourceRequirements | None = None
    restart_policy: str | None = None
    ports: list[ContainerPort] | None = None


class ClaimSource(Wire, frozen=True):
    claim_name: str | None = None


class GCEPersistentDisk(Wire, frozen=True):
    pd_name: str | None = None
    read_only: bool | None = None


class AWSElasticBlockStore(Wire, frozen=True):
    volume_id: str | None = msgspec.field(default=None, name="volumeID")
    read_only: bool | None = None


class AzureDisk(Wire, frozen=True):
    disk_uri: str | None = msgspec.field(default=None, name="diskURI")


class ISCSIVolume(Wire, frozen=True):
    iqn: str | None = None
    read_only: bool | None = None


class RBDVolume(Wire, frozen=True):
    monitors: list[str] | None = None
    pool: str | None = None
    image: str | None = None
    read_only: bool | None = None


class Volume(Wire, frozen=True):
    name: str | None = None
    persistent_volume_claim: ClaimSource | None = None
    ephemeral: Any = None  # only its presence is read
    # inline disks VolumeRestrictions compares across the pods of a node
    gce_persistent_disk: GCEPersistentDisk | None = None
    aws_elastic_block_store: AWSElasticBlockStore | None = None
    iscsi: ISCSIVolume | None = None
    rbd: RBDVolume | None = None
    azure_disk: AzureDisk | None = None  # NodeVolumeLimits counts it under its CSI driver


class PreferredSchedulingTerm(Wire, frozen=True):
    weight: Int32 | None = None
    preference: NodeSelectorTerm | None = None


class NodeAffinity(Wire, frozen=True):
    required_during_scheduling_ignored_during_execution: NodeSelector | None = None
    preferred_during_scheduling_ignored_during_execution: list[PreferredSchedulingTerm] | None = None


class PodAffinityTerm(Wire, frozen=True):
    label_selector: LabelSelector | None = None
    namespaces: tuple[str, ...] | None = None
    namespace_selector: LabelSelector | None = None
    topology_key: str | None = None


class WeightedPodAffinityTerm(Wire, frozen=True):
    weight: Int32 | None = None
    pod_affinity_term: PodAffinityTerm | None = None


class PodAffinity(Wire, frozen=True):
    required_during_scheduling_ignored_during_execution: list[PodAffinityTerm] | None = None
    preferred_during_scheduling_ignored_during_execution: list[WeightedPodAffinityTerm] | None = None


class Affinity(Wire, frozen=True):
    node_affinity: NodeAffinity | None = None
    pod_affinity: PodAffinity | None = None
    pod_anti_affinity: PodAffinity | None = None


class TopologySpreadConstraint(Wire, frozen=True):
    max_skew: Int32 | None = None
    topology_key: str | None = None
    when_unsatisfiable: str | None = None
    label_selector: LabelSelector | None = None
    min_domains: Int32 | None = None
    node_affinity_policy: str | None = None
    node_taints_policy: str | None = None
    match_label_keys: tuple[str, ...] | None = None


class Toleration(Wire, frozen=True):
    key: str | None = None
    operator: str | None = None
    value: str | None = None
    effect: str | None = None


class SchedulingGate(Wire, frozen=True):
    name: str | None = None


class PodResourceClaim(Wire, frozen=True):
    name: str | None = None


class PodSpec(Wire, frozen=True):
    node_name: str | None = None
    scheduler_name: str | None = None
    priority: Int32 | None = None
    priority_class_name: str | None = None
    node_selector: Texts | None = None
    affinity: Affinity | None = None
    tolerations: tuple[Toleration, ...] | None = None  # hashable: pods of a workload share their model
    volumes: list[Volume] | None = None
    containers: list[Container] | None = None
    init_containers: list[Container] | None = None
    overhead: Quantities | None = None
    resources: ResourceRequirements | None = None
    topology_spread_constraints: list[TopologySpreadConstraint] | None = None
    preemption_policy: str | None = None
    scheduling_gates: list[SchedulingGate] | None = None
    resource_claims: list[PodResourceClaim] | None = None


class PodCondition(Wire, frozen=True):
    type: str | None = None
    status: str | None = None
    last_transition_time: str | None = None
    reason: str | None = None


class ContainerStatus(Wire, frozen=True):
    name: str | None = None
    resources: ResourceRequirements | None = None
    allocated_resources: Quantities | None = None


class PodStatus(Wire, frozen=True):
    phase: str | None = None
    conditions: list[PodCondition] | None = None
    start_time: str | None = None
    nominated_node_name: str | None = None
    container_statuses: list[ContainerStatus] | None = None
    init_container_statuses: list[ContainerStatus] | None = None


class Pod(Object, frozen=True):
    spec: PodSpec | None = None
    status: PodStatus | None = None


# ---- Node ----


class Taint(Wire, frozen=True):
    key: str | None = None
    value: str | None = None
    effect: str | None = None


class NodeSpec(Wire, frozen=True):
    unschedulable: bool | None = None
    taints: list[Taint] | None = None


class ContainerImage(Wire, frozen=True):
    names: list[str] | None = None
    size_bytes: Int64 | None = None


class NodeStatus(Wire, frozen=True):
    capacity: Quantities | None = None
    allocatable: Quantities | None = None
    images: list[ContainerImage] | None = None


class Node(Object, frozen=True):
    spec: NodeSpec | None = None
    status: NodeStatus | None = None


# ---- volumes ----


class Storage(Wire, frozen=True):
    storage: Quantity | None = None


class ClaimRef(Wire, frozen=True):
    namespace: str | None = None
    name: str | None = None
    uid: str | None = None


class VolumeNodeAffinity(Wire, frozen=True):
    required: NodeSelector | None = None


class CSIVolumeSource(Wire, frozen=True):
    driver: str | None = None
    volume_handle: str | None = None


class PersistentVolumeSpec(Wire, frozen=True):
    capacity: Storage | None = None
    storage_class_name: str | None = None
    access_modes: list[str] | None = None
    volume_mode: str | None = None
    claim_ref: ClaimRef | None = None
    node_affinity: VolumeNodeAffinity | None = None
    volume_attributes_class_name: str | None = None
    csi: CSIVolumeSource | None = None
    # in-tree sources NodeVolumeLimits counts under their CSI driver
    aws_elastic_block_store: AWSElasticBlockStore | None = None
    gce_persistent_disk: GCEPersistentDisk | None = None
    azure_disk: AzureDisk | None = None


class Phase(Wire, frozen=True):
    phase: str | None = None


class PersistentVolume(Object, frozen=True):
    spec: PersistentVolumeSpec | None = None
    status: Phase | None = None


class ClaimResources(Wire, frozen=True):
    requests: Storage | None = None


class PersistentVolumeClaimSpec(Wire, frozen=True):
    storage_class_name: str | None = None
    volume_name: str | None = None
    resources: ClaimResources | None = None
    access_modes: list[str] | None = None
    volume_mode: str | None = None
    selector: LabelSelector | None = None
    volume_attributes_class_name: str | None = None


class PersistentVolumeClaim(Object, frozen=True):
    spec: PersistentVolumeClaimSpec | None = None
    status: Phase | None = None


# ---- storage.k8s.io ----


class TopologyRequirement(Wire, frozen=True):
    key: str | None = None
    values: list[str] | None = None


class TopologyTerm(Wire, frozen=True):
    match_label_expressions: list[TopologyRequirement] | None = None


class StorageClass(Object, frozen=True):
    provisioner: str | None = None
    volume_binding_mode: str | None = None
    allowed_topologies: list[TopologyTerm] | None = None


class CSIDriverSpec(Wire, frozen=True):
    storage_capacity: bool | None = None


class CSIDriver(Object, frozen=True):
    spec: CSIDriverSpec | None = None


class CSIStorageCapacity(Object, frozen=True):
    storage_class_name: str | None = None
    capacity: Quantity | None = None
    maximum_volume_size: Quantity | None = None
    node_topology: LabelSelector | None = None


# ---- Namespace (InterPodAffinity's namespaceSelector) ----


class Namespace(Object, frozen=True):
    pass


# ---- Service (PodTopologySpread's default constraints) ----


class ServiceSpec(Wire, frozen=True):
    selector: Texts | None = None


class Service(Object, frozen=True):
    spec: ServiceSpec | None = None


# ---- CSINode (NodeVolumeLimits) ----


class VolumeNodeResources(Wire, frozen=True):
    count: Int32 | None = None


class CSINodeDriver(Wire, frozen=True):
    name: str | None = None
    allocatable: VolumeNodeResources | None = None


class CSINodeSpec(Wire, frozen=True):
    drivers: list[CSINodeDriver] | None = None


class CSINode(Object, frozen=True):
    spec: CSINodeSpec | None = None


# ---- VolumeAttachment (NodeVolumeLimits counts the node's attachments, kube 1.32+) ----


class VolumeAttachmentSource(Wire, frozen=True):
    persistent_volume_name: str | None = None


class VolumeAttachmentSpec(Wire, frozen=True):
    attacher: str | None = None
    node_name: str | None = None
    source: VolumeAttachmentSource | None = None


class VolumeAttachment(Object, frozen=True):
    spec: VolumeAttachmentSpec | None = None


class ScopeRequirement(Wire, frozen=True):
    scope_name: str | None = None
    operator: str | None = None
    values: list[str] | None = None


class ScopeSelector(Wire, frozen=True):
    match_expressions: list[ScopeRequirement] | None = None


class ResourceQuotaSpec(Wire, frozen=True):
    scopes: list[str] | None = None
    scope_selector: ScopeSelector | None = None


class ResourceQuotaStatus(Wire, frozen=True):
    hard: Quantities | None = None
    used: Quantities | None = None


class ResourceQuota(Object, frozen=True):
    spec: ResourceQuotaSpec | None = None
    status: ResourceQuotaStatus | None = None
