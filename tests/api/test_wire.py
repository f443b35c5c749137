"""The typed edge: every kind's wire Struct and normalisation, from JSON bytes and from Python objects."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from berth.core.api.autoscaling.model import BufferStatus
from berth.core.api.core.model import PodAffinity, PodAffinityTerm, PodCondition, SpreadConstraint
from berth.core.api.kinds import KINDS, convert, convert_as, decode, kind_key
from berth.core.api.meta.selectors import LabelSelector, NodeSelector, NodeSelectorTerm, Requirement
from berth.core.api.watch import WatchEvent, encode_event, parse_event
from berth.core.errors import InputError
from tests.builders import (
    HOST,
    ZONE,
    csi_capacity,
    csi_driver,
    csi_node,
    node,
    pod,
    pv,
    pvc,
    storage_class,
    volume_attachment,
)
from tests.controllers.capacitybuffer.builders import buffer, pod_template, quota, workload
from tests.plugins.defaultpreemption.helpers import pdb, priority_class
from tests.plugins.interpod.builders import anti_affinity, namespace, service, spread
from tests.plugins.loadawarescheduling.builders import node_metric

GI = 2**30


def from_bytes(raw: dict[str, Any]) -> Any:
    """The model of an object decoded from its JSON bytes, as the log reader and the workers do."""
    return decode(KINDS[kind_key(raw)], msgspec.json.encode(raw))


def with_owner(raw: dict[str, Any]) -> dict[str, Any]:
    raw["metadata"]["ownerReferences"] = [
        {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "u1", "controller": True}
    ]
    return raw


# (id, raw object, {model attribute: expected value})
WELL_FORMED: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
    (
        "pod",
        with_owner(pod("p", ("data",), ns="db", cpu="250m", memory="1Gi", tolerations=[{"key": "k"}])),
        {
            "key": "db/p",
            "requests": {"cpu": 250, "memory": GI},
            "volumes": (("v0", "data"),),
            "tolerations": (("k", "Equal"),),
            "creation": datetime(2026, 11, 1, 10, 0, tzinfo=UTC),
            "controller": ("ReplicaSet", "rs"),
            "phase": "Pending",
            "scheduler_name": "default-scheduler",
        },
    ),
    (
        "node",
        node("n1", cpu="8", memory="32Gi"),
        {"name": "n1", "allocatable": {"cpu": 8000, "memory": 32 * GI, "pods": 110}, "unschedulable": False},
    ),
    (
        "local pv",
        pv("pv1", "10Gi", on="n1"),
        {
            "name": "pv1",
            "capacity": 10 * GI * 10**9,
            "storage_class": "local",
            "volume_mode": "Filesystem",
            "node_affinity": NodeSelector((NodeSelectorTerm((Requirement("kubernetes.io/hostname", "In", ("n1",)),)),)),
        },
    ),
    ("pvc", pvc("c", size="5Gi"), {"key": "default/c", "request": 5 * GI * 10**9, "selector": None}),
    ("storage class", storage_class(), {"name": "local", "binding_mode": "WaitForFirstConsumer"}),
    ("csi driver", csi_driver("d"), {"name": "d", "storage_capacity": True}),
    ("csi capacity", csi_capacity("cap", "local", "100Gi"), {"key": "kube-system/cap", "capacity": 100 * GI * 10**9}),
    (
        "csi node",
        csi_node("n1", **{"ebs.csi.aws.com": 25, "other": None}),
        {"name": "n1", "drivers": ("ebs.csi.aws.com", "other"), "limits": {"ebs.csi.aws.com": 25}},
    ),
    (
        "volume attachment",
        volume_attachment("va1", "n1", "ebs.csi.aws.com", "pv2"),
        {"name": "va1", "node_name": "n1", "attacher": "ebs.csi.aws.com", "pv_name": "pv2"},
    ),
    (
        "csi pv",
        pv("pv2", "1Gi", spec={"csi": {"driver": "ebs.csi.aws.com", "volumeHandle": "vol-1"}}),
        {"name": "pv2", "csi_driver": "ebs.csi.aws.com", "csi_handle": "vol-1"},
    ),
    (
        "node metric",
        node_metric("n1", cpu="1500m", memory="2Gi", agg={"5m0s": {"p95": ("2", "3Gi")}}),
        {"name": "n1", "node_usage": {"cpu": 1500, "memory": 2 * GI}, "has_node_metric": True},
    ),
    ("capacity buffer", buffer("b", template="tpl", replicas=2), {"key": "default/b", "spec_error": ""}),
    ("pod template", pod_template("tpl"), {"name": "tpl", "namespace": "default"}),
    (
        "deployment",
        workload("web", replicas=4),
        {"kind": "Deployment", "spec_replicas": 4, "selector": LabelSelector((("app", "web"),))},
    ),
    ("job", workload("j", kind="Job", replicas=2), {"kind": "Job", "spec_replicas": 2}),
    ("stateful set", workload("s", kind="StatefulSet"), {"kind": "StatefulSet", "spec_replicas": 3}),
    ("replica set", workload("r", kind="ReplicaSet", replicas=None), {"kind": "ReplicaSet", "spec_replicas": 1}),
    (
        "replication controller",
        workload("rc", kind="ReplicationController"),
        {"kind": "ReplicationController", "selector": LabelSelector((("app", "rc"),))},
    ),
    ("resource quota", quota("q", hard={"cpu": "4"}, used={"cpu": "1500m"}), {"hard": {"cpu": 4000}}),
    (
        "namespace",
        namespace("db", team="a"),
        {"name": "db", "labels": {"kubernetes.io/metadata.name": "db", "team": "a"}},
    ),
    ("service", service("web", {"app": "web"}), {"namespace": "default", "selector": {"app": "web"}}),
    ("service without a selector", service("ext", None), {"name": "ext", "selector": None}),
    (
        "priority class",
        priority_class("batch", -10, default=True, policy="Never"),
        {"name": "batch", "value": -10, "global_default": True, "preemption_policy": "Never"},
    ),
    (
        "pod disruption budget",
        pdb({"app": "db"}, allowed=2, disrupted=("db-0",), min_available="50%"),
        {
            "key": "default/pdb",
            "selector": LabelSelector((("app", "db"),)),
            "min_available": "50%",
            "disruptions_allowed": 2,
            "disrupted_pods": frozenset({"db-0"}),
        },
    ),
    (
        "pod with preemption fields",
        pod(
            "p",
            preemptionPolicy="Never",
            status={
                "startTime": "2026-11-01T10:00:00Z",
                "nominatedNodeName": "n1",
                "conditions": [{"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}],
            },
        ),
        {
            "preemption_policy": "Never",
            "start_time": datetime(2026, 11, 1, 10, tzinfo=UTC),
            "nominated_node": "n1",
            "conditions": (PodCondition("DisruptionTarget", "True", None, "PreemptionByScheduler"),),
        },
    ),
    (
        "pod with pod affinity and spread",
        pod("p", affinity=anti_affinity({"app": "db"}, HOST), topologySpreadConstraints=[spread(ZONE, {"app": "db"})]),
        {
            "pod_affinity": PodAffinity(required_anti=(PodAffinityTerm(HOST, LabelSelector((("app", "db"),))),)),
            "spread": (SpreadConstraint(1, ZONE, "DoNotSchedule", LabelSelector((("app", "db"),))),),
        },
    ),
]


def _read(model: Any, attr: str) -> Any:
    if attr == "volumes":
        return tuple((v.name, v.claim_name) for v in model.volumes)
    if attr == "tolerations":
        return tuple((t.key, t.operator) for t in model.tolerations)
    if attr == "controller":
        c = model.controller()
        return None if c is None else (c.kind, c.name)
    return getattr(model, attr)


@pytest.mark.parametrize(("raw", "want"), [w[1:] for w in WELL_FORMED], ids=[w[0] for w in WELL_FORMED])
def test_every_kind_decodes_into_its_model(raw: dict[str, Any], want: dict[str, Any]) -> None:
    model = from_bytes(raw)
    assert {k: _read(model, k) for k in want} == want
    assert convert(raw) == model


def test_every_registered_kind_is_in_the_table() -> None:
    assert {kind_key(w[1]) for w in WELL_FORMED} == set(KINDS)


def test_each_wire_struct_is_tagged_with_its_kind() -> None:
    assert all(k.wire.__struct_config__.tag == kind for (_, kind), k in KINDS.items())


def test_nulls_read_as_absent_and_unknown_fields_are_ignored() -> None:
    raw = pod("p")
    raw["metadata"]["labels"] = None
    raw["metadata"]["creationTimestamp"] = None
    raw["spec"]["nodeName"] = None
    raw["spec"]["surprise"] = {"deep": [1, 2]}
    model = from_bytes(raw)
    assert (model.labels, model.creation, model.node_name) == ({}, None, "")


def _set(raw: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    node_: Any = raw
    parts = path.split(".")
    for part in parts[:-1]:
        node_ = node_[int(part)] if part.isdigit() else node_.setdefault(part, {})
    node_[int(parts[-1]) if parts[-1].isdigit() else parts[-1]] = value
    return raw


QUANTITY = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"

# (raw, the exact one-line error)
MALFORMED: list[tuple[dict[str, Any], str]] = [
    (pv("pv-bad", "lots"), f"PersistentVolume pv-bad: spec.capacity.storage: {QUANTITY}: got 'lots'"),
    (
        pod("p", cpu="much"),
        f"Pod default/p: spec.containers[0].resources.requests.cpu: {QUANTITY}: got 'much'",
    ),
    (_set(pod("p"), "spec.nodeName", 5), "Pod default/p: spec.nodeName: expected a string, got int"),
    (_set(pod("p"), "spec.containers", "x"), "Pod default/p: spec.containers: expected a list, got str"),
    (_set(pod("p"), "metadata.labels", {"a": 1}), "Pod default/p: metadata.labels[a]: expected a string, got int"),
    (_set(pod("p"), "spec.priority", "high"), "Pod default/p: spec.priority: expected an integer, got str"),
    (
        _set(pod("p"), "status.conditions", [{"type": "Ready", "lastTransitionTime": "noon"}]),
        "Pod default/p: status.conditions[0].lastTransitionTime: invalid RFC 3339 time 'noon'",
    ),
    (_set(node("n1"), "spec.unschedulable", "yes"), "Node n1: spec.unschedulable: expected true or false, got str"),
    (
        _set(node("n1"), "status.capacity.cpu", True),
        "Node n1: status.capacity[cpu]: expected a quantity (string or number), got bool",
    ),
    ({"apiVersion": "v1", "kind": "Node", "metadata": {}}, "Node <unnamed>: metadata.name: is required"),
    (
        _set(pvc("c"), "spec.selector", []),
        "PersistentVolumeClaim default/c: spec.selector: expected an object, got list",
    ),
    (
        _set(storage_class(), "volumeBindingMode", "Later"),
        "StorageClass local: volumeBindingMode: unsupported value 'Later': want Immediate or WaitForFirstConsumer",
    ),
    (
        node_metric("n1", agg={"5 min": {"avg": ("1", "1Gi")}}),
        "NodeMetric n1: status.nodeMetric.aggregatedNodeUsages[0].duration: time: unknown unit ' min' in duration '5 min'",
    ),
    (
        buffer("old", version="autoscaling.x-k8s.io/v1"),
        "CapacityBuffer default/old: apiVersion: unsupported version 'autoscaling.x-k8s.io/v1': "
        "want autoscaling.x-k8s.io/v1beta1 or autoscaling.x-k8s.io/v1alpha1",
    ),
    (
        pdb({"app": "db"}, min_available="half"),
        "PodDisruptionBudget default/pdb: spec.minAvailable: expected an integer or a percentage such as \"50%\", got 'half'",
    ),
    (
        priority_class("p", 5, policy="Sometimes"),
        "PriorityClass p: preemptionPolicy: want PreemptLowerPriority or Never, got 'Sometimes'",
    ),
    (
        _set(pod("p"), "status.startTime", "noon"),
        "Pod default/p: status.startTime: invalid RFC 3339 time 'noon'",
    ),
    (
        quota("q", hard={"cpu": "four"}),
        f"ResourceQuota default/q: status.hard.cpu: {QUANTITY}: got 'four'",
    ),
    (
        _set(workload("web"), "spec.template.metadata.labels", {"app": 1}),
        "Deployment default/web: spec.template.metadata.labels[app]: expected a string, got 1",
    ),
]


@pytest.mark.parametrize(("raw", "message"), MALFORMED, ids=[m[1][:60] for m in MALFORMED])
def test_malformed_fields_name_the_object_and_field(raw: dict[str, Any], message: str) -> None:
    for read in (from_bytes, lambda r: convert_as(KINDS[kind_key(r)], r)):
        with pytest.raises(InputError) as e:
            read(raw)
        assert str(e.value) == message


# ---- from JSON bytes and from Python objects: the same models, or the same errors ----

SAMPLES = [w[1] for w in WELL_FORMED]
JUNK = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**40), 2**40),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(alphabet="0123456789.kmiGMTeE-+ ab", max_size=8),
    st.lists(st.integers(0, 3), max_size=2),
    st.dictionaries(st.sampled_from(["cpu", "name", "a"]), st.text(max_size=3) | st.integers(0, 9), max_size=2),
)


def _paths(value: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [at] if at else []
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, (*at, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _paths(v, (*at, i))
    return out


def _outcome(read: Any, raw: dict[str, Any]) -> Any:
    try:
        return ("model", read(raw))
    except InputError as e:
        return ("error", str(e))


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_bytes_and_python_objects_give_the_same_model_or_error(data: st.DataObject) -> None:
    raw = copy.deepcopy(data.draw(st.sampled_from(SAMPLES)))
    kind = KINDS[kind_key(raw)]
    paths = [p for p in _paths(raw) if p[0] not in ("kind", "apiVersion")]
    for _ in range(data.draw(st.integers(1, 3))):
        path = data.draw(st.sampled_from(paths))
        parent: Any = raw
        try:
            for step in path[:-1]:
                parent = parent[step]
            if isinstance(parent, dict) != isinstance(path[-1], str):
                continue  # an earlier change made a list a dict: JSON has no integer keys
            parent[path[-1]] = data.draw(JUNK)
        except (KeyError, IndexError, TypeError):
            continue  # an earlier change replaced that part
    from_json = _outcome(lambda r: decode(kind, msgspec.json.encode(r)), raw)
    from_python = _outcome(lambda r: convert_as(kind, r), raw)
    assert from_json == from_python


@pytest.mark.parametrize("raw", [w[1] for w in WELL_FORMED], ids=[w[0] for w in WELL_FORMED])
def test_a_kind_not_asked_for_is_passed_over_with_the_same_envelope(raw: dict[str, Any]) -> None:
    line = encode_event(WatchEvent("MODIFIED", raw, datetime(2026, 11, 1, tzinfo=UTC), 9), with_position=True)
    full, passed = parse_event(line, 3), parse_event(line, 3, only=frozenset())
    assert passed.model is None and full.model is not None
    assert (passed.type, passed.kind, passed.key, passed.ts, passed.position, passed.raw) == (
        full.type,
        full.kind,
        full.key,
        full.ts,
        9,
        full.raw,
    )


# ---- integer fields: kube's int32 and int64, checked where the object is decoded ----

I32, I64 = 2**31 - 1, 2**63 - 1
_AFFINITY = "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution"
_POD_AFFINITY = "spec.affinity.podAffinity.preferredDuringSchedulingIgnoredDuringExecution"
_SPREAD = {"topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule", "maxSkew": 1}
# (object with the field at `value`, the field's path in the message, bits)
INTEGERS: list[tuple[Any, str, int]] = [
    (lambda v: _set(pod("p"), "spec.priority", v), "spec.priority", 32),
    (
        lambda v: _set(pod("p"), "spec.containers.0.ports", [{"hostPort": v}]),
        "spec.containers[0].ports[0].hostPort",
        32,
    ),
    (lambda v: _set(pod("p"), _AFFINITY, [{"weight": v, "preference": {}}]), f"{_AFFINITY}[0].weight", 32),
    (
        lambda v: _set(pod("p"), _POD_AFFINITY, [{"weight": v, "podAffinityTerm": {"topologyKey": ZONE}}]),
        f"{_POD_AFFINITY}[0].weight",
        32,
    ),
    (
        lambda v: _set(pod("p"), "spec.topologySpreadConstraints", [{**_SPREAD, "maxSkew": v}]),
        "spec.topologySpreadConstraints[0].maxSkew",
        32,
    ),
    (
        lambda v: _set(pod("p"), "spec.topologySpreadConstraints", [{**_SPREAD, "minDomains": v}]),
        "spec.topologySpreadConstraints[0].minDomains",
        32,
    ),
    (lambda v: _set(pod("p"), "metadata.generation", v), "metadata.generation", 64),
    (lambda v: _set(node("n1"), "status.images", [{"names": ["a"], "sizeBytes": v}]), "status.images[0].sizeBytes", 64),
    (lambda v: csi_node("n1", **{"ebs.csi.aws.com": v}), "spec.drivers[0].allocatable.count", 32),
    (lambda v: workload("web", replicas=v), "spec.replicas", 32),
    (lambda v: _set(workload("j", kind="Job"), "spec.parallelism", v), "spec.parallelism", 32),
    (lambda v: _set(workload("web"), "status.replicas", v), "status.replicas", 32),
    (
        lambda v: _set(node_metric("n1"), "spec.metricCollectPolicy.reportIntervalSeconds", v),
        "spec.metricCollectPolicy.reportIntervalSeconds",
        64,
    ),
]


def _names(raw: dict[str, Any]) -> str:
    meta = raw["metadata"]
    return f"{raw['kind']} {meta['namespace'] + '/' if 'namespace' in meta else ''}{meta['name']}"


@pytest.mark.parametrize(("make", "path", "bits"), INTEGERS, ids=[f"{c[1]} (int{c[2]})" for c in INTEGERS])
def test_integer_fields_past_kubes_range_are_one_line_naming_object_and_field(make: Any, path: str, bits: int) -> None:
    """From JSON bytes (a log line, a bus message) and from Python objects (a snapshot) alike;
    the limits themselves are accepted."""
    top = I32 if bits == 32 else I64
    for ok in (top, -top - 1):
        raw = make(ok)
        from_bytes(raw)
        convert_as(KINDS[kind_key(raw)], raw)
    for bad, limit in ((top + 1, f"at most {top}"), (-top - 2, f"at least {-top - 1}"), (10**30, f"at most {top}")):
        raw = make(bad)
        want = f"{_names(raw)}: {path}: {bad} is out of range: kube's int{bits} is {limit}"
        line = encode_event(WatchEvent("ADDED", raw))
        for read in (from_bytes, lambda r: convert_as(KINDS[kind_key(r)], r)):
            with pytest.raises(InputError) as e:
                read(raw)
            assert str(e.value) == want
        with pytest.raises(InputError) as e:
            parse_event(line, 3)
        assert str(e.value) == want


@pytest.mark.parametrize(("field", "top"), [("replicas", I32), ("podTemplateGeneration", I64)])
def test_a_buffer_status_integer_past_kubes_range_is_a_malformed_status(field: str, top: int) -> None:
    """A CapacityBuffer's old status that does not read is replaced, never fatal (as for any other problem)."""
    assert from_bytes(buffer("b", status={field: top})).status != BufferStatus()
    assert from_bytes(buffer("b", status={field: top + 1})).status == BufferStatus()
