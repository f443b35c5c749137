"""VolumeZone, as upstream's TestSingleZone, TestMultiZone and TestWithBinding say
(pkg/scheduler/framework/plugins/volumezone/volume_zone_test.go)."""

from __future__ import annotations

from typing import Any

import pytest

from berth.core.framework.status import Code, Status
from tests.plugins.helpers import filter_run

BZ, BR = "failure-domain.beta.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/region"
Z, R = "topology.kubernetes.io/zone", "topology.kubernetes.io/region"
CONFLICT = [("node(s) had no available volume zone", Code.UNRESOLVABLE)]


def pv(name: str, labels: dict[str, str]) -> dict[str, Any]:
    return {"kind": "PersistentVolume", "apiVersion": "v1", "metadata": {"name": name, "labels": labels}, "spec": {}}


def pvc(name: str, volume: str = "", cls: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"volumeName": volume} if volume else {}
    if cls is not None:
        spec["storageClassName"] = cls
    return {
        "kind": "PersistentVolumeClaim",
        "apiVersion": "v1",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    }


def host(labels: dict[str, str]) -> dict[str, Any]:
    return {"kind": "Node", "apiVersion": "v1", "metadata": {"name": "host1", "labels": labels}}


def pod(claim: str | None) -> dict[str, Any]:
    vols = [] if claim is None else [{"name": "v", "persistentVolumeClaim": {"claimName": claim}}]
    return {
        "kind": "Pod",
        "apiVersion": "v1",
        "metadata": {"name": "pod_1", "namespace": "default"},
        "spec": {"containers": [{"name": "c"}], "volumes": vols},
    }


SINGLE = [
    pv("Vol_1", {BZ: "us-west1-a"}),
    pv("Vol_2", {BR: "us-west1", "uselessLabel": "none"}),
    pv("Vol_3", {BR: "us-west1"}),
    pv("Vol_Stable_1", {Z: "us-west1-a"}),
    pv("Vol_Stable_2", {R: "us-west1", "uselessLabel": "none"}),
    pv("Vol_Stable_3", {Z: "us-west1-a", R: "us-west1-a"}),
    pvc("PVC_1", "Vol_1"),
    pvc("PVC_2", "Vol_2"),
    pvc("PVC_3", "Vol_3"),
    pvc("PVC_4", "Vol_not_exist"),
    pvc("PVC_Stable_1", "Vol_Stable_1"),
    pvc("PVC_Stable_2", "Vol_Stable_2"),
    pvc("PVC_Stable_3", "Vol_Stable_3"),
]
MULTI = [
    pv("Vol_1", {BZ: "us-west1-a"}),
    pv("Vol_2", {BZ: "us-west1-b", "uselessLabel": "none"}),
    pv("Vol_3", {BZ: "us-west1-c__us-west1-a"}),
    pv("Vol_Stable_1", {Z: "us-west1-a"}),
    pv("Vol_Stable_2", {Z: "us-west1-c__us-west1-a"}),
    pvc("PVC_1", "Vol_1"),
    pvc("PVC_2", "Vol_2"),
    pvc("PVC_3", "Vol_3"),
    pvc("PVC_4", "Vol_not_exist"),
    pvc("PVC_Stable_1", "Vol_Stable_1"),
    pvc("PVC_Stable_2", "Vol_Stable_2"),
]
U = {"uselessLabel": "none"}
BINDING = [
    {"kind": "StorageClass", "apiVersion": "storage.k8s.io/v1", "metadata": {"name": "Class_Immediate"}},
    {
        "kind": "StorageClass",
        "apiVersion": "storage.k8s.io/v1",
        "metadata": {"name": "Class_Wait"},
        "volumeBindingMode": "WaitForFirstConsumer",
    },
    pv("Vol_1", {BZ: "us-west1-a"}),
    pvc("PVC_1", "Vol_1"),
    pvc("PVC_NoSC", cls="Class_0"),
    pvc("PVC_EmptySC"),
    pvc("PVC_WaitSC", cls="Class_Wait"),
    pvc("PVC_ImmediateSC", cls="Class_Immediate"),
]
TEST_NODE = {BZ: "us-west1-a", **U}
SKIPPED = Status(Code.SKIP)

CASES = [
    # TestSingleZone
    ("single: pod without volume", SINGLE, None, {BZ: "us-west1-a"}, SKIPPED, None),
    ("single: node without labels", SINGLE, "PVC_1", {}, None, []),
    ("single: beta zone label matched", SINGLE, "PVC_1", {BZ: "us-west1-a", **U}, None, []),
    ("single: beta region label matched", SINGLE, "PVC_2", {BR: "us-west1", **U}, None, []),
    ("single: beta region label doesn't match", SINGLE, "PVC_2", {BR: "no_us-west1", **U}, None, CONFLICT),
    ("single: beta zone label doesn't match", SINGLE, "PVC_1", {BZ: "no_us-west1-a", **U}, None, CONFLICT),
    ("single: zone label matched", SINGLE, "PVC_Stable_1", {Z: "us-west1-a", **U}, None, []),
    ("single: region label matched", SINGLE, "PVC_Stable_2", {R: "us-west1", **U}, None, []),
    ("single: region label doesn't match", SINGLE, "PVC_Stable_2", {R: "no_us-west1", **U}, None, CONFLICT),
    ("single: zone label doesn't match", SINGLE, "PVC_Stable_1", {Z: "no_us-west1-a", **U}, None, CONFLICT),
    ("single: pv with zone and region, node with only zone", SINGLE, "PVC_Stable_3", {Z: "us-west1-a"}, None, CONFLICT),
    ("single: pv with zone,node with beta zone", SINGLE, "PVC_Stable_1", {BZ: "us-west1-a"}, None, CONFLICT),
    ("single: pv with beta label,node with ga label, matched", SINGLE, "PVC_1", {Z: "us-west1-a"}, None, []),
    ("single: pv with beta label,node with ga label, don't match", SINGLE, "PVC_1", {Z: "us-west1-b"}, None, CONFLICT),
    # TestMultiZone
    ("multi: node without labels", MULTI, "PVC_3", {}, None, []),
    ("multi: beta zone label matched", MULTI, "PVC_3", {BZ: "us-west1-a", **U}, None, []),
    ("multi: beta zone label doesn't match", MULTI, "PVC_1", {BZ: "us-west1-b", **U}, None, CONFLICT),
    ("multi: zone label matched", MULTI, "PVC_Stable_2", {Z: "us-west1-a", **U}, None, []),
    ("multi: zone label doesn't match", MULTI, "PVC_Stable_1", {Z: "us-west1-b", **U}, None, CONFLICT),
    # TestWithBinding (berth's lister spells kube's real message: storageclass.storage.k8s.io)
    ("binding: label zone failure domain matched", BINDING, "PVC_1", TEST_NODE, None, []),
    (
        "binding: unbound volume empty storage class",
        BINDING,
        "PVC_EmptySC",
        TEST_NODE,
        Status(Code.UNRESOLVABLE, "PersistentVolumeClaim had no pv name and storageClass name"),
        None,
    ),
    (
        "binding: unbound volume no storage class",
        BINDING,
        "PVC_NoSC",
        TEST_NODE,
        Status(Code.UNRESOLVABLE, 'storageclass.storage.k8s.io "Class_0" not found'),
        None,
    ),
    (
        "binding: unbound volume immediate binding mode",
        BINDING,
        "PVC_ImmediateSC",
        TEST_NODE,
        Status(Code.UNRESOLVABLE, 'VolumeBindingMode not set for StorageClass "Class_Immediate"'),
        None,
    ),
    ("binding: unbound volume wait binding mode", BINDING, "PVC_WaitSC", TEST_NODE, SKIPPED, None),
]


@pytest.mark.parametrize(("name", "objects", "claim", "labels", "pre", "want"), CASES, ids=[c[0] for c in CASES])
def test_volume_zone_matches_upstream(
    name: str,
    objects: list[dict[str, Any]],
    claim: str | None,
    labels: dict[str, str],
    pre: Status | None,
    want: list[tuple[str, Code]] | None,
) -> None:
    status, reasons = filter_run("VolumeZone", pod(claim), [*objects, host(labels)])
    assert (status.code, status.message) == ((pre.code, pre.message) if pre else (Code.SUCCESS, ""))
    if want is not None:
        assert reasons["host1"] == want


def test_missing_pv_is_unresolvable() -> None:
    # TestSingleZone's lister holds PVC_4 -> Vol_not_exist: PreFilter names the PV
    status, _ = filter_run("VolumeZone", pod("PVC_4"), [*SINGLE, host({})])
    assert (status.code, status.message) == (Code.UNRESOLVABLE, 'persistentvolume "Vol_not_exist" not found')
