"""Every Kubernetes kind berth reads, registered in one place, and the one way objects are decoded.

(API group, kind) -> its wire Struct and its normalisation. `decode` reads an object's JSON bytes
(an event's `object`), `convert` a Python object (a snapshot file's): both go through the same
wire Struct and the same normalisation, and both fail with one InputError naming the object and
the field (`Kind ns/name: spec.capacity.storage: problem`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple, get_type_hints

import msgspec

from berth.core.api.autoscaling import model as autoscaling_model
from berth.core.api.autoscaling import normalise as autoscaling
from berth.core.api.autoscaling import wire as wa
from berth.core.api.core import normalise as core
from berth.core.api.core import wire as wc
from berth.core.api.core.model import Pod
from berth.core.api.koordinator import normalise as koordinator
from berth.core.api.koordinator import wire as wk
from berth.core.api.meta.invalid import invalid
from berth.core.api.meta.normalise import Bad, check_meta, group_of
from berth.core.api.meta.times import timed
from berth.core.api.meta.wire import Head, tolerant_head
from berth.core.api.scheduling import normalise as scheduling
from berth.core.api.scheduling import wire as ws
from berth.core.api.workloads import normalise as workloads
from berth.core.api.workloads import wire as ww
from berth.core.errors import InputError


class Kind(NamedTuple):
    """One kind berth reads: how it is decoded and normalised, and how the API serves it."""

    name: str
    group: str
    wire: type[Any]
    normalise: Callable[[Any], Any]
    decoder: msgspec.json.Decoder[Any]
    model: type[Any]  # what normalise makes (its return annotation): a consumer tells what it reads by it
    plural: str
    versions: tuple[str, ...]  # tried in order by the watcher; the first one served wins
    namespaced: bool
    crd: bool  # installed by an add-on: not being served is normal, not an error
    relist: int  # a snapshot of objects is applied by this rank, then by key: pods and buffers last


def _kind(
    group: str,
    name: str,
    wire: type[Any],
    normalise: Callable[[Any], Any],
    plural: str,
    *,
    versions: tuple[str, ...] = ("v1",),
    cluster: bool = False,
    crd: bool = False,
    relist: int = 0,
) -> Kind:
    hints = get_type_hints(normalise)["return"]
    checked = _with_meta_checked(normalise)
    return Kind(
        name, group, wire, checked, msgspec.json.Decoder(wire), hints, plural, versions, not cluster, crd, relist
    )


def _with_meta_checked(normalise: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """The kind's normalisation after its object's metadata (resourceVersion, times) is checked (check_meta)."""

    def checked(obj: Any) -> Any:
        check_meta(obj.metadata)
        return normalise(obj)

    return checked


# THE kind table: a new kind is one folder under api/ and one line here. The watcher lists the kinds in
# this order, what pods are decided against first and pods last, so that a consumer starting from an
# empty state does not decide pods before it has heard of the nodes.
KINDS: dict[tuple[str, str], Kind] = {
    (k.group, k.name): k
    for k in (
        _kind("storage.k8s.io", "StorageClass", wc.StorageClass, core.storage_class, "storageclasses", cluster=True),
        _kind("storage.k8s.io", "CSIDriver", wc.CSIDriver, core.csi_driver, "csidrivers", cluster=True),
        _kind("storage.k8s.io", "CSINode", wc.CSINode, core.csi_node, "csinodes", cluster=True),  # NodeVolumeLimits
        _kind(
            "storage.k8s.io",
            "VolumeAttachment",
            wc.VolumeAttachment,
            core.volume_attachment,
            "volumeattachments",
            cluster=True,
        ),  # NodeVolumeLimits
        _kind("", "Node", wc.Node, core.node, "nodes", cluster=True),
        _kind("", "Namespace", wc.Namespace, core.namespace, "namespaces", cluster=True),  # namespaceSelector
        _kind(
            "scheduling.k8s.io",
            "PriorityClass",
            ws.PriorityClass,
            scheduling.priority_class,
            "priorityclasses",
            cluster=True,
        ),
        _kind(
            "policy",
            "PodDisruptionBudget",
            ws.PodDisruptionBudget,
            scheduling.pod_disruption_budget,
            "poddisruptionbudgets",
        ),
        _kind(
            "slo.koordinator.sh",
            "NodeMetric",
            wk.NodeMetric,
            koordinator.nodemetric,
            "nodemetrics",
            versions=("v1alpha1",),
            cluster=True,
            crd=True,
        ),
        _kind("storage.k8s.io", "CSIStorageCapacity", wc.CSIStorageCapacity, core.csi_capacity, "csistoragecapacities"),
        _kind("", "PersistentVolume", wc.PersistentVolume, core.pv, "persistentvolumes", cluster=True),
        _kind("", "PersistentVolumeClaim", wc.PersistentVolumeClaim, core.pvc, "persistentvolumeclaims"),
        _kind("", "ResourceQuota", wc.ResourceQuota, core.resource_quota, "resourcequotas"),
        _kind("", "PodTemplate", ww.PodTemplate, workloads.pod_template, "podtemplates"),
        _kind("apps", "Deployment", ww.Deployment, workloads.deployment, "deployments"),
        _kind("apps", "ReplicaSet", ww.ReplicaSet, workloads.replica_set, "replicasets"),
        _kind("apps", "StatefulSet", ww.StatefulSet, workloads.stateful_set, "statefulsets"),
        _kind(
            "",
            "ReplicationController",
            ww.ReplicationController,
            workloads.replication_controller,
            "replicationcontrollers",
        ),
        _kind("", "Service", wc.Service, core.service, "services"),  # PodTopologySpread's default constraints
        _kind("batch", "Job", ww.Job, workloads.job, "jobs"),
        _kind(
            autoscaling_model.GROUP,
            "CapacityBuffer",
            wa.CapacityBuffer,
            autoscaling.capacity_buffer,
            "capacitybuffers",
            versions=autoscaling_model.VERSIONS,
            crd=True,
            relist=1,
        ),
        _kind("", "Pod", wc.Pod, core.pod, "pods", relist=2),
    )
}
BY_NAME: dict[str, Kind] = {k.name: k for k in KINDS.values()}

# wire Struct -> its (group, kind) and Kind: what an event's object decoded into (berth.core.api.watch)
BY_WIRE: dict[type[Any], tuple[tuple[str, str], Kind]] = {k.wire: (key, k) for key, k in KINDS.items()}
# the Structs of the one-pass decode: each kind's, but a NodeMetric's with its aggregated usages left raw
_FAST: dict[type[Any], type[Any]] = {wk.NodeMetric: wk.FastNodeMetric}
ONE_PASS: tuple[type[Any], ...] = tuple(_FAST.get(w, w) for w in BY_WIRE)
BY_WIRE[wk.FastNodeMetric] = BY_WIRE[wk.NodeMetric]
# the one-pass Structs that also hold the object's times, for a line without ts (berth.core.api.meta.times)
TIMED: tuple[type[Any], ...] = tuple(timed(w) for w in ONE_PASS)
BY_WIRE.update({t: BY_WIRE[w] for t, w in zip(TIMED, ONE_PASS, strict=True)})

_head = msgspec.json.Decoder(Head)


def describe(kind: Any, meta: Any) -> str:
    """`Kind ns/name` (or `Kind name`) for messages; tolerant of junk."""
    kind = kind if isinstance(kind, str) else "object"
    if isinstance(meta, msgspec.Struct):
        meta = {"name": getattr(meta, "name", None), "namespace": getattr(meta, "namespace", None)}
    meta = meta if isinstance(meta, Mapping) else {}
    name = meta.get("name") if isinstance(meta.get("name"), str) and meta.get("name") else "<unnamed>"
    ns = meta.get("namespace")
    return f"{kind} {ns}/{name}" if isinstance(ns, str) and ns else f"{kind} {name}"


def decode(kind: Kind, raw: bytes) -> Any:
    """The model of an object of that kind, from its JSON bytes."""
    return decode_wire(kind, raw)[1]


def decode_wire(kind: Kind, raw: bytes) -> tuple[Any, Any]:
    """(wire Struct, model) of an object of that kind, from its JSON bytes."""
    try:
        obj = kind.decoder.decode(raw)
    except RecursionError:
        raise InputError(describe(kind.name, None), "", "nested too deeply") from None
    except msgspec.ValidationError as e:
        try:
            head = _head.decode(raw)
        except msgspec.ValidationError:
            head = tolerant_head(msgspec.json.decode(raw))
        except msgspec.DecodeError:
            head = Head()
        raise invalid(describe(head.kind, head.metadata), e, lambda: msgspec.json.decode(raw)) from None
    return obj, normalise(kind, obj)


def normalise(kind: Kind, obj: Any) -> Any:
    try:
        return kind.normalise(obj)
    except Bad as e:
        raise InputError(describe(kind.name, obj.metadata), e.path, e.problem) from None


def kind_key(raw: Mapping[str, Any]) -> tuple[str, str]:
    """(group, kind) of a Python object; raises InputError when kind is missing."""
    kind = raw.get("kind")
    api_version = raw.get("apiVersion", "")
    if not isinstance(kind, str) or not kind:
        raise InputError(describe(kind, raw.get("metadata")), "kind", "is required")
    if not isinstance(api_version, str):
        raise InputError(describe(kind, raw.get("metadata")), "apiVersion", "expected a string")
    return group_of(api_version), kind


def convert_as(kind: Kind, raw: Mapping[str, Any]) -> Any:
    """The model of a Python object (a YAML document) of that kind."""
    try:
        obj = msgspec.convert(raw, kind.wire, str_keys=True)
    except msgspec.ValidationError as e:
        raise invalid(describe(raw.get("kind"), raw.get("metadata")), e, lambda: raw) from None
    except RecursionError:
        raise InputError(describe(raw.get("kind"), raw.get("metadata")), "", "nested too deeply") from None
    return normalise(kind, obj)


def pod_from_raw(raw: Mapping[str, Any]) -> Pod:
    """A Pod from a Python object (a fake pod, an extender's request)."""
    pod: Pod = convert_as(KINDS[("", "Pod")], raw)
    return pod


def convert(raw: Mapping[str, Any]) -> Any | None:
    """The model of a Python object, or None when berth does not read that kind."""
    if not isinstance(raw, Mapping):
        raise InputError("object", "", f"expected a Kubernetes object, got {type(raw).__name__}")
    kind = KINDS.get(kind_key(raw))
    return None if kind is None else convert_as(kind, raw)


# ---- msgspec's validation errors, in berth's words ----

# kind name -> ((group, kind), Kind, msgpack decoder of its wire Struct): the objects the indexer keeps
_PACKED: dict[str, tuple[tuple[str, str], Kind, msgspec.msgpack.Decoder[Any]]] = {
    k.name: (key, k, msgspec.msgpack.Decoder(k.wire)) for key, k in KINDS.items()
}


def unpack(name: str, data: bytes) -> tuple[tuple[str, str], Any, Any]:
    """((group, kind), wire Struct, model) of an object the indexer kept (msgpack of its wire Struct).
    Raises InputError when the kind is not one berth reads or the bytes do not decode."""
    got = _PACKED.get(name)
    if got is None:
        raise InputError(f"{name} object", "kind", "not a kind berth reads")
    key, kind, decoder = got
    try:
        wire = decoder.decode(data)
    except (msgspec.ValidationError, msgspec.DecodeError) as e:
        raise InputError(f"{name} object", "", f"cannot decode its msgpack: {e}") from None
    return key, wire, normalise(kind, wire)


_NODE_METRIC_INFO = msgspec.json.Decoder(wk.NodeMetricInfo | None)


def storable(wire: Any) -> Any:
    """The wire Struct as the indexer keeps it: a one-pass NodeMetric's status.nodeMetric, left as raw
    JSON, decoded into the whole Struct (msgpack cannot carry JSON bytes); any other as it is."""
    if type(wire) is not wk.FastNodeMetric:
        return wire
    status = wire.status
    full = None
    if status is not None and len(status.node_metric):
        full = _NODE_METRIC_INFO.decode(status.node_metric)
    return wk.NodeMetric(
        api_version=wire.api_version,
        metadata=wire.metadata,
        spec=wire.spec,
        status=None if status is None else wk.NodeMetricStatus(status.update_time, full, status.pods_metric),
    )
