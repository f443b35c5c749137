"""VolumeRestrictions, as upstream's TestGCEDiskConflicts, TestAWSDiskConflicts, TestRBDDiskConflicts,
TestISCSIDiskConflicts and TestAccessModeConflicts say
(pkg/scheduler/framework/plugins/volumerestrictions/volume_restrictions_test.go)."""

from __future__ import annotations

from typing import Any

import pytest

from berth.core.framework.status import Code
from tests.plugins.helpers import filter_run

DISK = [("node(s) had no available disk", Code.UNSCHEDULABLE)]
RWOP = [
    (
        "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode already in-use by another pod",
        Code.UNSCHEDULABLE,
    )
]
NODE = {"kind": "Node", "apiVersion": "v1", "metadata": {"name": "n"}}


def vpod(name: str, *volumes: dict[str, Any], node: str = "") -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [{"name": "c"}],
        "volumes": [{"name": f"v{i}", **v} for i, v in enumerate(volumes)],
    }
    if node:
        spec["nodeName"] = node
    return {
        "kind": "Pod",
        "apiVersion": "v1",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
        "status": {"phase": "Running" if node else "Pending"},
    }


GCE_FOO = {"gcePersistentDisk": {"pdName": "foo"}}
GCE_BAR = {"gcePersistentDisk": {"pdName": "bar"}}
AWS_FOO = {"awsElasticBlockStore": {"volumeID": "foo"}}
AWS_BAR = {"awsElasticBlockStore": {"volumeID": "bar"}}
RBD_1 = {"rbd": {"monitors": ["a", "b"], "pool": "foo", "image": "bar"}}
RBD_2 = {"rbd": {"monitors": ["c", "d"], "pool": "foo", "image": "bar"}}
ISCSI_1 = {"iscsi": {"targetPortal": "127.0.0.1:3260", "iqn": "iqn.2016-12.server:storage.target01", "lun": 0}}
ISCSI_2 = {"iscsi": {"targetPortal": "127.0.0.1:3260", "iqn": "iqn.2017-12.server:storage.target01", "lun": 0}}

DISK_CASES = []
for test, one, two in (
    ("GCE", GCE_FOO, GCE_BAR),
    ("AWS", AWS_FOO, AWS_BAR),
    ("RBD", RBD_1, RBD_2),
    ("ISCSI", ISCSI_1, ISCSI_2),
):
    DISK_CASES += [
        (f"Test{test}DiskConflicts: one state", vpod("p"), [vpod("e", one, node="n")], None),
        (f"Test{test}DiskConflicts: same state", vpod("p", one), [vpod("e", one, node="n")], DISK),
        (f"Test{test}DiskConflicts: different state", vpod("p", two), [vpod("e", one, node="n")], []),
    ]
DISK_CASES += [
    (
        "GCE read-only on both sides does not conflict",
        vpod("p", {"gcePersistentDisk": {"pdName": "foo", "readOnly": True}}),
        [vpod("e", {"gcePersistentDisk": {"pdName": "foo", "readOnly": True}}, node="n")],
        [],
    ),
    (
        "AWS read-only still conflicts",
        vpod("p", {"awsElasticBlockStore": {"volumeID": "foo", "readOnly": True}}),
        [vpod("e", {"awsElasticBlockStore": {"volumeID": "foo", "readOnly": True}}, node="n")],
        DISK,
    ),
]


@pytest.mark.parametrize(("name", "pod", "existing", "want"), DISK_CASES, ids=[c[0] for c in DISK_CASES])
def test_disk_conflicts(name: str, pod: dict[str, Any], existing: list[dict[str, Any]], want: list[Any] | None) -> None:
    status, reasons = filter_run("VolumeRestrictions", pod, [NODE, *existing])
    if want is None:
        assert status.code is Code.SKIP
    else:
        assert status.code is Code.SUCCESS and reasons["n"] == want


def claim(name: str, *modes: str) -> dict[str, Any]:
    return {
        "kind": "PersistentVolumeClaim",
        "apiVersion": "v1",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"accessModes": list(modes)},
    }


def pvc_vol(name: str) -> dict[str, Any]:
    return {"persistentVolumeClaim": {"claimName": name}}


def test_access_mode_conflicts() -> None:
    # TestAccessModeConflicts: "nothing", "failed to get PVC", "no access mode conflict",
    # "access mode conflict, unschedulable"
    claims = [claim("claim-with-rwop-1", "ReadWriteOncePod"), claim("claim-with-rwop-2", "ReadWriteOncePod")]
    in_use = vpod("in-use", pvc_vol("claim-with-rwop-1"), node="n")
    assert filter_run("VolumeRestrictions", vpod("p"), [NODE])[0].code is Code.SKIP
    status, _ = filter_run("VolumeRestrictions", vpod("p", pvc_vol("claim-with-rwop-1")), [NODE])
    assert (status.code, status.message) == (Code.UNRESOLVABLE, 'persistentvolumeclaim "claim-with-rwop-1" not found')
    status, _ = filter_run("VolumeRestrictions", vpod("p", pvc_vol("claim-with-rwop-2")), [NODE, *claims, in_use])
    assert status.code is Code.SKIP
    status, reasons = filter_run("VolumeRestrictions", vpod("p", pvc_vol("claim-with-rwop-1")), [NODE, *claims, in_use])
    assert status.code is Code.SUCCESS and reasons["n"] == RWOP


# TestAccessModeConflicts, case by case: (case, pod's claims, pods on node "n" with their claims, the
# claims that exist (name -> access mode), PreFilter code and message, the node's reasons)
RWOP_CLAIMS = {"claim-with-rwop-1": "ReadWriteOncePod", "claim-with-rwx": "ReadWriteMany"}
ACCESS: list[tuple[str, list[str], dict[str, list[str]], dict[str, str], tuple[Code, str], list[Any] | None]] = [
    ("nothing", [], {}, {}, (Code.SKIP, ""), None),
    ("failed to get PVC", ["claim-with-rwop-1"], {}, {},
     (Code.UNRESOLVABLE, 'persistentvolumeclaim "claim-with-rwop-1" not found'), None),
    ("no access mode conflict", ["claim-with-rwop-1"], {"pod-with-rwx": ["claim-with-rwx"]}, RWOP_CLAIMS,
     (Code.SKIP, ""), None),
    ("access mode conflict, unschedulable", ["claim-with-rwop-1"],
     {"pod-with-one-pvc": ["claim-with-rwop-1"], "pod-with-rwx": ["claim-with-rwx"]}, RWOP_CLAIMS,
     (Code.SUCCESS, ""), RWOP),
    ("two conflicts, unschedulable", ["claim-with-rwop-1", "claim-with-rwop-2"],
     {"pod-with-two-pvcs": ["claim-with-rwop-1", "claim-with-rwop-2"], "pod-with-rwx": ["claim-with-rwx"]},
     {**RWOP_CLAIMS, "claim-with-rwop-2": "ReadWriteOncePod"}, (Code.SUCCESS, ""), RWOP),
]  # fmt: skip


@pytest.mark.parametrize(
    ("claims", "on_node", "existing", "pre_filter", "want"), [c[1:] for c in ACCESS], ids=[c[0] for c in ACCESS]
)
def test_access_mode_conflicts_as_upstream(
    claims: list[str],
    on_node: dict[str, list[str]],
    existing: dict[str, str],
    pre_filter: tuple[Code, str],
    want: list[Any] | None,
) -> None:
    objects = [NODE, *(claim(n, mode) for n, mode in existing.items())]
    objects += [vpod(name, *(pvc_vol(c) for c in cs), node="n") for name, cs in on_node.items()]
    status, reasons = filter_run("VolumeRestrictions", vpod("p", *(pvc_vol(c) for c in claims)), objects)
    assert (status.code, status.message if status.code is Code.UNRESOLVABLE else "") == pre_filter
    if want is not None:
        assert reasons["n"] == want
