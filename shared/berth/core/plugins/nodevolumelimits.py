"""NodeVolumeLimits (CSI), as kube 1.36's csi.go: per CSI driver, the unique volumes a node would attach
with the pod against the node's limit in its CSINode (`spec.drivers[].allocatable.count`). A volume already
used by a pod on the node is free; a node without a CSINode, or a driver without a count, has no limit.
Only the drivers of the pod's new volumes are checked: a node already over a driver's limit passes a pod
that brings no new volume of that driver.

A claim counts under its PV's CSI driver and volume handle; an unbound claim (or one whose PV is
gone) under its StorageClass's provisioner and the claim's own identity, so several pods sharing it
count it once. In-tree AWS EBS, GCE PD and Azure Disk volumes, as PVs or inline, count under their CSI
driver and the handle it would give them (berth.core.api.core.intree; migration is on wherever a CSINode
exists, and only nodes with a CSINode have limits).

The node's VolumeAttachments count too (kube 1.32+, PR #127757): one per `attacher/volumeHandle` of those
with an attacher and a PersistentVolume that exists and is CSI, unless a pod on the node already counts
that volume. As in kube, the pod's own new volume is not matched against them: a volume attached to the
node but used by no pod there counts twice for a pod that brings it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

from berth.core import framework as fwk
from berth.core.api.core.model import CSINode, Pod, VolumeAttachment
from berth.core.cache.extension import StateExtension
from berth.core.cache.state import ClusterState

NAME = "NodeVolumeLimits"
Args = None
REASON = "node(s) exceed max volume count"
CLAIM_HANDLE = "berth-claim"  # the prefix of an unbound claim's handle: never a real volume handle
# in-tree provisioners whose claims count under their CSI driver (migration is on wherever a CSINode exists)
MIGRATED = {
    "kubernetes.io/aws-ebs": "ebs.csi.aws.com",
    "kubernetes.io/gce-pd": "pd.csi.storage.gke.io",
    "kubernetes.io/azure-disk": "disk.csi.azure.com",
    "kubernetes.io/cinder": "cinder.csi.openstack.org",
}


class _NotFound(Exception):
    pass


class _NotOwned(Exception):
    """A generic ephemeral volume's claim that the pod does not own (kube: an Error status)."""


class VolumeCounts(StateExtension):
    """CSINodes and VolumeAttachments by node name, and which bound pods with claims each node holds (a
    ClusterState extension): a decision reads only the pods on nodes that have a limit for the pod's drivers."""

    kinds: tuple[type, ...] = (CSINode, VolumeAttachment)
    assigned_only = True

    def __init__(self) -> None:
        self.csi_nodes: dict[str, CSINode] = {}
        self.pods_on: dict[str, set[str]] = {}
        self.attachments: dict[str, dict[str, VolumeAttachment]] = {}  # node -> name -> attachment
        self._placed: dict[str, str] = {}  # pod key -> node
        self._attached: dict[str, str] = {}  # attachment name -> node

    def apply(self, state: ClusterState, obj: Any, deleted: bool) -> None:
        if isinstance(obj, VolumeAttachment):
            self._attach(obj, deleted)
        elif deleted:
            self.csi_nodes.pop(obj.name, None)
        else:
            self.csi_nodes[obj.name] = obj

    def _attach(self, va: VolumeAttachment, deleted: bool) -> None:
        was = self._attached.pop(va.name, None)
        if was is not None:
            on = self.attachments[was]
            on.pop(va.name, None)
            if not on:
                del self.attachments[was]
        if not deleted:
            self._attached[va.name] = va.node_name
            self.attachments.setdefault(va.node_name, {})[va.name] = va

    def pod_changed(self, state: ClusterState, old: Pod | None, new: Pod | None) -> None:
        key = (new or old).key  # type: ignore[union-attr]
        prev = self._placed.pop(key, None)
        if prev is not None:
            self.pods_on[prev].discard(key)
        if new is not None and new.node_name and not new.terminated and (new.volumes or new.inline_csi):
            self._placed[key] = new.node_name
            self.pods_on.setdefault(new.node_name, set()).add(key)

    def attached_on(self, state: ClusterState, node: str) -> dict[str, str]:
        """kube's getNodeVolumeAttachmentInfo: `attacher/volumeHandle` -> attacher of the node's attachments
        with an attacher and a PersistentVolume that exists and is CSI."""
        out: dict[str, str] = {}
        for va in self.attachments.get(node, {}).values():
            pv = state.pvs.get(va.pv_name) if va.attacher and va.pv_name else None
            if pv is not None and pv.csi_driver:
                out[f"{va.attacher}/{pv.csi_handle}"] = va.attacher
        return out


def attachable(state: ClusterState, pod: Pod, pending: bool) -> dict[str, str]:
    """The pod's volumes that attach through a CSI driver: unique name -> driver. For the pod being
    scheduled a missing claim raises _NotFound, and an ephemeral volume's claim it does not own
    _NotOwned; for a pod already placed such claims are skipped."""
    out: dict[str, str] = {f"{driver}/{handle}": driver for driver, handle in pod.inline_csi}
    for vol in pod.volumes:
        key = f"{pod.namespace}/{vol.claim_name}"
        pvc = state.pvcs.get(key)
        if pvc is None:
            if pending:
                raise _NotFound(f'looking up PVC {key}: persistentvolumeclaim "{vol.claim_name}" not found')
            continue
        if pending and vol.ephemeral and not any(o.controller and o.uid == pod.uid for o in pvc.owner_refs):
            raise _NotOwned(f"PVC {key} was not created for pod {pod.namespace}/{pod.name} (pod is not owner)")
        pv = state.pvs.get(pvc.volume_name) if pvc.volume_name else None
        if pv is not None:
            if pv.csi_driver:
                out[f"{pv.csi_driver}/{pv.csi_handle}"] = pv.csi_driver
            elif pv.migrated_driver:
                out[f"{pv.migrated_driver}/{pv.migrated_handle}"] = pv.migrated_driver
            continue  # other in-tree or local PVs: not counted
        sc = state.classes.get(pvc.storage_class) if pvc.storage_class else None
        if sc is None or not sc.provisioner:
            continue
        driver = MIGRATED.get(sc.provisioner, sc.provisioner)
        out[f"{driver}/{CLAIM_HANDLE}-{key}"] = driver
    return out


def by_pods_vols(
    by_pod: dict[str, dict[str, str]], driver: str, new: dict[str, str], extra: dict[str, str]
) -> dict[str, int]:
    """Per pod on a node, how many of the driver's volumes its leaving frees: those no other pod there
    uses and no VolumeAttachment holds. A pod using one of the new pod's volumes frees none (that
    volume would be new then)."""
    users: Counter[str] = Counter(u for vols in by_pod.values() for u in vols)
    out = {}
    for key, vols in by_pod.items():
        if any(u in new for u in vols):
            continue
        freed = sum(1 for u, d in vols.items() if d == driver and users[u] == 1 and u not in extra)
        if freed:
            out[key] = freed
    return out


def _freeing(freed: dict[str, int], need: int) -> tuple[str, ...]:
    """The fewest pods that free at least `need` volumes (the most freeing first, then by name); ()
    when all of them free too few."""
    picked: list[str] = []
    got = 0
    for key, n in sorted(freed.items(), key=lambda kv: (-kv[1], kv[0])):
        if got >= need:
            break
        picked.append(key)
        got += n
    return tuple(picked) if got >= need else ()


class NodeVolumeLimits:
    name = NAME

    def __init__(self) -> None:
        self.counts = VolumeCounts()

    def extension(self) -> VolumeCounts:
        return self.counts

    def pre_filter(self, cycle: fwk.Cycle) -> fwk.Status:
        return fwk.OK if cycle.pod.volumes or cycle.pod.inline_csi else fwk.SKIP

    def filter(self, cycle: fwk.Cycle) -> list[fwk.Failure]:
        state, nodes = cycle.state, cycle.state.nodes
        try:
            new = attachable(state, cycle.pod, pending=True)
        except _NotFound as e:
            return [fwk.Failure(nodes.valid.copy(), str(e), fwk.Code.UNRESOLVABLE)]
        except _NotOwned as e:
            return [fwk.Failure(nodes.valid.copy(), str(e), fwk.Code.ERROR)]
        if not new:
            return []
        drivers = set(new.values())
        bad = np.zeros(len(nodes.valid), dtype=bool)
        for node, csi in self.counts.csi_nodes.items():
            slot = nodes.slot.get(node)
            limits = {d: n for d, n in csi.limits.items() if d in drivers}
            if slot is not None and limits and self.exceeds(state, node, new, limits):
                bad[slot] = True
        bad &= nodes.valid
        return [fwk.Failure(bad, REASON)] if bad.any() else []

    def exceeds(self, state: ClusterState, node: str, new: dict[str, str], limits: dict[str, int]) -> bool:
        """kube's Filter past its limits lookup: the volumes of the pods on the node, then its attachments
        that no pod there counts; a driver is checked only when the pod brings a volume of it the pods
        there do not use."""
        attached: dict[str, str] = {}
        for key in self.counts.pods_on.get(node, ()):
            placed = state.pods.get(key)
            if placed is not None:
                attached.update(attachable(state, placed, pending=False))
        have = Counter(attached.values())
        have.update(d for u, d in self.counts.attached_on(state, node).items() if u not in attached)
        more = Counter(d for u, d in new.items() if u not in attached)
        return any(have[d] + n > limits[d] for d, n in more.items() if d in limits)

    def explain_filter(self, cycle: fwk.Cycle, slots: fwk.Slots) -> dict[int, list[fwk.Why]]:
        """Per driver over its limit on the node: the volumes attached (by the pods there, by
        VolumeAttachments no pod there counts), the limit, and the pod's new volumes. The change tried
        is the fewest pods there leaving whose volumes of the driver no one else on the node counts."""
        state, nodes = cycle.state, cycle.state.nodes
        try:
            new = attachable(state, cycle.pod, pending=True)
        except (_NotFound, _NotOwned):
            return {}
        out: dict[int, list[fwk.Why]] = {}
        for s in slots.tolist():
            node = nodes.names[s] or ""
            csi = self.counts.csi_nodes.get(node)
            if csi is None:
                continue
            by_pod: dict[str, dict[str, str]] = {}
            for key in sorted(self.counts.pods_on.get(node, ())):
                placed = state.pods.get(key)
                if placed is not None:
                    by_pod[key] = attachable(state, placed, pending=False)
            attached = {u: d for vols in by_pod.values() for u, d in vols.items()}
            extra = {u: d for u, d in self.counts.attached_on(state, node).items() if u not in attached}
            whys = []
            for driver in sorted(set(new.values())):
                limit = csi.limits.get(driver)
                mine = [u for u, d in new.items() if d == driver and u not in attached]
                by_pods = sum(1 for d in attached.values() if d == driver)
                by_vas = sum(1 for d in extra.values() if d == driver)
                if limit is None or not mine or by_pods + by_vas + len(mine) <= limit:
                    continue
                over = by_pods + by_vas + len(mine) - limit
                text = (
                    f"{driver}: {by_pods + by_vas} of {limit} volume(s) attached ({by_pods} by pods on the node, "
                    f"{by_vas} by VolumeAttachments only), the pod brings {len(mine)} new: {over} over"
                )
                facts = {
                    "driver": driver,
                    "limit": limit,
                    "byPods": by_pods,
                    "byVolumeAttachments": by_vas,
                    "new": len(mine),
                    "over": over,
                }
                leave = _freeing(by_pods_vols(by_pod, driver, new, extra), over)
                whys.append(fwk.Why(REASON, text, facts, fwk.Change(leave=leave) if leave else None))
            if whys:
                out[s] = whys
        return out

    def removal_safe(self, cycle: fwk.Cycle, leaving: Sequence[Pod] | None = None) -> bool:
        """Removing pods from a node can fail it here: a volume of the pod that they used becomes new (and
        an attachment they covered counts again), and an over-limit driver is checked again. Safe when no
        CSINode limits a driver of the pod's volumes."""
        if not (cycle.pod.volumes or cycle.pod.inline_csi) or not self.counts.csi_nodes:
            return True
        try:
            drivers = set(attachable(cycle.state, cycle.pod, pending=True).values())
        except (_NotFound, _NotOwned):  # rejected on every node, whatever leaves
            return True
        return not any(d in csi.limits for csi in self.counts.csi_nodes.values() for d in drivers)

    def events_to_register(self) -> tuple[fwk.ClusterEventWithHint, ...]:
        # kube: CSINode Add|Update, assigned Pod Delete, PVC Add and VolumeAttachment Delete, the last three with
        # hints. berth sees only the new CSINode of an update, so it has no hint (kube's: a driver's count went up).
        return (
            fwk.ClusterEventWithHint(fwk.ClusterEvent("CSINode", fwk.Action.ADD | fwk.Action.UPDATE)),
            fwk.ClusterEventWithHint(fwk.ClusterEvent("Pod", fwk.Action.DELETE), self.pod_hint),
            fwk.ClusterEventWithHint(
                fwk.ClusterEvent("PersistentVolumeClaim", fwk.Action.ADD), lambda state, obj, now: fwk.claim_hint(obj)
            ),
            fwk.ClusterEventWithHint(fwk.ClusterEvent("VolumeAttachment", fwk.Action.DELETE), self.attachment_hint),
        )

    def attachment_hint(self, state: ClusterState, obj: Any, now: Any) -> fwk.Hint:
        """kube's isSchedulableAfterVolumeAttachmentDeleted: retry a pod with a claim (not a generic
        ephemeral volume's), or with an inline in-tree volume whose CSI driver is the attachment's attacher."""
        assert isinstance(obj, VolumeAttachment)
        attacher = obj.attacher
        return lambda pods, version: fwk.each_pod(
            pods,
            lambda p: any(not v.ephemeral for v in p.volumes) or any(d == attacher for d, _ in p.inline_csi),
        )

    def pod_hint(self, state: ClusterState, obj: Any, now: Any) -> fwk.Hint:
        """kube: a pod left its node; retry when it was on a node and had volumes that count."""
        assert isinstance(obj, Pod)
        frees = bool(obj.node_name) and bool(obj.volumes or obj.inline_csi)
        return lambda pods, version: fwk.each_pod(pods, lambda p: frees)


def new(args: Any, handle: ClusterState) -> NodeVolumeLimits:
    return NodeVolumeLimits()
