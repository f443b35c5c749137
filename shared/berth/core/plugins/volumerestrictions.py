"""VolumeRestrictions (PreFilter, Filter): inline disks the pod shares with pods on a node (GCE PD,
AWS EBS, iSCSI, RBD, as upstream's rules say), and ReadWriteOncePod claims already used by a pod
anywhere in the cluster."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from berth.core import framework as fwk
from berth.core.api.core.model import InlineDisk, Pod
from berth.core.cache.extension import StateExtension
from berth.core.cache.state import ClusterState

NAME = "VolumeRestrictions"
Args = None
DISK_CONFLICT = "node(s) had no available disk"
RWOP_CONFLICT = (
    "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode already in-use by another pod"
)
RWOP = "ReadWriteOncePod"


def conflict(a: InlineDisk, b: InlineDisk) -> bool:
    """kube's isVolumeConflict for one pair of inline disks."""
    if a.kind != b.kind or a.name != b.name:
        return False
    if a.kind == "aws":
        return True  # readOnly does not help an EBS volume
    if a.kind == "rbd" and (a.pool != b.pool or not set(a.monitors) & set(b.monitors)):
        return False
    return not (a.read_only and b.read_only)


def _disk(d: InlineDisk) -> str:
    return f"{d.kind} disk {d.name}{' (read-only)' if d.read_only else ''}"


class VolumeUse(StateExtension):
    """Which bound pods use each claim (cluster-wide) and the inline disks on each node (a
    ClusterState extension)."""

    assigned_only = True

    def __init__(self) -> None:
        self.claim_users: dict[str, int] = {}  # ns/claim -> bound pods using it
        self.disks_on: dict[str, dict[str, tuple[InlineDisk, ...]]] = {}  # node -> pod key -> its disks
        # pod key -> its node, claims and inline disks
        self.placed: dict[str, tuple[str, tuple[str, ...], tuple[InlineDisk, ...]]] = {}

    def pod_changed(self, state: ClusterState, old: Pod | None, new: Pod | None) -> None:
        key = (new or old).key  # type: ignore[union-attr]
        prev = self.placed.pop(key, None)
        if prev is not None:
            node, claims, disks = prev
            for c in claims:
                self.claim_users[c] -= 1
                if not self.claim_users[c]:
                    del self.claim_users[c]
            if disks:
                self.disks_on[node].pop(key, None)
        if new is None or not new.node_name or new.terminated:
            return
        claims = tuple(f"{new.namespace}/{v.claim_name}" for v in new.volumes if not v.ephemeral)
        if not claims and not new.inline_disks:
            return
        self.placed[key] = (new.node_name, claims, new.inline_disks)
        for c in claims:
            self.claim_users[c] = self.claim_users.get(c, 0) + 1
        if new.inline_disks:
            self.disks_on.setdefault(new.node_name, {})[key] = new.inline_disks


@dataclass(frozen=True)
class _State:
    rwop_in_use: bool


class VolumeRestrictions:
    name = NAME
    reads_other_nodes = True  # its verdict on a node depends on pods elsewhere (framework.ReadsOtherNodes)

    def __init__(self) -> None:
        self.use = VolumeUse()

    def extension(self) -> VolumeUse:
        return self.use

    def removal_safe(self, cycle: fwk.Cycle, leaving: Sequence[Pod] | None = None) -> bool:
        """Always: disk conflicts on a node and ReadWriteOncePod claims in use only drop as pods leave."""
        return True

    def pre_filter(self, cycle: fwk.Cycle) -> fwk.Status:
        pod, state = cycle.pod, cycle.state
        in_use = False
        for vol in pod.volumes:
            if vol.ephemeral:
                continue  # generic ephemeral volumes are not inspected, as upstream
            key = f"{pod.namespace}/{vol.claim_name}"
            pvc = state.pvcs.get(key)
            if pvc is None:
                return fwk.Status(fwk.Code.UNRESOLVABLE, f'persistentvolumeclaim "{vol.claim_name}" not found')
            if RWOP in pvc.access_modes and self.use.claim_users.get(key, 0) > 0:
                in_use = True
        if not pod.inline_disks and not in_use:
            return fwk.SKIP
        cycle.data[self.name] = _State(in_use)
        return fwk.OK

    def filter(self, cycle: fwk.Cycle) -> list[fwk.Failure]:
        nodes = cycle.state.nodes
        disks = cycle.pod.inline_disks
        bad = np.zeros(len(nodes.valid), dtype=bool)
        if disks:
            for node, pods in self.use.disks_on.items():
                slot = nodes.slot.get(node)
                if slot is None:
                    continue
                if any(conflict(a, b) for theirs in pods.values() for b in theirs for a in disks):
                    bad[slot] = True
        out = []
        bad &= nodes.valid
        if bad.any():
            out.append(fwk.Failure(bad, DISK_CONFLICT))
        if cycle.data[self.name].rwop_in_use:
            out.append(fwk.Failure(nodes.valid & ~bad, RWOP_CONFLICT))
        return out

    def explain_filter(self, cycle: fwk.Cycle, slots: fwk.Slots) -> dict[int, list[fwk.Why]]:
        """The pods on the node whose inline disks clash with the pod's (which disk, read-only or not);
        the pods anywhere using a ReadWriteOncePod claim of the pod (which claim, on which node). The
        change tried is those pods leaving."""
        pod, nodes = cycle.pod, cycle.state.nodes
        claims = {f"{pod.namespace}/{v.claim_name}" for v in pod.volumes if not v.ephemeral}
        rwop = {c for c in claims if (pvc := cycle.state.pvcs.get(c)) is not None and RWOP in pvc.access_modes}
        users = sorted((key, node, c) for key, (node, used, _) in self.use.placed.items() for c in used if c in rwop)
        out: dict[int, list[fwk.Why]] = {}
        for s in slots.tolist():
            name, whys = nodes.names[s] or "", []
            clashes = [
                (key, a, b)
                for key, theirs in sorted(self.use.disks_on.get(name, {}).items())
                for b in theirs
                for a in pod.inline_disks
                if conflict(a, b)
            ]
            if clashes:
                text = "; ".join(f"{_disk(a)} clashes with {key}'s {_disk(b)}" for key, a, b in clashes)
                facts = {"disks": [{"disk": _disk(a), "pod": key, "theirs": _disk(b)} for key, a, b in clashes]}
                leave = tuple(dict.fromkeys(key for key, _, _ in clashes))
                whys.append(fwk.Why(DISK_CONFLICT, text, facts, fwk.Change(leave=leave)))
            elif users:
                text = "; ".join(f"claim {c} (ReadWriteOncePod) is in use by {key} on {node}" for key, node, c in users)
                facts = {"claims": [{"claim": c, "pod": key, "node": node} for key, node, c in users]}
                leave = tuple(dict.fromkeys(key for key, _, _ in users))
                whys.append(fwk.Why(RWOP_CONFLICT, text, facts, fwk.Change(leave=leave)))
            if whys:
                out[s] = whys
        return out

    def events_to_register(self) -> tuple[fwk.ClusterEventWithHint, ...]:
        # kube: assigned Pod Delete, Node Add, PVC Add|Update, with hints on the pod and the claim
        return (
            fwk.ClusterEventWithHint(fwk.ClusterEvent("Pod", fwk.Action.DELETE), self.pod_hint),
            fwk.ClusterEventWithHint(fwk.ClusterEvent("Node", fwk.Action.ADD)),
            fwk.ClusterEventWithHint(
                fwk.ClusterEvent("PersistentVolumeClaim", fwk.Action.ADD | fwk.Action.UPDATE),
                lambda state, obj, now: fwk.claim_hint(obj),
            ),
        )

    def pod_hint(self, state: ClusterState, obj: Any, now: Any) -> fwk.Hint:
        """kube: a pod left its node; retry a pod that shares an inline disk with it in a conflicting way,
        or one of its claims (ReadWriteOncePod)."""
        assert isinstance(obj, Pod)
        claims = {v.claim_name for v in obj.volumes}

        def helps(p: Pod) -> bool:
            if p.namespace == obj.namespace and any(v.claim_name in claims for v in p.volumes):
                return True
            return any(conflict(a, b) for a in p.inline_disks for b in obj.inline_disks)

        return lambda pods, version: fwk.each_pod(pods, helps)


def new(args: Any, handle: ClusterState) -> VolumeRestrictions:
    return VolumeRestrictions()
