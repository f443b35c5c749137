from __future__ import annotations

import sys
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from berth.core.api.core import normalise as core_convert
from berth.core.api.core import wire as wc
from berth.core.api.core.model import ClaimRef, Pod
from berth.core.api.core.resources import pod_amounts, work_out_amounts
from berth.core.api.kinds import convert
from berth.core.api.meta.normalise import Bad, positional
from berth.core.api.meta.quantity import parse_nanos
from berth.core.errors import InputError
from tests.builders import host_affinity, pod, pv, pvc


def with_containers(containers: list[dict[str, Any]], init: list[dict[str, Any]] | None = None, **spec: Any) -> Any:
    raw = pod("p")
    raw["spec"]["containers"] = containers
    if init is not None:
        raw["spec"]["initContainers"] = init
    raw["spec"].update(spec)
    return convert(raw)


def c(
    cpu: str | None = None, mem: str | None = None, limits: dict[str, str] | None = None, **kw: Any
) -> dict[str, Any]:
    req = {k: v for k, v in (("cpu", cpu), ("memory", mem)) if v is not None}
    return {"name": "c", "resources": {"requests": req, "limits": limits or {}}, **kw}


@pytest.mark.parametrize(
    ("containers", "init", "spec", "expected"),
    [
        ([c("100m", "1Gi"), c("200m")], None, {}, {"cpu": 300, "memory": 2**30}),
        # a regular init container bigger than the app: the peak wins
        ([c("100m")], [c("1")], {}, {"cpu": 1000}),
        # a sidecar adds to the app, and to every init container that starts after it
        ([c("100m")], [c("50m", restartPolicy="Always"), c("500m")], {}, {"cpu": 550}),
        ([c("1")], [c("50m", restartPolicy="Always"), c("500m")], {}, {"cpu": 1050}),
        # overhead is added last
        ([c("100m")], None, {"overhead": {"cpu": "10m"}}, {"cpu": 110}),
        # pod-level requests replace the aggregate for cpu and memory only
        (
            [c("100m", "1Gi", limits={"nvidia.com/gpu": "1"})],
            None,
            {"resources": {"requests": {"cpu": "2"}}},
            {"cpu": 2000, "memory": 2**30, "nvidia.com/gpu": 1},
        ),
        # requests default to limits, as the API server does
        ([c(limits={"cpu": "1", "memory": "1Gi"})], None, {}, {"cpu": 1000, "memory": 2**30}),
        ([c("1500m", limits={"cpu": "2"})], None, {}, {"cpu": 1500}),
    ],
)
def test_effective_requests(containers: Any, init: Any, spec: Any, expected: dict[str, int]) -> None:
    got = with_containers(containers, init, **spec).requests
    assert got == expected


def test_ephemeral_volume_claim_name() -> None:
    raw = pod("web-0")
    raw["spec"]["volumes"] = [
        {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}},
        {"name": "cfg", "configMap": {"name": "x"}},
    ]
    vols = convert(raw).volumes
    assert [(v.claim_name, v.ephemeral) for v in vols] == [("web-0-scratch", True)]


@pytest.mark.parametrize(
    ("annotations", "spec_class", "expected"),
    [
        ({}, "fast", "fast"),
        ({"volume.beta.kubernetes.io/storage-class": "beta"}, "fast", "beta"),
        ({"volume.beta.kubernetes.io/storage-class": ""}, "fast", ""),
        ({}, None, ""),
    ],
)
def test_claim_class(annotations: dict[str, str], spec_class: str | None, expected: str) -> None:
    assert convert(pvc("c", cls=spec_class, annotations=annotations)).storage_class == expected


def test_bound_needs_bind_completed() -> None:
    assert convert(pvc("c", volume="pv1", bound=True)).bound
    assert not convert(pvc("c", volume="pv1")).bound


def test_pv_defaults() -> None:
    v = convert(pv("pv1", "10Gi"))
    assert v.capacity == parse_nanos("10Gi")
    assert v.volume_mode == "Filesystem"
    assert v.node_affinity is None


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (pv("pv1", "ten gigs"), "PersistentVolume pv1: spec.capacity.storage: quantities must match"),
        (pvc("c", size="1X"), "PersistentVolumeClaim default/c: spec.resources.requests.storage:"),
        (
            {**pod("p"), "spec": {"containers": [c("lots")]}},
            "Pod default/p: spec.containers[0].resources.requests.cpu:",
        ),
        ({**pod("p"), "spec": {"containers": "x"}}, "Pod default/p: spec.containers: expected a list"),
        ({"kind": "Node", "apiVersion": "v1", "metadata": {}}, "Node <unnamed>: metadata.name: is required"),
        ({"apiVersion": "v1", "metadata": {"name": "x"}}, "object x: kind: is required"),
        (
            {**pod("p"), "metadata": {"name": "p", "namespace": "default", "labels": {"a": 1}}},
            "Pod default/p: metadata.labels[a]: expected a string",
        ),
    ],
)
def test_errors_name_object_and_field(raw: Any, message: str) -> None:
    with pytest.raises(InputError) as e:
        convert(raw)
    assert str(e.value).startswith(message)
    assert "\n" not in str(e.value)


def test_unknown_kind_is_none() -> None:
    assert convert({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}) is None


def test_equal_labels_and_annotations_are_one_dict() -> None:
    """A workload's pods (or a node's PVs) share their labels' dict; equal in another order is not the same."""

    def labelled(name: str, labels: dict[str, str], annotations: dict[str, str] | None = None) -> Any:
        meta = {"name": name, "namespace": "ns", "labels": labels, "annotations": annotations}
        return convert({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": {"nodeSelector": labels}})

    a, b = labelled("a", {"app": "web", "tier": "1"}), labelled("b", {"app": "web", "tier": "1"})
    c = labelled("c", {"tier": "1", "app": "web"})
    assert a.labels is b.labels and a.node_selector is b.node_selector
    assert c.labels == a.labels and c.labels is not a.labels and list(c.labels) == ["tier", "app"]
    assert labelled("d", {}).labels == {} and labelled("d", {}).annotations == {}


_FIGURES = st.sampled_from([1, 1.0, "1", "1000m", "500m", 0.5, "2Gi", "1Ki", 2048, "0", "bad", "1e3"])
_LIST = st.dictionaries(st.sampled_from(["cpu", "memory", "example.com/gpu"]), _FIGURES, max_size=3)
_CONTAINER = st.fixed_dictionaries(
    {"name": st.just("c")},
    optional={
        "resources": st.fixed_dictionaries({}, optional={"requests": _LIST, "limits": _LIST}),
        "restartPolicy": st.just("Always"),
    },
)
_SPEC = st.fixed_dictionaries(
    {"containers": st.lists(_CONTAINER, min_size=1, max_size=2)},
    optional={"initContainers": st.lists(_CONTAINER, max_size=2), "overhead": _LIST},
)


@given(st.lists(_SPEC, min_size=1, max_size=6))
@settings(max_examples=200, deadline=None)
def test_amounts_shared_between_pods_are_the_ones_worked_out_for_each(specs: list[dict[str, Any]]) -> None:
    """Pods whose specs list the same figures share one answer (equal figures of different types,
    1 and 1.0, share it too); each is what working the spec out afresh gives, or the same error."""
    for spec in specs:
        wire = msgspec.convert(spec, wc.PodSpec, from_attributes=False)
        try:
            fresh: object = work_out_amounts(wire, "spec")
        except Bad as e:
            fresh = str(e)
        try:
            got: object = pod_amounts(wire, "spec")[:3]
        except Bad as e:
            got = str(e)
        assert got == fresh


@pytest.mark.parametrize(
    ("names", "ok"),
    [
        (("namespace", "name", "uid"), True),
        (("name", "namespace", "uid"), False),  # two fields swapped
        (("namespace", "name"), False),  # one left out
    ],
)
def test_positional_construction_names_the_model_fields_in_order(names: tuple[str, ...], ok: bool) -> None:
    if ok:
        positional(ClaimRef, *names)
    else:
        with pytest.raises(TypeError, match="ClaimRef's fields are"):
            positional(ClaimRef, *names)


_NAMES = st.text(alphabet="abc-", min_size=1, max_size=4)


@given(_NAMES, _NAMES, _NAMES, _NAMES, st.text(max_size=4))
@settings(max_examples=100, deadline=None)
def test_pod_key_is_namespace_slash_name_however_the_pod_is_made(
    ns: str, name: str, ns2: str, name2: str, passed: str
) -> None:
    """Pod.key is set when the pod is made: converted, constructed (whatever key is passed), replaced
    with another name or namespace; always interned."""
    made = [
        convert(pod(name, ns=ns)),
        Pod(ns, name, key=passed),
        msgspec.structs.replace(Pod("x", "y"), namespace=ns, name=name),
    ]
    for p in made:
        assert p.key == f"{ns}/{name}" and p.key is sys.intern(f"{ns}/{name}")
    moved = msgspec.structs.replace(made[0], namespace=ns2, name=name2, key=passed)
    assert moved.key == f"{ns2}/{name2}"


_TEXT_MAPS = st.sampled_from([None, {}, {"a": "1"}, {"a": "2"}, {"a": "1", "b": "1"}, {"b": "1", "a": "1"}])
_PV_SPEC = st.fixed_dictionaries(
    {},
    optional={
        "accessModes": st.sampled_from([[], ["ReadWriteOnce"], ["ReadWriteOnce", "ReadOnlyMany"], ["ReadOnlyMany"]]),
        "nodeAffinity": st.sampled_from([{}, host_affinity("n1"), host_affinity("n2"), {"required": None}]),
    },
)
_PV = st.builds(
    lambda i, labels, annotations, spec: {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": f"pv-{i}", "labels": labels, "annotations": annotations},
        "spec": {"capacity": {"storage": "1Gi"}, **spec},
    },
    st.integers(0, 3),
    _TEXT_MAPS,
    _TEXT_MAPS,
    _PV_SPEC,
)


@given(st.lists(_PV, min_size=1, max_size=8))
@settings(max_examples=200, deadline=None)
def test_a_pv_like_the_last_is_read_as_it_would_be_alone(pvs: list[dict[str, Any]]) -> None:
    """PVs in a run share the last one's labels, annotations, node affinity and access modes: each
    is the model converting it alone gives (the same bytes, dict order included)."""
    encode = msgspec.json.Encoder().encode
    for raw in pvs:
        got = convert(raw)
        saved = core_convert._PV_RUN
        core_convert._PV_RUN = core_convert._PVRun()  # nothing kept from the PV before
        try:
            alone = convert(raw)
        finally:
            core_convert._PV_RUN = saved
        assert encode(got) == encode(alone)
