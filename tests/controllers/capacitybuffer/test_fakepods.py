"""Fake pods and readyReplicas, with a fake placer and with berth's scheduler."""

from __future__ import annotations

import pytest

from berth.core.api.core.model import Pod
from berth.core.config.kubeschedulerconfig import parse_config
from berth.core.controllers.capacitybuffer.controller import BufferResult, reconcile
from berth.core.controllers.capacitybuffer.fakepods import count_ready, fake_pod, manifests, scheduler_placer, wanted
from berth.core.scheduler.schedule_one import Scheduler
from tests.builders import node
from tests.controllers.capacitybuffer.builders import NOW, buffer, live_pod, load, one, pod_template, results, workload


def test_fake_pod_identity() -> None:
    r = one(pod_template("tpl", cpu="2", labels={"app": "x"}), buffer("b", template="tpl", replicas=2))
    pods = manifests(r)
    assert [p["metadata"]["name"] for p in pods] == ["capacity-buffer-b-1", "capacity-buffer-b-2"]
    first = pods[0]
    assert first["metadata"] == {
        "name": "capacity-buffer-b-1",
        "namespace": "default",
        "uid": "uid-b-1",
        "labels": {"app": "x"},
        "annotations": {"podType": "capacityBufferFakePod", "cluster-autoscaler.kubernetes.io/safe-to-evict": "true"},
        "ownerReferences": [
            {
                "apiVersion": "autoscaling.x-k8s.io/v1beta1",
                "kind": "CapacityBuffer",
                "name": "b",
                "uid": "uid-b",
                "controller": True,
            }
        ],
    }
    assert first["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "2", "memory": "1Gi"}
    model = fake_pod(r, 1)
    assert (model.key, model.uid, model.requests["cpu"], model.node_name) == (
        "default/capacity-buffer-b-1",
        "uid-b-1",
        2000,
        "",
    )


def test_live_pod_fake_pods_drop_the_node() -> None:
    r = one(
        workload("web"),
        live_pod("web-1", labels={"app": "web"}),
        buffer("b", scalable=("apps", "Deployment", "web"), replicas=1),
    )
    (pod,) = manifests(r)
    assert "nodeName" not in pod["spec"]


def test_who_gets_fake_pods() -> None:
    rs = results(
        pod_template("tpl"),
        buffer("ready", template="tpl", replicas=3),
        buffer("empty", template="tpl", replicas=0),
        buffer("broken", template="nope", replicas=3),
        buffer("warm", template="tpl", replicas=3, strategy="example.com/warm"),
    )
    assert {k: wanted(r) for k, r in rs.items()} == {
        "default/ready": 3,
        "default/empty": 0,
        "default/broken": 0,
        "default/warm": 0,
    }
    assert len(manifests(rs["default/ready"], limit=2)) == 2


class Room:
    """A fake cluster with room for `free` chunks, recording what is placed and released."""

    def __init__(self, free: int) -> None:
        self.free = free
        self.placed: list[str] = []
        self.released: list[str] = []

    def place(self, pod: Pod) -> bool:
        if len(self.placed) - len(self.released) >= self.free:
            return False
        self.placed.append(pod.key)
        return True

    def release(self, key: str) -> None:
        self.released.append(key)


def ready_results() -> list[BufferResult]:
    _, store = load(
        pod_template("tpl"),
        buffer("new", template="tpl", replicas=3, created="2026-11-01T12:00:00Z"),
        buffer("old", template="tpl", replicas=3, created="2026-11-01T09:00:00Z"),
    )
    return reconcile(store, NOW)


def test_count_ready_is_oldest_first_and_releases_everything() -> None:
    room = Room(free=4)
    assert count_ready(ready_results(), room.place, room.release) == {"default/old": 3, "default/new": 1}
    assert sorted(room.released) == sorted(room.placed)
    assert room.released[0] == "default/capacity-buffer-new-1"  # released newest first


def test_count_ready_stops_at_the_limit() -> None:
    room = Room(free=100)
    assert count_ready(ready_results(), room.place, room.release, limit=2) == {"default/old": 2, "default/new": 2}


def test_count_ready_releases_on_error() -> None:
    room = Room(free=100)

    def place(pod: Pod) -> bool:
        if pod.name.endswith("-2"):
            raise RuntimeError("boom")
        return room.place(pod)

    with pytest.raises(RuntimeError, match="boom"):
        count_ready(ready_results(), place, room.release)
    assert room.released == ["default/capacity-buffer-old-1"]


def test_ready_replicas_with_the_scheduler_leave_state_unchanged() -> None:
    state, store = load(
        node("node-a", cpu="4", memory="16Gi"),
        node("node-b", cpu="2", memory="16Gi"),
        pod_template("tpl", cpu="1500m", memory="1Gi"),
        buffer("b", template="tpl", replicas=5),
    )
    before_pods = dict(state.pods)
    scheduler = Scheduler(parse_config(None).build(state))
    place, release = scheduler_placer(scheduler, NOW)
    counts = count_ready(reconcile(store, NOW), place, release)
    assert counts == {"default/b": 3}  # 2 on node-a, 1 on node-b
    assert state.pods == before_pods
    assert store.pods == {}
    assert all(not any(used.values()) for used in state.nodes._used_by_name.values())  # nothing left reserved
    # a second count sees the same free room
    assert count_ready(reconcile(store, NOW), place, release) == {"default/b": 3}


def test_scheduler_respects_node_selectors_of_the_chunk() -> None:
    state, store = load(
        node("node-a", cpu="8", labels={"disk": "hdd"}),
        pod_template("tpl", cpu="1", nodeSelector={"disk": "ssd"}),
        buffer("b", template="tpl", replicas=2),
    )
    place, release = scheduler_placer(Scheduler(parse_config(None).build(state)), NOW)
    assert count_ready(reconcile(store, NOW), place, release) == {"default/b": 0}


def test_fake_pods_carry_their_own_ephemeral_claims() -> None:
    r = one(
        pod_template("tpl", volumes=[{"name": "scratch", "ephemeral": {"volumeClaimTemplate": {}}}]),
        buffer("b", template="tpl", replicas=1),
    )
    pod = fake_pod(r, 1)
    assert [v.claim_name for v in pod.volumes] == ["capacity-buffer-b-1-scratch"]
