"""What the indexer reads of one raw cluster event, decoded straight from the message bytes.

The indexer needs Nodes, PersistentVolumes and bound Pods, and of PVs and Pods only a few fields
(name, resourceVersion, class, capacity, claim, phase, affinity; node, phase, requests). Decoding
a whole event into dicts and converting every kind into the model costs about ten times what the
rest of the indexer does, so this module decodes typed msgspec Structs of just those fields
(unknown fields are skipped by the parser), and the kinds the indexer does not index are never
converted at all.

The fields read are still validated by the converters' own rules (quantities, node selectors, pod
resources). Anything unusual, invalid or not in berth's canonical line shape returns None: the
caller then takes the exact path (parse_event and the kind's converter), which gives the same
reason for a rejected event as before. Errors in fields the indexer does not read are the other
services' to report.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import msgspec

from berth.core.convert import group_of, node_selector, pod_spec_resources
from berth.core.errors import InputError
from berth.core.events import TYPES
from berth.core.model import ANN_BETA_CLASS
from berth.core.quantity import QuantityError, ceil_units, parse_nanos
from berth.core.rawfields import Fields, parse_time
from berth.core.selectors import NodeSelector

NODE, PV, POD = ("", "Node"), ("", "PersistentVolume"), ("", "Pod")
INDEXED = frozenset((NODE, PV, POD))


class _Kind(msgspec.Struct):
    kind: str | None = None
    apiVersion: str = ""


class _Head(msgspec.Struct):
    """The envelope, as strict as parse_event's decoder, and the object's kind."""

    type: str | None = None
    ts: str | None = None
    position: int | None = None
    object: _Kind | None = None
    time: str | None = None
    event: str | None = None
    resource: _Kind | None = None


class _ClaimRef(msgspec.Struct):
    namespace: str = ""
    name: str = ""
    uid: str = ""


class _PVMeta(msgspec.Struct):
    name: str = ""
    resourceVersion: str = ""
    deletionTimestamp: Any = None
    annotations: dict[str, str] = {}


class _PVSpec(msgspec.Struct):
    capacity: dict[str, Any] = {}
    storageClassName: str = ""
    claimRef: _ClaimRef | None = None
    nodeAffinity: msgspec.Raw = msgspec.Raw()


class _Status(msgspec.Struct):
    phase: str = ""


class _PV(msgspec.Struct):
    metadata: _PVMeta = msgspec.field(default_factory=_PVMeta)
    spec: _PVSpec = msgspec.field(default_factory=_PVSpec)
    status: _Status = msgspec.field(default_factory=_Status)


class _PVEvent(msgspec.Struct):
    object: _PV


class _PodMeta(msgspec.Struct):
    name: str = ""
    namespace: str = ""
    resourceVersion: str = ""


class _PodSpec(msgspec.Struct):
    nodeName: str = ""
    containers: msgspec.Raw = msgspec.Raw()
    initContainers: msgspec.Raw = msgspec.Raw()
    overhead: msgspec.Raw = msgspec.Raw()
    resources: msgspec.Raw = msgspec.Raw()


class _Pod(msgspec.Struct):
    metadata: _PodMeta = msgspec.field(default_factory=_PodMeta)
    spec: _PodSpec = msgspec.field(default_factory=_PodSpec)
    status: _Status = msgspec.field(default_factory=_Status)


class _PodEvent(msgspec.Struct):
    object: _Pod


_head = msgspec.json.Decoder(_Head)
_pv = msgspec.json.Decoder(_PVEvent)
_pod = msgspec.json.Decoder(_PodEvent)
_any = msgspec.json.Decoder()


class Head(NamedTuple):
    deleted: bool
    kind: tuple[str, str] | None  # (group, kind); None for a bookmark


class PVFacts(NamedTuple):
    """What the index needs of a PersistentVolume (`pvindex.available` and where it fits)."""

    name: str
    rv: str
    available: bool
    storage_class: str
    capacity: int  # bytes, rounded up
    affinity: NodeSelector | None


class PodFacts(NamedTuple):
    key: str  # namespace/name
    rv: str
    node: str
    terminated: bool
    spec: _PodSpec | None  # for the requests, worked out only for a bound pod


def head(value: bytes) -> Head | None:
    """The event type and the object's kind; None when the exact path must decide."""
    try:
        h = _head.decode(value)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    if h.event is not None or h.resource is not None or h.type not in TYPES or h.object is None:
        return None
    if h.ts:
        try:
            parse_time(h.ts)
        except ValueError:
            return None
    if h.type == "BOOKMARK":
        return Head(False, None)
    if not h.object.kind:
        return None
    return Head(h.type == "DELETED", (group_of(h.object.apiVersion), h.object.kind))


class AffinityCache:
    """spec.nodeAffinity bytes -> NodeSelector: local PVs on one node share the same few bytes."""

    LIMIT = 100_000

    def __init__(self) -> None:
        self._seen: dict[bytes, NodeSelector | None] = {}

    def get(self, raw: msgspec.Raw) -> tuple[bool, NodeSelector | None]:
        """(False, None) when the converter would reject it, else (True, the selector or None)."""
        key = bytes(raw)
        if not key or key == b"null":
            return True, None
        if key in self._seen:
            return True, self._seen[key]
        value = _any.decode(key)
        if not isinstance(value, dict):
            return False, None
        required = value.get("required")
        try:
            sel = None if required is None else node_selector(Fields({}), required, "spec.nodeAffinity.required")
        except InputError:
            return False, None
        if len(self._seen) >= self.LIMIT:
            self._seen.clear()
        self._seen[key] = sel
        return True, sel


def pv_facts(value: bytes, affinities: AffinityCache) -> PVFacts | None:
    try:
        pv = _pv.decode(value).object
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    meta, spec = pv.metadata, pv.spec
    if not meta.name:
        return None
    storage = spec.capacity.get("storage")
    try:
        capacity = 0 if storage is None else parse_nanos(storage)
    except (QuantityError, ValueError):
        return None
    ok, sel = affinities.get(spec.nodeAffinity)
    if not ok:
        return None
    return PVFacts(
        name=meta.name,
        rv=meta.resourceVersion,
        available=pv.status.phase == "Available" and spec.claimRef is None and meta.deletionTimestamp is None,
        storage_class=meta.annotations.get(ANN_BETA_CLASS, spec.storageClassName),
        capacity=ceil_units(capacity),
        affinity=sel,
    )


def pod_facts(value: bytes) -> PodFacts | None:
    try:
        pod = _pod.decode(value).object
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    meta = pod.metadata
    if not meta.name:
        return None
    phase = pod.status.phase or "Pending"
    return PodFacts(
        key=f"{meta.namespace or 'default'}/{meta.name}",
        rv=meta.resourceVersion,
        node=pod.spec.nodeName,
        terminated=phase in ("Succeeded", "Failed"),
        spec=pod.spec,
    )


def pod_requests(spec: _PodSpec) -> dict[str, int] | None:
    """The pod's effective requests, as the Pod converter works them out; None if it would reject them."""
    raw: dict[str, Any] = {}
    for name in ("containers", "initContainers", "overhead", "resources"):
        text = bytes(getattr(spec, name))
        if text:
            raw[name] = _any.decode(text)
    try:
        requests, _ = pod_spec_resources(Fields({"spec": raw}), raw, "spec")
    except InputError:
        return None
    return requests
