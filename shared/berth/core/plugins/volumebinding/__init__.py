"""VolumeBinding (seed 002) with capacity-priority scoring (seed 000), over all nodes at once.

Semantics follow kube-scheduler's plugin; see docs/volume-binding.md for where
berth is deliberately stricter (deterministic ties, real node names in matchFields).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from berth.core import framework as fwk
from berth.core.api.core.model import PersistentVolume, PersistentVolumeClaim, Pod
from berth.core.api.core.resources import show_bytes
from berth.core.api.meta.quantity import bytes_capped, ceil_units
from berth.core.api.meta.selectors import unmet
from berth.core.cache.pvindex import ClassIndex, available, mode_bits
from berth.core.cache.state import ClusterState
from berth.core.plugins.helper.shape_score import class_score, weighted_node_score
from berth.core.plugins.volumebinding.args import VolumeBindingArgs

NAME = "VolumeBinding"
Args = VolumeBindingArgs

Ints = npt.NDArray[np.int64]

NODE_CONFLICT = "node(s) didn't match PersistentVolume's node affinity"  # kube 1.36 (binder.go ErrReasonNodeConflict)
BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
NOT_ENOUGH_SPACE = "node(s) did not have enough free storage"
PV_NOT_EXIST = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"
PVS_SHOWN = 50  # berth explain: a claim's PVs listed per node, smallest first


@dataclass
class _Static:
    """One claim's static match on every node."""

    claim: PersistentVolumeClaim
    index: ClassIndex | None
    best: Ints  # entry in index per slot, or -1
    prebound: PersistentVolume | None = None
    prebound_ok: fwk.Mask | None = None

    def matched(self) -> fwk.Mask:
        return self.prebound_ok if self.prebound_ok is not None else self.best >= 0

    def pv_on(self, slot: int) -> PersistentVolume | None:
        if self.prebound is not None:
            return self.prebound if self.prebound_ok is not None and self.prebound_ok[slot] else None
        i = int(self.best[slot])
        return None if i < 0 or self.index is None else self.index.order[i]

    def capacity_bytes(self, slots: Ints) -> Ints:
        """The matched PV's capacity on each of `slots` (0 where none)."""
        if self.prebound is not None:
            return np.full(len(slots), bytes_capped(ceil_units(self.prebound.capacity)), dtype=np.int64)
        if self.index is None or not len(self.index.order):
            return np.zeros(len(slots), dtype=np.int64)
        best = self.best[slots]
        return np.where(best >= 0, self.index.cap_ceil[np.maximum(best, 0)], 0)


@dataclass
class _Provision:
    claim: PersistentVolumeClaim
    listed: fwk.Mask  # slots where the claim is in the provision list
    capacity: Ints  # NodeCapacity.capacity in bytes per slot, or -1 when none


@dataclass
class _PodVolumes:
    bound: list[PersistentVolumeClaim]
    delayed: list[PersistentVolumeClaim]
    static: list[_Static] = field(default_factory=list)
    provisions: list[_Provision] = field(default_factory=list)


def pod_claims(pod: Pod, state: ClusterState) -> tuple[list[PersistentVolumeClaim], fwk.Status]:
    """The pod's claims in volume order, or the PreFilter rejection kube would give."""
    claims: list[PersistentVolumeClaim] = []
    seen: set[str] = set()
    for vol in pod.volumes:
        key = f"{pod.namespace}/{vol.claim_name}"
        pvc = state.pvcs.get(key)
        if pvc is None:
            msg = (
                f'waiting for ephemeral volume controller to create the persistentvolumeclaim "{vol.claim_name}"'
                if vol.ephemeral
                else f'persistentvolumeclaim "{vol.claim_name}" not found'
            )
            return [], fwk.Status(fwk.Code.UNRESOLVABLE, msg)
        if pvc.phase == "Lost":
            msg = f'persistentvolumeclaim "{pvc.name}" bound to non-existent persistentvolume "{pvc.volume_name}"'
            return [], fwk.Status(fwk.Code.UNRESOLVABLE, msg)
        if pvc.deleting:
            return [], fwk.Status(fwk.Code.UNRESOLVABLE, f'persistentvolumeclaim "{pvc.name}" is being deleted')
        if vol.ephemeral and not any(o.controller and o.uid == pod.uid for o in pvc.owner_refs):
            msg = (
                f"PVC {pvc.namespace}/{pvc.name} was not created for pod {pod.namespace}/{pod.name} (pod is not owner)"
            )
            return [], fwk.Status(fwk.Code.UNRESOLVABLE, msg)
        if key not in seen:
            seen.add(key)
            claims.append(pvc)
    return claims, fwk.OK


# Changes that can make a pod this plugin rejected fit; a pod leaving its node releases the PVs
# berth reserved for it.
EVENTS = tuple(
    fwk.ClusterEventWithHint(fwk.ClusterEvent(kind, fwk.Action.DELETE if kind == "Pod" else fwk.Action.ALL))
    for kind in (
        "Node",
        "Pod",
        "PersistentVolume",
        "PersistentVolumeClaim",
        "StorageClass",
        "CSIDriver",
        "CSIStorageCapacity",
    )
)


def _unmatched(claim: PersistentVolumeClaim, here: list[PersistentVolume], in_class: int) -> fwk.Why:
    """An unbound claim no PV on the node matched: each PV of its class there, and why it does not do."""
    want = claim.request or 0
    rows, free = [], []
    for i, p in enumerate(sorted(here, key=lambda p: (p.capacity, p.name))):
        problem = _pv_problem(p, claim)
        if i < PVS_SHOWN:
            capacity = show_bytes(ceil_units(p.capacity))
            why = problem or "taken by another claim of this pod"
            rows.append({"pv": p.name, "capacity": capacity, "accessModes": list(p.access_modes), "problem": why})
        if problem == "too small" or problem is None:
            free.append(p)
    size = show_bytes(ceil_units(want))
    shown = ", ".join(f"{r['pv']} {r['capacity']} ({r['problem']})" for r in rows[:6])
    more = f" and {len(here) - 6} more" if len(here) > 6 else ""
    text = f"claim {claim.key} wants {size} of class {claim.storage_class or '<none>'}"
    text += (
        f": PVs of the class on the node: {shown}{more}"
        if rows
        else f": no PV of the class on the node ({in_class} in the class)"
    )
    facts = {
        "claim": claim.key,
        "request": size,
        "storageClass": claim.storage_class,
        "pvs": rows,
        "pvsOnNode": len(here),
    }
    change = None
    small = [p for p in free if p.capacity < want]
    if small:
        change = fwk.Change(resize=((small[-1].name, want),))
    return fwk.Why(BIND_CONFLICT, text, facts, change)


def _pv_problem(pv: PersistentVolume, claim: PersistentVolumeClaim) -> str | None:
    """Why a PV of the claim's class does not do for it (None: it would)."""
    if pv.claim_ref is not None and not pv.claim_ref.names(claim):
        return f"bound to {pv.claim_ref.namespace}/{pv.claim_ref.name}"
    if not available(pv):
        return f"phase {pv.phase or 'unknown'}" if not pv.deleting else "being deleted"
    need = mode_bits(claim.access_modes)
    if mode_bits(pv.access_modes) & need != need:
        return f"access modes {','.join(pv.access_modes)}"
    if pv.volume_mode != claim.volume_mode:
        return f"volumeMode {pv.volume_mode}"
    if pv.attributes_class != claim.attributes_class:
        return f"volumeAttributesClass {pv.attributes_class or '<none>'}"
    if claim.selector is not None and not (claim.selector.valid and claim.selector.matches(pv.labels)):
        return "labels do not match the claim's selector"
    if pv.capacity < (claim.request or 0):
        return "too small"
    return None


def new(args: Any, handle: ClusterState) -> VolumeBinding:
    return VolumeBinding(args if args is not None else VolumeBindingArgs())


class VolumeBinding:
    name = NAME
    ignores_pods = True  # its verdict never reads the pods on a node (framework.IgnoresPods)

    def __init__(self, args: VolumeBindingArgs) -> None:
        self.args = args
        self._weights = dict(self.args.storage_class_weights)
        self._fixed: dict[int, tuple[fwk.Mask, fwk.Mask, Ints]] = {}

    def _constants(self, n: int) -> tuple[fwk.Mask, fwk.Mask, Ints]:
        """Read-only (all true, all false, all -1) over n slots, made once per table size."""
        got = self._fixed.get(n)
        if got is None:
            got = (np.ones(n, dtype=bool), np.zeros(n, dtype=bool), np.full(n, -1, dtype=np.int64))
            for a in got:
                a.setflags(write=False)
            self._fixed = {n: got}
        return got

    def events_to_register(self) -> tuple[fwk.ClusterEventWithHint, ...]:
        return EVENTS

    # ---- PreFilter ---------------------------------------------------------
    def pre_filter(self, cycle: fwk.Cycle) -> fwk.Status:
        claims, status = pod_claims(cycle.pod, cycle.state)
        if status.rejects:
            return status
        if not claims:
            return fwk.SKIP
        bound: list[PersistentVolumeClaim] = []
        delayed: list[PersistentVolumeClaim] = []
        immediate: list[PersistentVolumeClaim] = []
        for pvc in claims:
            if pvc.bound:
                bound.append(pvc)
                continue
            sc = cycle.state.classes.get(pvc.storage_class) if pvc.storage_class else None
            if sc is not None and sc.binding_mode is None:
                return fwk.Status(fwk.Code.ERROR, f'VolumeBindingMode not set for StorageClass "{sc.name}"')
            wait = sc is not None and sc.binding_mode == "WaitForFirstConsumer"
            (delayed if wait and not pvc.volume_name else immediate).append(pvc)
        if immediate:
            return fwk.Status(fwk.Code.UNRESOLVABLE, UNBOUND_IMMEDIATE)
        cycle.data[self.name] = _PodVolumes(bound=bound, delayed=delayed)
        return fwk.OK

    # ---- Filter ------------------------------------------------------------
    def filter(self, cycle: fwk.Cycle) -> list[fwk.Failure]:
        pv: _PodVolumes = cycle.data[self.name]
        nodes = cycle.state.nodes
        valid = nodes.valid
        bound_fail, missing_pv = self._check_bound(cycle, pv.bound)
        unbound_ok = storage_ok = self._constants(len(valid))[0]
        if pv.delayed:
            checked = self._check_delayed(cycle, pv)
            if isinstance(checked, str):
                return [fwk.Failure(valid, checked, fwk.Code.ERROR)]
            unbound_ok, storage_ok = checked
        return [
            fwk.Failure(valid & bound_fail, NODE_CONFLICT, fwk.Code.UNRESOLVABLE),
            fwk.Failure(valid & ~unbound_ok, BIND_CONFLICT, fwk.Code.UNRESOLVABLE),
            fwk.Failure(valid & ~storage_ok, NOT_ENOUGH_SPACE, fwk.Code.UNRESOLVABLE),
            fwk.Failure(valid & missing_pv, PV_NOT_EXIST, fwk.Code.UNRESOLVABLE),
        ]

    def _check_bound(self, cycle: fwk.Cycle, claims: list[PersistentVolumeClaim]) -> tuple[fwk.Mask, fwk.Mask]:
        nodes = cycle.state.nodes
        if not claims:
            none = self._constants(len(nodes.valid))[1]
            return none, none
        conflict = np.zeros(len(nodes.valid), dtype=bool)
        missing = np.zeros(len(nodes.valid), dtype=bool)
        active = nodes.valid.copy()
        for claim in claims:
            pv = cycle.state.pvs.get(claim.volume_name)
            if pv is None:
                missing |= active
                break
            fits = nodes.selector_mask(pv.node_affinity)
            conflict |= active & ~fits
            active &= fits
        return conflict, missing

    def _check_delayed(self, cycle: fwk.Cycle, pv: _PodVolumes) -> tuple[fwk.Mask, fwk.Mask] | str:
        """(unbound claims match, storage fits) per slot, or the error that stops the cycle."""
        nodes, state = cycle.state.nodes, cycle.state
        n = len(nodes.valid)
        fast_fail = np.zeros(n, dtype=bool)
        selected = [c for c in pv.delayed if c.selected_node is not None]
        for c in selected:
            slot = nodes.slot.get(c.selected_node or "")
            elsewhere = np.ones(n, dtype=bool)
            if slot is not None:
                elsewhere[slot] = False
            fast_fail |= elsewhere
        to_match = sorted((c for c in pv.delayed if c.selected_node is None), key=lambda c: c.request or 0)
        chosen: dict[str, list[Ints]] = {}
        for claim in to_match:
            pv.static.append(self._match(state, claim, n, chosen))
        order = [(c, np.ones(n, dtype=bool)) for c in selected]
        order += [(s.claim, ~s.matched()) for s in pv.static]
        unbound_ok = np.ones(n, dtype=bool)
        storage_ok = np.ones(n, dtype=bool)
        decided = np.zeros(n, dtype=bool)
        for claim, listed in order:
            if not np.count_nonzero(listed):
                continue
            provision = self._provision(cycle, claim)
            if isinstance(provision, str):
                return provision
            no_topology, no_space, capacity = provision
            undecided = listed & ~decided
            pv.provisions.append(_Provision(claim, listed, capacity))
            if no_topology is self._constants(n)[0]:  # the class cannot provision: no node passes
                unbound_ok &= ~undecided
                decided |= undecided
                continue
            unbound_ok &= ~(undecided & no_topology)
            storage_ok &= ~(undecided & ~no_topology & no_space)
            decided |= undecided & (no_topology | no_space)
        if selected:
            unbound_ok &= ~fast_fail
            storage_ok |= fast_fail
        return unbound_ok, storage_ok

    def _match(
        self,
        state: ClusterState,
        claim: PersistentVolumeClaim,
        n: int,
        chosen: dict[str, list[Ints]],
    ) -> _Static:
        """FindMatchingVolume for one claim on every node."""
        for name in sorted(state.pvs_by_claim.get(claim.key, ())):
            p = state.pvs[name]
            if p.claim_ref is None or not p.claim_ref.names(claim) or p.storage_class != claim.storage_class:
                continue
            if (
                p.capacity >= (claim.request or 0)
                and p.volume_mode == claim.volume_mode
                and p.attributes_class == claim.attributes_class
                and not p.deleting
            ):
                fits = state.nodes.selector_mask(p.node_affinity) & state.nodes.valid
                return _Static(claim, None, np.full(n, -1, dtype=np.int64), prebound=p, prebound_ok=fits)
        index = state.class_index(claim.storage_class)
        earlier = chosen.setdefault(claim.storage_class, [])
        best = index.best(claim, n, earlier)
        earlier.append(best)
        return _Static(claim, index, best)

    def _provision(self, cycle: fwk.Cycle, claim: PersistentVolumeClaim) -> tuple[fwk.Mask, fwk.Mask, Ints] | str:
        """(topology or provisioner fails, capacity fails, NodeCapacity bytes or -1) per slot, or an
        error (kube's Error status)."""
        state, nodes = cycle.state, cycle.state.nodes
        n = len(nodes.valid)
        every, nowhere, none = self._constants(n)
        if not claim.storage_class:
            return f'no class for claim "{claim.key}"'
        sc = state.classes.get(claim.storage_class)
        if sc is None:
            return f'failed to find storage class "{claim.storage_class}"'
        if not sc.can_provision:
            return every, nowhere, none
        no_topology = ~nodes.topology_mask(sc.allowed_topologies)
        driver = state.drivers.get(sc.provisioner)
        if claim.request is None or driver is None or not driver.storage_capacity:
            return no_topology, nowhere, none
        index = state.cap_index.get(sc.name)
        if index is None:
            return no_topology, every, none
        first = index.first_fit(ceil_units(claim.request), nodes)
        caps = np.array(
            [bytes_capped(ceil_units(o.capacity)) if o.capacity is not None else -1 for o in index.order] or [0]
        )
        capacity = np.where(first >= 0, caps[np.maximum(first, 0)], -1)
        return no_topology, first < 0, capacity

    # ---- berth explain -------------------------------------------------------
    def explain_filter(self, cycle: fwk.Cycle, slots: fwk.Slots) -> dict[int, list[fwk.Why]]:
        """Per node: a bound claim's PV and its node affinity; an unbound claim no PV matched, with the
        PVs of its class on the node (size, access modes, who holds them) and the size that would bind
        the largest free one; a claim to provision that the class's topology or capacity turns away."""
        pv: _PodVolumes | None = cycle.data.get(self.name)
        state, nodes = cycle.state, cycle.state.nodes
        out: dict[int, list[fwk.Why]] = {}
        if pv is None:
            return out

        def add(s: int, why: fwk.Why) -> None:
            out.setdefault(s, []).append(why)

        for claim in pv.bound:
            bound = state.pvs.get(claim.volume_name)
            for s in slots.tolist():
                node = nodes.node(s)
                if node is None:
                    continue
                if bound is None:
                    add(
                        s,
                        fwk.Why(
                            PV_NOT_EXIST,
                            f"claim {claim.key} is bound to PV {claim.volume_name}, which does not exist",
                            {"claim": claim.key, "pv": claim.volume_name},
                        ),
                    )
                elif bound.node_affinity is not None and not bound.node_affinity.matches(node.labels, node.name):
                    failing = unmet(bound.node_affinity, node.labels, node.name)
                    text = f"claim {claim.key} is bound to PV {bound.name}, whose node affinity excludes the node: {'; '.join(failing)}"
                    add(
                        s, fwk.Why(NODE_CONFLICT, text, {"claim": claim.key, "pv": bound.name, "nodeAffinity": failing})
                    )
        for st in pv.static:
            claim, matched = st.claim, st.matched()
            sc = state.classes.get(claim.storage_class)
            if sc is not None and sc.can_provision:
                continue  # where no PV matched, the claim is provisioned: the loop below says why not
            klass = [v for v in state.pvs.values() if v.storage_class == claim.storage_class]
            anywhere = [v for v in klass if v.node_affinity is None]
            on: dict[int, list[PersistentVolume]] = {}
            for v in klass:  # each PV's node slots, once (a node's local PVs share one answer)
                if v.node_affinity is not None:
                    for s in nodes.selector_slots(v.node_affinity).tolist():
                        on.setdefault(s, []).append(v)
            for s in slots.tolist():
                if nodes.node(s) is not None and not matched[s]:
                    add(s, _unmatched(claim, [*on.get(s, []), *anywhere], len(klass)))
        for p in pv.provisions:
            sc = state.classes.get(p.claim.storage_class)
            if sc is None or not sc.can_provision:
                continue
            for s in slots.tolist():
                node = nodes.node(s)
                if node is None or not p.listed[s]:
                    continue
                if sc.allowed_topologies and not nodes.topology_mask(sc.allowed_topologies)[s]:
                    text = f"claim {p.claim.key}: StorageClass {sc.name}'s allowedTopologies exclude the node"
                    add(s, fwk.Why(BIND_CONFLICT, text, {"claim": p.claim.key, "storageClass": sc.name}))
                elif p.capacity[s] < 0 and state.cap_index.get(sc.name) is not None:
                    want = show_bytes(ceil_units(p.claim.request or 0))
                    text = f"claim {p.claim.key}: no CSIStorageCapacity of class {sc.name} for the node has {want}"
                    add(
                        s,
                        fwk.Why(
                            NOT_ENOUGH_SPACE, text, {"claim": p.claim.key, "storageClass": sc.name, "request": want}
                        ),
                    )
        return out

    # ---- Score -------------------------------------------------------------
    def score(self, cycle: fwk.Cycle, feasible: fwk.Mask) -> fwk.Scores:
        """Computed on the feasible slots only (compacted), then scattered back."""
        out = np.zeros(len(cycle.state.nodes.valid), dtype=np.int64)
        pv: _PodVolumes | None = cycle.data.get(self.name)
        if pv is None or (not pv.static and not pv.provisions):
            return out
        idx = np.flatnonzero(feasible)
        k = len(idx)
        if not k:
            return out

        def acc(group: dict[str, list[Ints]], cls: str) -> list[Ints]:
            return group.setdefault(cls, [np.zeros(k, np.int64), np.zeros(k, np.int64), np.zeros(k, bool)])

        has_static = np.zeros(k, dtype=bool)
        static: dict[str, list[Ints]] = {}
        for st in pv.static:
            m = st.matched()[idx]
            has_static |= m
            a = acc(static, st.claim.storage_class)
            a[0][m] += bytes_capped(ceil_units(st.claim.request or 0))
            a[1][m] += st.capacity_bytes(idx[m])
            a[2] |= m
        dynamic: dict[str, list[Ints]] = {}
        for p in pv.provisions:
            cap = p.capacity[idx]
            m = p.listed[idx] & (cap >= 0) & ~has_static
            a = acc(dynamic, p.claim.storage_class)
            a[0][m] += bytes_capped(ceil_units(p.claim.request or 0))
            a[1][m] = cap[m]
            a[2] |= m
        scores, weights, present = [], [], []
        for group in (static, dynamic):
            for cls, (req, cap, here) in sorted(group.items()):
                if not np.count_nonzero(here):  # on no node: it adds nothing to any mean (weights are at least 1)
                    continue
                scores.append(class_score(self.args.shape, req, cap))
                weights.append(self.weight(cycle.state, cls))
                present.append(here.astype(bool, copy=False))
        if scores:
            out[idx] = weighted_node_score(scores, weights, present)
        return out

    def weight(self, state: ClusterState, storage_class: str) -> int:
        if storage_class in self._weights:
            return self._weights[storage_class]
        sc = state.classes.get(storage_class)
        return sc.weight if sc is not None and sc.weight is not None else 1

    # ---- Reserve: kube's AssumePodVolumes --------------------------------------
    def reserve(self, cycle: fwk.Cycle, slot: int) -> fwk.Status:
        """The PVs chosen for the pod's claims on this node, and the claims to provision there."""
        pv: _PodVolumes | None = cycle.data.get(self.name)
        if pv is None:
            return fwk.OK
        for s in pv.static:
            chosen = s.pv_on(slot)
            if chosen is not None:
                cycle.bindings.append((s.claim.key, chosen.name))
        cycle.provisions.extend(p.claim.key for p in pv.provisions if p.listed[slot])
        return fwk.OK

    def unreserve(self, cycle: fwk.Cycle, slot: int) -> None:
        pv: _PodVolumes | None = cycle.data.get(self.name)
        if pv is None:
            return
        mine = {s.claim.key for s in pv.static} | {p.claim.key for p in pv.provisions}
        cycle.bindings[:] = [b for b in cycle.bindings if b[0] not in mine]
        cycle.provisions[:] = [c for c in cycle.provisions if c not in mine]
