"""NodeVolumeLimits (CSI): per CSI driver, the unique volumes a node would attach with the pod
against the node's limit in its CSINode (`spec.drivers[].allocatable.count`). A volume already used
by a pod on the node is free; a node without a CSINode, or a driver without a count, has no limit.

A claim counts under its PV's CSI driver and volume handle; an unbound claim (or one whose PV is
gone) under its StorageClass's provisioner and the claim's own identity, so several pods sharing it
count it once. In-tree AWS EBS, GCE PD and Azure Disk volumes, as PVs or inline, count under their CSI
driver and the handle it would give them (berth.core.api.core.intree; migration is on wherever a CSINode
exists, and only nodes with a CSINode have limits). Where berth departs: VolumeAttachments are not read.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from berth.core import framework as fwk
from berth.core.api.core.model import CSINode, Pod
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
    """CSINodes by node name, and which bound pods with claims each node holds (a ClusterState
    extension): a decision reads only the pods on nodes that have a limit for the pod's drivers."""

    kinds: tuple[type, ...] = (CSINode,)
    assigned_only = True

    def __init__(self) -> None:
        self.csi_nodes: dict[str, CSINode] = {}
        self.pods_on: dict[str, set[str]] = {}
        self._placed: dict[str, str] = {}  # pod key -> node

    def apply(self, state: ClusterState, obj: Any, deleted: bool) -> None:
        if deleted:
            self.csi_nodes.pop(obj.name, None)
        else:
            self.csi_nodes[obj.name] = obj

    def pod_changed(self, state: ClusterState, old: Pod | None, new: Pod | None) -> None:
        key = (new or old).key  # type: ignore[union-attr]
        prev = self._placed.pop(key, None)
        if prev is not None:
            self.pods_on[prev].discard(key)
        if new is not None and new.node_name and not new.terminated and (new.volumes or new.inline_csi):
            self._placed[key] = new.node_name
            self.pods_on.setdefault(new.node_name, set()).add(key)


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
            if slot is None or not limits:
                continue
            attached: dict[str, str] = {}
            for key in self.counts.pods_on.get(node, ()):
                placed = state.pods.get(key)
                if placed is not None:
                    attached.update(attachable(state, placed, pending=False))
            for driver, limit in limits.items():
                have = sum(1 for d in attached.values() if d == driver)
                more = sum(1 for u, d in new.items() if d == driver and u not in attached)
                if have + more > limit:
                    bad[slot] = True
        bad &= nodes.valid
        return [fwk.Failure(bad, REASON)] if bad.any() else []

    def events_to_register(self) -> tuple[fwk.ClusterEventWithHint, ...]:
        # kube: CSINode Add|Update, assigned Pod Delete and PVC Add, the last two with hints. berth sees only the
        # new CSINode of an update, so it has no hint (kube's: a driver's count went up).
        return (
            fwk.ClusterEventWithHint(fwk.ClusterEvent("CSINode", fwk.Action.ADD | fwk.Action.UPDATE)),
            fwk.ClusterEventWithHint(fwk.ClusterEvent("Pod", fwk.Action.DELETE), self.pod_hint),
            fwk.ClusterEventWithHint(
                fwk.ClusterEvent("PersistentVolumeClaim", fwk.Action.ADD), lambda state, obj, now: fwk.claim_hint(obj)
            ),
        )

    def pod_hint(self, state: ClusterState, obj: Any, now: Any) -> fwk.Hint:
        """kube: a pod left its node; retry when it was on a node and had volumes that count."""
        assert isinstance(obj, Pod)
        frees = bool(obj.node_name) and bool(obj.volumes or obj.inline_csi)
        return lambda pods, version: fwk.each_pod(pods, lambda p: frees)


def new(args: Any, handle: ClusterState) -> NodeVolumeLimits:
    return NodeVolumeLimits()
