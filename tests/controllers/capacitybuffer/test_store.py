"""The ClusterState extension: objects land in the store, deletes and pod changes follow."""

from __future__ import annotations

from berth.core.api.kinds import KINDS, pod_from_raw
from berth.core.api.kinds import convert as buffer_from_raw
from berth.core.api.workloads.model import Deployment, StatefulSet
from berth.core.controllers.capacitybuffer.fakepods import fake_pod
from tests.controllers.capacitybuffer.builders import buffer, live_pod, load, one, pod_template, workload


def test_objects_land_in_the_store() -> None:
    _, store = load(
        buffer("b", ns="a", template="tpl", replicas=1),
        pod_template("tpl", ns="a"),
        workload("web", ns="a"),
        workload("web", ns="a", kind="StatefulSet"),
        live_pod("web-1", ns="a", labels={"app": "web"}),
    )
    assert list(store.buffers) == ["a/b"]
    assert store.namespaces() == ["a"]
    assert list(store.templates) == ["a/tpl"]
    assert {type(w) for w in store.workloads.values()} == {Deployment, StatefulSet}  # same name, both kept
    assert [p.name for p in store.pods_in("a")] == ["web-1"]
    assert store.take_dirty() == {"a"} and store.take_dirty() == set()


def test_deletes_and_pod_moves() -> None:
    state, store = load(buffer("b", template="tpl", replicas=1), live_pod("p", labels={"app": "x"}))
    state.apply(buffer_from_raw(buffer("b", template="tpl", replicas=1)), deleted=True)
    assert store.buffers == {} and store.namespaces() == []
    state.apply(pod_from_raw(live_pod("p", labels={"app": "y"})))
    assert store.pods_in("default")[0].labels == {"app": "y"}
    state.apply(pod_from_raw(live_pod("p")), deleted=True)
    assert store.pods_in("default") == []


def test_fake_pods_are_not_live_pods() -> None:
    r = one(pod_template("tpl"), buffer("b", template="tpl", replicas=1))
    state, store = load()
    state.apply(fake_pod(r, 1))
    assert store.pods_in("default") == []


def test_every_kind_has_a_converter() -> None:
    assert {k for _, k in KINDS} >= {
        "CapacityBuffer",
        "Deployment",
        "Job",
        "PodTemplate",
        "ReplicaSet",
        "ReplicationController",
        "ResourceQuota",
        "StatefulSet",
    }
