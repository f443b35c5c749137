"""Converters with a fast path behave exactly like their general path, on good and broken objects.

The general path (the `Fields` code) defines what a converter returns and how it fails. The
fast path may only ever give up (raise Irregular) or return an equal object: same values, same
dict order. These tests mutate well-formed objects of every fast-pathed kind, one field at a
time for every field, and at random several at a time, and compare the two.
"""

from __future__ import annotations

import copy
from collections import OrderedDict
from collections.abc import Iterator
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from berth.core import quantity
from berth.core.convert import kind_key
from berth.core.errors import InputError
from berth.core.generate import PRESETS, generate
from berth.core.kinds import CONVERTERS
from berth.core.model import ANN_BETA_CLASS
from berth.core.quantity import QuantityError, parse_nanos
from berth.core.rawfields import FastPath, Irregular

FAST = {key: conv for key, conv in CONVERTERS.items() if isinstance(conv, FastPath)}


class Text(str):
    """A str subclass: the fast path leaves these to the general path."""


def _hand_written() -> list[dict[str, Any]]:
    meta = {
        "name": "x-0",
        "namespace": "ns",
        "uid": "u-1",
        "resourceVersion": "7",
        "creationTimestamp": "2026-11-01T12:00:00Z",
        "labels": {"app": "x"},
        "annotations": {"a": "b"},
        "ownerReferences": [
            {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "x", "uid": "s-1", "controller": True}
        ],
    }
    requirement = {"key": "zone", "operator": "In", "values": ["a", "b"]}
    selector = {"matchLabels": {"app": "x", "tier": "db"}, "matchExpressions": [requirement]}
    usage = {"resources": {"cpu": "1500m", "memory": "3Gi"}}
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {**meta, "deletionTimestamp": "2026-11-01T12:05:00Z"},
        "spec": {
            "containers": [
                {"name": "a", "resources": {"requests": {"cpu": "100m", "memory": "1Gi"}, "limits": {"cpu": "1"}}},
                {"name": "b", "resources": {"limits": {"cpu": "200m", "nvidia.com/gpu": "1"}}},
            ],
            "initContainers": [
                {"name": "side", "restartPolicy": "Always", "resources": {"requests": {"cpu": "50m"}}},
                {"name": "init", "resources": {"requests": {"cpu": "2", "memory": "10Mi"}}},
            ],
            "overhead": {"cpu": "10m", "memory": "1Mi"},
            "resources": {"requests": {"memory": "2Gi"}, "limits": {"memory": "4Gi"}},
            "volumes": [
                {"name": "data", "persistentVolumeClaim": {"claimName": "data-x-0"}},
                {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}},
                {"name": "cfg", "configMap": {"name": "c"}},
            ],
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {"matchExpressions": [requirement]},
                            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]},
                        ]
                    }
                }
            },
            "tolerations": [
                {"key": "k", "operator": "Exists", "effect": "NoSchedule"},
                {"key": "k2", "value": "v", "effect": "NoExecute", "tolerationSeconds": 300},
            ],
            "nodeName": "n1",
            "schedulerName": "berth",
            "priority": 100,
            "priorityClassName": "high",
            "nodeSelector": {"disk": "ssd"},
        },
        "status": {
            "phase": "Running",
            "conditions": [
                {"type": "PodScheduled", "status": "True", "lastTransitionTime": "2026-11-01T12:00:01Z"},
                {"type": "Ready", "status": "False", "lastTransitionTime": "2026-11-01T12:00:02+02:00"},
            ],
        },
    }
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": meta,
        "spec": {"unschedulable": True, "taints": [{"key": "k", "value": "v", "effect": "NoSchedule"}]},
        "status": {"capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"}, "allocatable": {"cpu": "7500m"}},
    }
    pv = {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {**meta, "annotations": {ANN_BETA_CLASS: "beta"}},
        "spec": {
            "capacity": {"storage": "10Gi"},
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": "local",
            "volumeMode": "Block",
            "claimRef": {"namespace": "ns", "name": "data-x-0", "uid": "c-1"},
            "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [requirement]}]}},
            "volumeAttributesClassName": "gold",
        },
        "status": {"phase": "Bound"},
    }
    pvc = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": meta,
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": "local",
            "volumeName": "pv-1",
            "resources": {"requests": {"storage": "1500M"}},
            "selector": selector,
        },
        "status": {"phase": "Bound"},
    }
    nodemetric = {
        "apiVersion": "slo.koordinator.sh/v1alpha1",
        "kind": "NodeMetric",
        "metadata": {"name": "n1", "resourceVersion": "9"},
        "spec": {"metricCollectPolicy": {"reportIntervalSeconds": 60}},
        "status": {
            "updateTime": "2026-11-01T12:00:00Z",
            "nodeMetric": {
                "nodeUsage": usage,
                "systemUsage": {"resources": {"cpu": "100m"}},
                "aggregatedNodeUsages": [
                    None,
                    {"duration": "5m0s", "usage": {"avg": usage, "p95": {"resources": {"memory": "18065245Ki"}}}},
                    {"duration": "1h30m", "usage": {"p99": usage}},
                ],
            },
            "podsMetric": [
                {"namespace": "ns", "name": "p", "priority": "koord-prod", "podUsage": usage},
                None,
                {"namespace": "ns", "name": "q"},
            ],
        },
    }
    quota = {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": meta,
        "spec": {
            "scopes": ["NotTerminating"],
            "scopeSelector": {
                "matchExpressions": [{"scopeName": "PriorityClass", "operator": "In", "values": ["high"]}]
            },
        },
        "status": {"hard": {"requests.cpu": "10", "requests.memory": "20Gi"}, "used": {"requests.cpu": "1500m"}},
    }
    template = {"metadata": {"labels": {"app": "x"}}, "spec": {"containers": [{"name": "a"}]}}
    workloads = [
        {
            "apiVersion": api,
            "kind": kind,
            "metadata": meta,
            "spec": {"replicas": 3, "parallelism": 2, "selector": selector, "template": template},
            "status": {"replicas": 2},
        }
        for api, kind in (("apps/v1", "Deployment"), ("apps/v1", "StatefulSet"), ("batch/v1", "Job"))
    ]
    rc = {
        "apiVersion": "v1",
        "kind": "ReplicationController",
        "metadata": meta,
        "spec": {"replicas": 1, "selector": {"app": "x"}, "template": template},
    }
    return [pod, node, pv, pvc, nodemetric, quota, *workloads, rc]


def _generated() -> list[dict[str, Any]]:
    """A few objects of each kind as the generator writes them (the benchmark's shapes)."""
    seen: dict[str, int] = {}
    out = []
    for ev in generate(PRESETS["small"], 1):
        kind = ev.object.get("kind", "")
        if seen.get(kind, 0) < 3 and ev.type != "DELETED":
            seen[kind] = seen.get(kind, 0) + 1
            out.append(ev.object)
    return out


HAND_WRITTEN = _hand_written()
SEEDS = [raw for raw in HAND_WRITTEN + _generated() if kind_key(raw) in FAST]

# Values a field is replaced with: absent, wrong types, odd strings, and near-misses of good ones.
VALUES: list[Any] = [
    None,
    "",
    "x",
    Text("x"),
    "0",
    "10Gi",
    "250m",
    "1.5",
    "-1",
    "1e3",
    "+1",
    "1Ki\n",
    "٣Gi",
    "12 ",
    "5m0s",
    "1h",
    "bogus",
    "2026-11-01T12:00:00Z",
    "2026-13-01",
    "Always",
    "In",
    0,
    1,
    -5,
    2**70,
    1.5,
    True,
    False,
    [],
    {},
    [None],
    ["x"],
    [1],
    [{}],
    ("x",),
    {"a": "b"},
    {"a": 1},
    {"resources": {"cpu": "1"}},
    OrderedDict(a="b"),
]

# Keys the converters read, to add where a seed does not have them.
KEYS = [
    "deletionTimestamp",
    "ephemeral",
    "persistentVolumeClaim",
    "initContainers",
    "overhead",
    "restartPolicy",
    "claimRef",
    "selector",
    "taints",
    "unschedulable",
    "podsMetric",
    "nodeMetric",
    "usage",
    "duration",
    "scopeSelector",
    "matchExpressions",
    "matchFields",
    "parallelism",
    "replicas",
    "resources",
    "limits",
    "requests",
    "nodeAffinity",
    "required",
    "affinity",
    "metadata",
    "name",
    "namespace",
    ANN_BETA_CLASS,
    "avg",
    "cpu",
]


def slots(node: Any) -> Iterator[tuple[Any, Any]]:
    """(container, key or index) for every value inside a raw object."""
    if isinstance(node, dict):
        for k, v in node.items():
            yield node, k
            yield from slots(v)
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield node, i
            yield from slots(v)


def containers(node: Any) -> Iterator[Any]:
    if isinstance(node, dict | list):
        yield node
        for v in node.values() if isinstance(node, dict) else node:
            yield from containers(v)


def _subclass(value: Any) -> Any:
    return [type(value).__name__, str(value)]


# Insertion order (dict order must match too); a str subclass is written with its type name.
encode = msgspec.json.Encoder(enc_hook=_subclass).encode


def outcome(fn: Any, raw: Any) -> tuple[Any, ...]:
    try:
        obj = fn(raw)
    except InputError as e:
        return ("error", str(e))
    except Exception as e:  # the general path's own crashes must stay the same too
        return ("raised", type(e).__name__, str(e))
    return ("ok", type(obj).__name__, encode(obj), obj)


def check(conv: FastPath[Any], raw: dict[str, Any]) -> None:
    """The converter (chosen by the seed: mutations may break kind and apiVersion) on raw."""
    before = copy.deepcopy(raw)
    general = outcome(conv.general, raw)
    try:
        fast = conv.fast(raw)
    except Irregular:
        pass
    else:
        assert general[0] == "ok", f"the fast path accepted what the general path rejects: {general}"
        assert encode(fast) == general[2]
        assert fast == general[3]
    assert outcome(conv, raw) == general
    assert raw == before  # nobody writes to the raw object


def test_every_fast_kind_has_seeds() -> None:
    assert {kind_key(raw) for raw in SEEDS} == set(FAST)
    assert {kind for _, kind in FAST} >= {
        "Pod",
        "Node",
        "PersistentVolume",
        "PersistentVolumeClaim",
        "NodeMetric",
        "ResourceQuota",
        "StatefulSet",
        "Deployment",
        "ReplicaSet",
        "Job",
        "ReplicationController",
    }


@pytest.mark.parametrize("raw", SEEDS, ids=lambda raw: f"{raw['kind']}-{raw['metadata'].get('name')}")
def test_well_formed_objects_take_the_fast_path(raw: dict[str, Any]) -> None:
    conv = FAST[kind_key(raw)]
    assert conv.fast(raw) == conv.general(raw)
    assert encode(conv.fast(raw)) == encode(conv.general(raw))


@pytest.mark.parametrize("seed", range(len(HAND_WRITTEN)))
def test_every_field_replaced_or_removed(seed: int) -> None:
    """Each field of each seed, one at a time: removed, and replaced by every value in VALUES."""
    n = sum(1 for _ in slots(SEEDS[seed]))
    for i in range(n):
        for value in [*VALUES, "<delete>"]:
            raw = copy.deepcopy(SEEDS[seed])
            container, key = list(slots(raw))[i]
            if value == "<delete>":
                if isinstance(container, dict):
                    del container[key]
                else:
                    container.pop(key)
            else:
                container[key] = copy.deepcopy(value)
            check(FAST[kind_key(SEEDS[seed])], raw)


@pytest.mark.parametrize("seed", range(len(HAND_WRITTEN)))
def test_every_key_added_everywhere(seed: int) -> None:
    """Keys the converters read, added to every object of each seed with a few telling values."""
    n = sum(1 for c in containers(SEEDS[seed]) if isinstance(c, dict))
    for i in range(n):
        for key in KEYS:
            for value in (None, "x", [], {}, [None]):
                raw = copy.deepcopy(SEEDS[seed])
                target = [c for c in containers(raw) if isinstance(c, dict)][i]
                target[key] = copy.deepcopy(value)
                check(FAST[kind_key(SEEDS[seed])], raw)


@st.composite
def mutated(draw: Any) -> tuple[FastPath[Any], dict[str, Any]]:
    seed = draw(st.sampled_from(SEEDS))
    raw = copy.deepcopy(seed)
    for _ in range(draw(st.integers(1, 4))):
        places = list(slots(raw))
        action = draw(st.sampled_from(["replace", "delete", "add", "graft"]))
        if action == "add" or not places:
            target = draw(st.sampled_from([c for c in containers(raw) if isinstance(c, dict)]))
            target[draw(st.sampled_from(KEYS))] = copy.deepcopy(draw(st.sampled_from(VALUES)))
            continue
        container, key = draw(st.sampled_from(places))
        if action == "delete":
            if isinstance(container, dict):
                del container[key]
            else:
                container.pop(key)
        elif action == "graft":  # another part of the object in this place: plausible shapes, wrong spots
            _, source = draw(st.sampled_from(places))
            donor = draw(st.sampled_from(places))
            container[key] = copy.deepcopy(donor[0][donor[1]]) if donor[1] != source else None
        else:
            container[key] = copy.deepcopy(draw(st.sampled_from(VALUES)))
    return FAST[kind_key(seed)], raw


@settings(max_examples=600, deadline=None)
@given(mutated())
def test_random_mutations(case: tuple[FastPath[Any], dict[str, Any]]) -> None:
    check(*case)


def test_mappings_and_subclasses_are_left_to_the_general_path() -> None:
    seed = next(raw for raw in SEEDS if raw["kind"] == "Pod")
    for raw in (
        OrderedDict(seed),
        {**seed, "metadata": OrderedDict(seed["metadata"])},
        {**seed, "metadata": {**seed["metadata"], "name": Text("p")}},
    ):
        conv = FAST[kind_key(raw)]
        if type(raw) is dict:
            with pytest.raises(Irregular):
                conv.fast(raw)
        assert outcome(conv, raw) == outcome(conv.general, raw)


# ---- quantities ---------------------------------------------------------------------------


def general_parse(value: str) -> int:
    return quantity._parse_text.__wrapped__(value)  # the regular-expression parser, uncached


def quantity_outcome(fn: Any, value: Any) -> tuple[Any, ...]:
    try:
        return ("ok", fn(value))
    except QuantityError as e:
        return ("error", str(e))
    except ValueError as e:
        return ("raised", type(e).__name__)


@settings(max_examples=1000, deadline=None)
@given(
    st.text(alphabet="0123456789٣७.+-eEinumkKMGTP \n", max_size=12)
    | st.from_regex(r"\A[0-9]{1,25}(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?\Z")
)
def test_quantity_fast_path_agrees_with_the_regular_expression(text: str) -> None:
    assert quantity_outcome(parse_nanos, text) == quantity_outcome(general_parse, text)


@pytest.mark.parametrize(
    "text",
    ["0", "8", "250m", "18065245Ki", "1E", "1Ei", "100Ei", "9" * 30, "9" * 30 + "n", "1n", "7u", "٣Gi", "m", "Ki"],
)
def test_quantity_fast_path_table(text: str) -> None:
    assert quantity_outcome(parse_nanos, text) == quantity_outcome(general_parse, text)


def test_quantity_digit_limit_is_the_same_error() -> None:
    text = "1" * 5000 + "Ki"
    assert quantity_outcome(parse_nanos, text) == quantity_outcome(general_parse, text) == ("raised", "ValueError")
