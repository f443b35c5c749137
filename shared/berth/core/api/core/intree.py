"""In-tree volumes as CSI sees them (upstream's csi-translation-lib), for the three that map simply:
AWS EBS, GCE PD and Azure Disk. Each gives its CSI driver and the volume handle the driver would use,
so an in-tree volume and a CSI volume of the same disk are one volume.
"""

from __future__ import annotations

AWS_EBS = "ebs.csi.aws.com"
GCE_PD = "pd.csi.storage.gke.io"
AZURE_DISK = "disk.csi.azure.com"
UNSPECIFIED = "UNSPECIFIED"
ZONE_LABELS = ("failure-domain.beta.kubernetes.io/zone", "topology.kubernetes.io/zone")  # upstream's order


def aws_handle(volume_id: str) -> str | None:
    """`aws://<zone>/<id>` and `aws:///<id>` are `<id>`, which must then read `vol-…` (None otherwise:
    upstream fails the translation); a bare ID stays as it is."""
    if not volume_id.startswith("aws://"):
        return volume_id
    got = volume_id.removeprefix("aws://").split("/", 1)[-1].strip("/")
    return got if got.startswith("vol-") and "/" not in got else None


def gce_handle(pd_name: str, labels: dict[str, str] | None = None) -> str | None:
    """Zonal `projects/UNSPECIFIED/zones/<zone>/disks/<pd>` (zone UNSPECIFIED when the PV names none, and
    always for an inline volume), regional `.../regions/<region>/disks/<pd>` for a multi-zone label (`a__b`);
    None when those zones are not of one region (upstream fails the translation)."""
    value = next((labels[k] for k in ZONE_LABELS if labels and labels.get(k)), "")
    zones = value.split("__") if value else []
    if len(zones) <= 1:
        return f"projects/{UNSPECIFIED}/zones/{zones[0] if zones else UNSPECIFIED}/disks/{pd_name}"
    regions = {z.rsplit("-", 1)[0] for z in zones if "-" in z}
    if len(regions) != 1 or any("-" not in z for z in zones):
        return None
    return f"projects/{UNSPECIFIED}/regions/{regions.pop()}/disks/{pd_name}"
