"""A Pod's tolerations and a workload's template kept as raw JSON by the one-pass decode (decoded once
per distinct bytes): the same model and the same whole Struct for the indexer, and the same error for
bad ones, as decoding the object step by step with the whole Struct."""

from __future__ import annotations

import json
from typing import Any

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from berth.core import convert
from berth.core.buffers import convert as buffers
from berth.core.errors import InputError
from berth.core.events import parse_event
from berth.core.kinds import KINDS, decode_wire, storable
from berth.core.wire import core as wc
from tests.buffers.builders import workload
from tests.builders import pod

POD = KINDS[("", "Pod")]
WORKLOADS = [("apps", "Deployment"), ("apps", "ReplicaSet"), ("apps", "StatefulSet"), ("batch", "Job")]

texts = st.one_of(st.sampled_from(["", "key", "node.kubernetes.io/not-ready", 'a"b', "é"]), st.none(), st.just(5))
toleration = st.one_of(
    st.fixed_dictionaries(
        {},
        optional={
            "key": texts,
            "operator": st.sampled_from(["Exists", "Equal", None, 1]),
            "value": texts,
            "effect": st.sampled_from(["NoSchedule", "NoExecute", "", None]),
            "tolerationSeconds": st.one_of(st.integers(0, 300), st.none()),
        },
    ),
    st.none(),
    st.just("x"),
)
tolerations = st.one_of(st.lists(toleration, max_size=3), st.none(), st.just({}), st.just(7))


def _one_pass(raw: bytes) -> tuple[Any, Any]:
    ev = parse_event(b'{"type":"MODIFIED","object":' + raw + b"}", 3)
    return ev.wire, ev.model


def _outcome(read: Any, *args: Any) -> Any:
    """(model, the whole wire Struct as the indexer keeps it), or the error as (object, field, problem)."""
    try:
        wire, model = read(*args)
    except InputError as e:
        return (e.obj, e.field, e.problem)
    return model, msgspec.msgpack.encode(storable(wire))


@settings(max_examples=300)
@given(st.lists(st.one_of(tolerations, st.just("absent")), min_size=1, max_size=3), st.booleans())
def test_raw_tolerations_read_as_the_whole_struct(each: list[Any], spaced: bool) -> None:
    """Pods one after another (the cache warm with what came before): each as the plain path reads it."""
    for i, items in enumerate(each):
        obj = pod(f"p{i}", node_name="n1")
        if items != "absent":
            obj["spec"]["tolerations"] = items
        raw = json.dumps(obj, separators=(", ", ": ") if spaced else (",", ":"), ensure_ascii=False).encode()
        assert _outcome(_one_pass, raw) == _outcome(decode_wire, POD, raw)


def test_a_pods_tolerations_stay_raw_and_are_decoded_once() -> None:
    obj = pod("p", tolerations=[{"key": "k", "operator": "Exists"}])
    ev = parse_event(json.dumps({"type": "ADDED", "object": obj}), 1)
    again = parse_event(json.dumps({"type": "ADDED", "object": {**obj, "metadata": {"name": "q"}}}), 2)
    assert isinstance(ev.wire, wc.FastPod)
    assert bytes(ev.wire.spec.tolerations) == b'[{"key": "k", "operator": "Exists"}]'
    assert convert.full_pod(ev.wire).spec.tolerations is convert.full_pod(again.wire).spec.tolerations
    assert ev.model.tolerations == decode_wire(POD, msgspec.json.encode(obj))[1].tolerations


def test_the_fast_spec_mirrors_the_whole_one() -> None:
    """Every field of FastPodSpec is PodSpec's, with the same type, but tolerations."""
    whole = {f.name: f.type for f in msgspec.structs.fields(wc.PodSpec)}
    fast = {f.name: f.type for f in msgspec.structs.fields(wc.FastPodSpec)}
    assert list(fast) == list(whole)
    assert {k for k in whole if fast[k] != whole[k]} == {"tolerations"}


values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.sampled_from(["", "app", "é", 'a"b'])),
    lambda inner: st.one_of(
        st.lists(inner, max_size=2), st.dictionaries(st.sampled_from(["a", "b"]), inner, max_size=2)
    ),
    max_leaves=6,
)
metadata = st.one_of(
    st.fixed_dictionaries(
        {"labels": st.dictionaries(st.sampled_from(["app", "tier"]), st.sampled_from(["a", "b", 5]))}
    ),
    values,
)
template = st.one_of(
    st.fixed_dictionaries({"metadata": metadata}, optional={"spec": values}),
    values,
)


@settings(max_examples=300)
@given(
    st.sampled_from(WORKLOADS), st.lists(st.one_of(template, st.just("absent")), min_size=1, max_size=3), st.booleans()
)
def test_raw_templates_read_as_the_whole_struct(kind: tuple[str, str], each: list[Any], spaced: bool) -> None:
    """Workloads one after another (the cache warm with what came before): each as the plain path reads it."""
    for i, items in enumerate(each):
        obj = workload(f"w{i}", kind=kind[1])
        if items == "absent":
            del obj["spec"]["template"]
        else:
            obj["spec"]["template"] = items
        raw = json.dumps(obj, separators=(", ", ": ") if spaced else (",", ":"), ensure_ascii=False).encode()
        assert _outcome(_one_pass, raw) == _outcome(decode_wire, KINDS[kind], raw)


def test_a_workloads_template_stays_raw_and_is_decoded_once() -> None:
    obj = workload("w", kind="ReplicaSet")
    ev = parse_event(json.dumps({"type": "ADDED", "object": obj}), 1)
    again = parse_event(json.dumps({"type": "MODIFIED", "object": obj}), 2)
    assert isinstance(ev.wire, buffers.wb.FastReplicaSet)
    assert json.loads(bytes(ev.wire.spec.template)) == obj["spec"]["template"]
    assert buffers.full_workload(ev.wire).spec.template is buffers.full_workload(again.wire).spec.template
    assert ev.model == decode_wire(KINDS[("apps", "ReplicaSet")], msgspec.json.encode(obj))[1]
