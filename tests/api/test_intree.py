"""In-tree volumes as CSI sees them (csi-translation-lib's plugins), for NodeVolumeLimits."""

from __future__ import annotations

import pytest

from berth.core.api.core.intree import aws_handle, gce_handle
from berth.core.api.kinds import convert

# upstream: TestKubernetesVolumeIDToEBSVolumeID (csi-translation-lib/plugins/aws_ebs_test.go)
AWS = [
    ("Normal ID format", "vol-02399794d890f9375", "vol-02399794d890f9375"),
    ("aws:///{volumeId} format", "aws:///vol-02399794d890f9375", "vol-02399794d890f9375"),
    ("aws://{zone}/{volumeId} format", "aws://us-west-2a/vol-02399794d890f9375", "vol-02399794d890f9375"),
    ("fails on invalid volume ID", "aws://us-west-2a/02399794d890f9375", None),
]


@pytest.mark.parametrize(("given", "want"), [a[1:] for a in AWS], ids=[a[0] for a in AWS])
def test_aws_volume_ids(given: str, want: str | None) -> None:
    assert aws_handle(given) == want


ZONE, BETA = "topology.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/zone"
GCE = [
    ("no zone label", {}, "projects/UNSPECIFIED/zones/UNSPECIFIED/disks/pd"),
    ("zonal", {ZONE: "us-central1-a"}, "projects/UNSPECIFIED/zones/us-central1-a/disks/pd"),
    (
        "the beta label first",
        {BETA: "us-east1-b", ZONE: "us-central1-a"},
        "projects/UNSPECIFIED/zones/us-east1-b/disks/pd",
    ),
    ("regional", {ZONE: "us-central1-a__us-central1-c"}, "projects/UNSPECIFIED/regions/us-central1/disks/pd"),
    ("zones of two regions fail", {ZONE: "us-central1-a__europe-west1-b"}, None),
]


@pytest.mark.parametrize(("labels", "want"), [g[1:] for g in GCE], ids=[g[0] for g in GCE])
def test_gce_pd_handles(labels: dict[str, str], want: str | None) -> None:
    assert gce_handle("pd", labels) == want


def test_a_pv_and_an_inline_volume_carry_their_csi_identity() -> None:
    pv = convert(
        {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": "a", "labels": {ZONE: "z-1"}},
            "spec": {"gcePersistentDisk": {"pdName": "disk"}},
        }
    )
    assert (pv.migrated_driver, pv.migrated_handle) == (
        "pd.csi.storage.gke.io",
        "projects/UNSPECIFIED/zones/z-1/disks/disk",
    )
    pod = convert(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p", "namespace": "default"},
            "spec": {
                "containers": [{"name": "c"}],
                "volumes": [
                    {"name": "a", "awsElasticBlockStore": {"volumeID": "aws://us-west-2a/vol-1"}},
                    {"name": "b", "azureDisk": {"diskURI": "/subscriptions/s/disks/d", "diskName": "d"}},
                    {"name": "c", "gcePersistentDisk": {"pdName": "g"}},
                    {"name": "d", "configMap": {"name": "x"}},
                ],
            },
        }
    )
    assert pod.inline_csi == (
        ("ebs.csi.aws.com", "vol-1"),
        ("disk.csi.azure.com", "/subscriptions/s/disks/d"),
        ("pd.csi.storage.gke.io", "projects/UNSPECIFIED/zones/UNSPECIFIED/disks/g"),
    )
