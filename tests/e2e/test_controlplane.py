"""The real control plane and what kube 1.36 does on it: kube-scheduler binds a pod that fits, reports
exactly why one does not, and the PV controller binds a WaitForFirstConsumer claim on the node
kube-scheduler chose."""

from __future__ import annotations

import json

import pytest

from tests.e2e.cluster import Kube, condition, wait_for
from tests.e2e.controlplane import ControlPlane

pytestmark = pytest.mark.e2e


def test_components_ready_and_admin_kubeconfig(control_plane: ControlPlane) -> None:
    assert control_plane.client.get("/readyz") == "ok"
    version = json.loads(control_plane.kubectl("version", "-o", "json").stdout)["serverVersion"]
    assert (version["major"], version["minor"]) == ("1", "36")
    names = control_plane.kubectl("get", "namespaces", "-o", "name").stdout.split()
    assert {"namespace/default", "namespace/kube-system"} <= set(names)


def test_pod_that_fits_is_bound(kube: Kube) -> None:
    node = kube.node("n1", cpu="1")
    kube.pod("small", {"cpu": "100m"})
    assert kube.wait_bound("small") == node
    scheduled = condition(kube.get_pod("small"), "PodScheduled")
    assert scheduled is not None and scheduled["status"] == "True"


INSUFFICIENT_CPU = (
    "0/1 nodes are available: 1 Insufficient cpu. no new claims to deallocate, preemption: 0/1 nodes are "
    "available: 1 Preemption is not helpful for scheduling."
)


def test_pod_over_allocatable_is_unschedulable_with_kubes_message(kube: Kube) -> None:
    kube.node("n1", cpu="1")
    kube.pod("big", {"cpu": "1500m"})
    assert kube.wait_unschedulable("big", expect=INSUFFICIENT_CPU) == INSUFFICIENT_CPU
    assert INSUFFICIENT_CPU in kube.failed_scheduling("big")


def test_wait_for_first_consumer_claim_bound_on_the_chosen_node(kube: Kube) -> None:
    storage_class = f"local-{kube.id}"
    kube.create_cluster_object(
        "/apis/storage.k8s.io/v1/storageclasses",
        {
            "metadata": {"name": storage_class},
            "provisioner": "kubernetes.io/no-provisioner",
            "volumeBindingMode": "WaitForFirstConsumer",
        },
    )
    kube.node("a", cpu="4")
    with_disk = kube.node("b", cpu="4")
    pv = f"pv-{kube.id}"
    kube.create_cluster_object(
        "/api/v1/persistentvolumes",
        {
            "metadata": {"name": pv},
            "spec": {
                "capacity": {"storage": "10Gi"},
                "accessModes": ["ReadWriteOnce"],
                "persistentVolumeReclaimPolicy": "Retain",
                "storageClassName": storage_class,
                "local": {"path": "/mnt/disks/vol1"},
                "nodeAffinity": {
                    "required": {
                        "nodeSelectorTerms": [
                            {
                                "matchExpressions": [
                                    {"key": "kubernetes.io/hostname", "operator": "In", "values": [with_disk]}
                                ]
                            }
                        ]
                    }
                },
            },
        },
    )
    claim = {
        "metadata": {"name": "data"},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": storage_class,
            "resources": {"requests": {"storage": "5Gi"}},
        },
    }
    kube.api.create(kube.path("persistentvolumeclaims"), claim)
    # the PV controller leaves a WaitForFirstConsumer claim alone until a pod uses it
    waiting = wait_for("WaitForFirstConsumer event", lambda: kube.events("data", "WaitForFirstConsumer") or None)
    assert waiting[0]["message"] == "waiting for first consumer to be created before binding"
    assert waiting[0]["source"]["component"] == "persistentvolume-controller"
    assert kube.api.get(kube.path("persistentvolumeclaims", "data"))["status"]["phase"] == "Pending"

    kube.pod("user", {"cpu": "100m"}, claims=["data"])
    assert kube.wait_bound("user") == with_disk

    def bound() -> dict[str, object] | None:
        pvc = kube.api.get(kube.path("persistentvolumeclaims", "data"))
        return pvc if pvc["status"].get("phase") == "Bound" else None

    pvc = wait_for("claim data bound", bound)
    assert pvc["spec"]["volumeName"] == pv
    volume = kube.api.get(f"/api/v1/persistentvolumes/{pv}")
    assert volume["status"]["phase"] == "Bound"
    assert volume["spec"]["claimRef"]["namespace"] == kube.ns
    assert volume["spec"]["claimRef"]["name"] == "data"
    # kube-scheduler's PreBind set the PV's claimRef; the PV controller completed the binding
    assert pvc["metadata"]["annotations"]["pv.kubernetes.io/bind-completed"] == "yes"
