"""Every Kubernetes kind berth reads, registered in one place, and the one way objects are decoded.

(API group, kind) -> its wire Struct and its normalisation. `decode` reads an object's JSON bytes
(an event's `object`), `convert` a Python object (a snapshot file's): both go through the same
wire Struct and the same normalisation, and both fail with one InputError naming the object and
the field (`Kind ns/name: spec.capacity.storage: problem`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple, get_type_hints

import msgspec

from berth.core import convert as core
from berth.core.amounts import Bad
from berth.core.buffers import convert as buffers
from berth.core.buffers.model import GROUP
from berth.core.errors import InputError
from berth.core.loadaware import convert as loadaware
from berth.core.model import Pod
from berth.core.preemption import convert as preemption
from berth.core.wire import buffers as wb
from berth.core.wire import core as wc
from berth.core.wire import loadaware as wl
from berth.core.wire import scheduling as ws
from berth.core.wire.common import Head


class Kind(NamedTuple):
    name: str
    wire: type[Any]
    normalise: Callable[[Any], Any]
    decoder: msgspec.json.Decoder[Any]
    model: type[Any]  # what normalise makes (its return annotation): a consumer tells what it reads by it


def _kind(name: str, wire: type[Any], normalise: Callable[[Any], Any]) -> Kind:
    return Kind(name, wire, normalise, msgspec.json.Decoder(wire), get_type_hints(normalise)["return"])


KINDS: dict[tuple[str, str], Kind] = {
    k[:2]: _kind(k[1], k[2], k[3])
    for k in (
        ("", "Pod", wc.Pod, core.pod),
        ("", "Node", wc.Node, core.node),
        ("", "PersistentVolume", wc.PersistentVolume, core.pv),
        ("", "PersistentVolumeClaim", wc.PersistentVolumeClaim, core.pvc),
        ("storage.k8s.io", "StorageClass", wc.StorageClass, core.storage_class),
        ("storage.k8s.io", "CSIDriver", wc.CSIDriver, core.csi_driver),
        ("storage.k8s.io", "CSIStorageCapacity", wc.CSIStorageCapacity, core.csi_capacity),
        ("storage.k8s.io", "CSINode", wc.CSINode, core.csi_node),  # NodeVolumeLimits
        ("slo.koordinator.sh", "NodeMetric", wl.NodeMetric, loadaware.nodemetric),
        (GROUP, "CapacityBuffer", wb.CapacityBuffer, buffers.capacity_buffer),
        ("", "PodTemplate", wb.PodTemplate, buffers.pod_template),
        ("apps", "Deployment", wb.Deployment, buffers.deployment),
        ("apps", "ReplicaSet", wb.ReplicaSet, buffers.replica_set),
        ("apps", "StatefulSet", wb.StatefulSet, buffers.stateful_set),
        ("batch", "Job", wb.Job, buffers.job),
        ("", "ReplicationController", wb.ReplicationController, buffers.replication_controller),
        ("", "ResourceQuota", wb.ResourceQuota, buffers.resource_quota),
        # InterPodAffinity's namespaceSelector
        ("", "Namespace", wc.Namespace, core.namespace),
        # DefaultPreemption
        ("scheduling.k8s.io", "PriorityClass", ws.PriorityClass, preemption.priority_class),
        ("policy", "PodDisruptionBudget", ws.PodDisruptionBudget, preemption.pod_disruption_budget),
        # PodTopologySpread's default constraints (with ReplicaSet, StatefulSet, ReplicationController above)
        ("", "Service", wc.Service, core.service),
    )
}

# wire Struct -> its (group, kind) and Kind: what an event's object decoded into (berth.core.events)
BY_WIRE: dict[type[Any], tuple[tuple[str, str], Kind]] = {k.wire: (key, k) for key, k in KINDS.items()}
# the Structs of the one-pass decode: each kind's, but a NodeMetric's with its aggregated usages left raw
_FAST: dict[type[Any], type[Any]] = {wl.NodeMetric: wl.FastNodeMetric}
ONE_PASS: tuple[type[Any], ...] = tuple(_FAST.get(w, w) for w in BY_WIRE)
BY_WIRE[wl.FastNodeMetric] = BY_WIRE[wl.NodeMetric]

_head = msgspec.json.Decoder(Head)


def describe(kind: Any, meta: Any) -> str:
    """`Kind ns/name` (or `Kind name`) for messages; tolerant of junk."""
    kind = kind if isinstance(kind, str) else "object"
    if isinstance(meta, msgspec.Struct):
        meta = {"name": getattr(meta, "name", None), "namespace": getattr(meta, "namespace", None)}
    meta = meta if isinstance(meta, Mapping) else {}
    name = meta.get("name") if isinstance(meta.get("name"), str) else "<unnamed>"
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
    return core.group_of(api_version), kind


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

_MESSAGE = re.compile(r"^Expected `([^`]*)`, got `([^`]*)`(?: - at `\$\.?(.*)`)?$")
_AT = re.compile(r"^(.*?)(?: - at `\$\.?(.*)`)?$")
_NOUNS = {
    "str": "a string",
    "int": "an integer",
    "bool": "true or false",
    "object": "an object",
    "array": "a list",
    "int | float | str": "a quantity (string or number)",
    "float": "a number",
}
_GOT = {"array": "list", "object": "object", "null": "null"}


def invalid(what: str, e: msgspec.ValidationError, value: Callable[[], Any]) -> InputError:
    """`what: field: problem` for a msgspec error such as "Expected `str`, got `int` - at `$.a.b`".
    value: the object as Python data, to name the map key msgspec leaves out (`[...]`)."""
    text = str(e)
    m = _MESSAGE.match(text)
    if m is not None:
        want, got, path = m.groups()
        want = want.removesuffix(" | null")
        if path and path.endswith("[...]"):
            path = _name_key(value(), path, got)
        return InputError(what, path or "", f"expected {_NOUNS.get(want, want)}, got {_GOT.get(got, got)}")
    m = _RANGE.match(text)
    if m is not None:
        op, bound, path = m.groups()
        return InputError(what, path or "", _out_of_range(value, path or "", op == "<=", int(bound)))
    m = _AT.match(text)
    assert m is not None  # the pattern matches any text
    problem, path = m.groups()
    return InputError(what, path or "", problem[:1].lower() + problem[1:])


_RANGE = re.compile(r"^Expected `int` (<=|>=) (-?\d+)(?: - at `\$\.?(.*)`)?$")
_BITS = {2**31 - 1: 32, -(2**31): 32, 2**63 - 1: 64, -(2**63): 64}


def _out_of_range(value: Callable[[], Any], path: str, above: bool, bound: int) -> str:
    """'3000000000 is out of range: kube's int32 is at most 2147483647' (the value when it is found)."""
    got = _walk(value(), path)
    bits = f"kube's int{_BITS[bound]}" if bound in _BITS else "it"
    limit = f"{bits} is at most {bound}" if above else f"{bits} is at least {bound}"
    return f"{got} is out of range: {limit}" if isinstance(got, int) else f"out of range: {limit}"


def _walk(node: Any, path: str) -> Any:
    """The value at a msgspec path (`spec.containers[0].ports[1].hostPort`), or None."""
    for step in _STEP.finditer(path):
        name, index = step.groups()
        if name is not None and isinstance(node, Mapping):
            node = node.get(name)
        elif index is not None and isinstance(node, list) and int(index) < len(node):
            node = node[int(index)]
        else:
            return None
    return node


_STEP = re.compile(r"\.?([^.\[]+)|\[(\d+)\]")
_JSON_TYPES = {type(None): "null", bool: "bool", int: "int", float: "float", str: "str", list: "array", dict: "object"}


def _name_key(value: Any, path: str, got: str) -> str:
    """`labels[...]` -> `labels[a]`: the first key of that map whose value has the type msgspec got."""
    node = value
    for step in _STEP.finditer(path.removesuffix("[...]")):
        name, index = step.groups()
        if name is not None and isinstance(node, Mapping):
            node = node.get(name)
        elif index is not None and isinstance(node, list) and int(index) < len(node):
            node = node[int(index)]
        else:
            return path
    if isinstance(node, Mapping):
        for k, v in node.items():
            if _JSON_TYPES.get(type(v)) == got:
                return f"{path.removesuffix('[...]')}[{k}]"
    return path


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


_NODE_METRIC_INFO = msgspec.json.Decoder(wl.NodeMetricInfo | None)


def storable(wire: Any) -> Any:
    """The wire Struct as the indexer keeps it: a one-pass NodeMetric's status.nodeMetric, left as raw
    JSON, decoded into the whole Struct (msgpack cannot carry JSON bytes); any other as it is."""
    if type(wire) is not wl.FastNodeMetric:
        return wire
    status = wire.status
    full = None
    if status is not None and len(status.node_metric):
        full = _NODE_METRIC_INFO.decode(status.node_metric)
    return wl.NodeMetric(
        api_version=wire.api_version,
        metadata=wire.metadata,
        spec=wire.spec,
        status=None if status is None else wl.NodeMetricStatus(status.update_time, full, status.pods_metric),
    )
