"""Cluster state: the objects, the node table, the PV and capacity indexes, PriorityClasses and
reservations.

Applying a change is idempotent: an object whose resourceVersion is not newer
than the stored one is ignored (so are late events for deleted objects). PVs and
PVCs follow kube's assume cache: a reservation overlays an assumed copy that
stays until the API server sends a newer version or the reservation is released.
"""

from __future__ import annotations

import sys
import weakref
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import msgspec

from berth.core.api.core.model import (
    ANN_BOUND_BY_CONTROLLER,
    ANN_SELECTED_NODE,
    ClaimRef,
    CSIDriver,
    CSIStorageCapacity,
    Node,
    PersistentVolume,
    PersistentVolumeClaim,
    Pod,
    StorageClass,
)
from berth.core.api.core.resources import PODS
from berth.core.api.scheduling.model import PriorityClass, preemption_policy_of, priority_of
from berth.core.cache.capindex import CapacityIndex
from berth.core.cache.extension import StateExtension
from berth.core.cache.nodes import NodeTable
from berth.core.cache.pvindex import ClassIndex, available


def newer(new: str, old: str) -> bool:
    """Whether resourceVersion `new` is after `old`: as numbers when both are ASCII digits (as every object
    berth decodes has: check_resource_version), compared digit by digit, never through int() (a string of
    thousands of digits is over Python's int-string limit); else, different is newer."""
    if not new or not old:
        return True
    if new.isascii() and new.isdigit() and old.isascii() and old.isdigit():  # kube's digits are ASCII
        if len(new) != len(old):  # leading zeros aside, the longer is the larger
            new, old = new.lstrip("0"), old.lstrip("0")
        return len(new) > len(old) if len(new) != len(old) else new > old
    return new != old


_COUNTED: dict[tuple[tuple[str, int], ...], dict[str, int]] = {}


def _counted(requests: dict[str, int]) -> dict[str, int]:
    """What a pod takes on its node (its requests and one pod), one dict shared by the pods that
    request the same (read only); a bounded cache."""
    key = tuple(requests.items())
    out = _COUNTED.get(key)
    if out is None:
        if len(_COUNTED) >= 65536:
            _COUNTED.clear()
        out = _COUNTED[key] = {**requests, PODS: 1}
    return out


@dataclass(frozen=True)
class Reservation:
    """What a Scheduled decision takes: the node's resources, chosen PVs, provisioned claims."""

    pod: Pod
    node: str
    bindings: tuple[tuple[str, str], ...] = ()  # (claim key, PV name)
    provisions: tuple[str, ...] = ()  # claim keys


@dataclass
class _Held:
    reservation: Reservation
    prior: Pod | None = None  # the pod as it was before (None: never applied, e.g. a fake pod)
    pvs: list[str] = field(default_factory=list)
    pvcs: list[str] = field(default_factory=list)


class ClusterState:
    def __init__(self, extensions: Iterable[StateExtension] = ()) -> None:
        self.nodes = NodeTable()
        self.pods: dict[str, Pod] = {}
        self.pvs: dict[str, PersistentVolume] = {}
        self.pvcs: dict[str, PersistentVolumeClaim] = {}
        self.classes: dict[str, StorageClass] = {}
        self.priority_classes: dict[str, PriorityClass] = {}
        self.priority_changes = 0  # PriorityClass changes applied: priority() may answer differently after one
        self.drivers: dict[str, CSIDriver] = {}
        self.capacities: dict[str, CSIStorageCapacity] = {}
        self.pv_index: dict[str, ClassIndex] = {}
        self.cap_index: dict[str, CapacityIndex] = {}
        self.pvs_by_claim: dict[str, set[str]] = {}
        self.extensions: list[StateExtension] = []
        # what node-local answers were computed from (berth.core.framework.runtime.incremental): every change of a slot's
        # node, of the pods counted on it or of an extension's row for it is a touch, numbered
        # 1, 2, ...; the journal keeps the slots of the latest touches; generation: every slot changed at once
        self.changes = 0
        self.generation = 0
        self._journal: list[int] = []
        self._journal_start = 0  # touches before the journal's first
        self._by_kind: dict[type, tuple[StateExtension, ...]] = {}  # the extensions of a model's type
        for ext in extensions:
            self._own(ext)
            self.extensions.append(ext)
        self._unassigned = self._told_of_unassigned()
        self._rv: dict[str, dict[str, str]] = {}  # class name -> key -> last resourceVersion
        self._how: dict[type, tuple[dict[str, str], bool, Any]] = {}  # see _how_to_apply
        self._informer_pvs: dict[str, PersistentVolume] = {}
        self._informer_pvcs: dict[str, PersistentVolumeClaim] = {}
        # claim (namespace/name) -> the PV a reservation assumed for it, until the API server binds it
        self._assumed_for: dict[str, str] = {}
        self._usage: dict[str, tuple[str, dict[str, int]]] = {}
        self._held: dict[str, _Held] = {}
        self._held_on: dict[str, set[str]] = {}  # node -> keys of the pods held there
        self._awake = True  # pods' requests counted on their nodes, touches journalled (see sleep)
        self._asleep: tuple[list[StateExtension], list[StateExtension], _Kept] | None = None  # see sleep
        # the core kinds by exact type (models are final); any other type goes to the extensions
        self._appliers: dict[type, Any] = {
            Pod: self._apply_pod,
            Node: self._apply_node,
            PersistentVolume: self._apply_pv,
            PersistentVolumeClaim: self._apply_pvc,
            StorageClass: self._apply_class,
            CSIDriver: self._apply_driver,
            CSIStorageCapacity: self._apply_capacity,
            PriorityClass: self._apply_priority_class,
        }

    def attach(self, ext: StateExtension) -> None:
        """Register an extension late: it sees the nodes and pods already here (not earlier objects of its kinds)."""
        if ext in self.extensions:
            return
        self._own(ext)
        self.extensions.append(ext)
        if self._asleep is not None:  # attached awake, and kept in its place on waking
            self._asleep[0].append(ext)
        self._by_kind.clear()
        self._unassigned = self._told_of_unassigned()
        for slot in self.nodes.slot.values():
            ext.node_changed(self, slot)
        for pod in self.pods.values():
            ext.pod_changed(self, None, pod)
        self.touch_all()

    def _told_of_unassigned(self) -> tuple[StateExtension, ...]:
        """The extensions told of changes to pods on no node (StateExtension.assigned_only)."""
        return tuple(e for e in self.extensions if not e.assigned_only)

    def _own(self, ext: StateExtension) -> None:
        """An extension keeps one cluster view's state: it may not serve two ClusterStates."""
        owner = ext._owner
        if owner is not None and owner() is not None and owner() is not self:
            raise ValueError(f"{type(ext).__name__} already belongs to another ClusterState; build the profile again")
        ext._owner = weakref.ref(self)

    def doze(self) -> None:
        """Extensions that can put off their work until read do so (a view that may never be read)."""
        for ext in self.extensions:
            ext.doze()

    def sleep(self, keep: Iterable[StateExtension] = ()) -> None:
        """For a view that may go unread for long (the buffer controller's, until a buffer exists),
        from its start: extensions that can doze do; the others, but those in keep, are detached and
        only the latest object of each of their kinds is kept; pods' requests are not counted on
        their nodes, and no touch is journalled (waking touches every slot). wake() then builds what
        was put off, as the changes would have left it."""
        if self._rv or self._asleep is not None:
            raise ValueError("a cluster view sleeps from its start")
        self.doze()
        every = self.extensions
        awake = [e for e in every if e.dozes or any(e is k for k in keep)]
        detached = [e for e in every if not any(e is a for a in awake)]
        kept = _Kept(tuple(dict.fromkeys(k for e in detached for k in e.kinds)))
        self._asleep = (every, detached, kept)
        self._awake = False
        self._set_extensions([*awake, kept])

    @property
    def asleep(self) -> bool:
        return self._asleep is not None

    def wake(self) -> None:
        """Build what sleep put off: pods' requests counted, the detached extensions attached again
        (in their places), given the kept objects of their kinds, then the nodes and pods."""
        if self._asleep is None:
            return
        every, detached, kept = self._asleep
        self._asleep = None
        self._awake = True
        self._set_extensions(every)
        for key, pod in self.pods.items():
            self._account(key, pod)
        for ext in detached:
            for obj in kept.objs.values():
                if isinstance(obj, ext.kinds):
                    ext.apply(self, obj, False)
            for slot in self.nodes.slot.values():
                ext.node_changed(self, slot)
            assigned_only = ext.assigned_only
            for pod in self.pods.values():
                if pod.node_name or not assigned_only:
                    ext.pod_changed(self, None, pod)
        self.touch_all()

    def _set_extensions(self, extensions: list[StateExtension]) -> None:
        self.extensions = extensions
        self._by_kind.clear()
        self._unassigned = self._told_of_unassigned()

    # ---- touches (incremental evaluation) ----------------------------------
    def touch(self, slot: int) -> None:
        """The answers of node-local plugins on this slot may have changed."""
        if not self._awake:
            return
        self._journal.append(slot)
        self.changes += 1
        if len(self._journal) > _JOURNAL:
            half = len(self._journal) // 2
            del self._journal[:half]
            self._journal_start += half

    def touch_node(self, name: str | None) -> None:
        slot = self.nodes.slot.get(name) if name else None
        if slot is not None:
            self.touch(slot)

    def touch_all(self) -> None:
        self.generation += 1

    def touched_since(self, change: int, most: int) -> list[int] | None:
        """The slots touched after touch number `change`, repeats included; None: no longer known, or
        more than `most` touches."""
        if change < self._journal_start or self.changes - change > most:
            return None
        return self._journal[change - self._journal_start :]

    def _pod_changed(self, old: Pod | None, new: Pod | None) -> None:
        was = "" if old is None else old.node_name
        now = "" if new is None else new.node_name
        if self._awake:
            if was:
                self.touch_node(was)
            if now and now != was:
                self.touch_node(now)
        for ext in self.extensions if was or now else self._unassigned:
            ext.pod_changed(self, old, new)

    # ---- applying changes --------------------------------------------------
    def reads(self, model: type) -> bool:
        """Whether objects of that model type change this state (a core kind, or an extension's)."""
        return model in self._appliers or any(issubclass(model, e.kinds) for e in self.extensions)

    def apply(self, obj: Any, deleted: bool = False) -> bool:
        """Apply one object change; returns False when it was stale and ignored."""
        cls = type(obj)
        how = self._how.get(cls)
        if how is None:
            how = self._how[cls] = self._how_to_apply(obj)
        seen, namespaced, apply = how
        key = obj.key if cls is Pod else sys.intern(f"{obj.namespace}/{obj.name}") if namespaced else obj.name
        rv = getattr(obj, "resource_version", "")
        last = seen.get(key)
        if last and rv and (rv == last or not newer(rv, last)):  # newer() takes either one empty as newer
            return False
        if rv:
            seen[key] = rv
        if apply is not None:
            apply(obj, deleted)
            return True
        extensions = self._by_kind.get(cls)
        if extensions is None:  # every extension of the kind sees it (workloads: two)
            extensions = self._by_kind[cls] = tuple(e for e in self.extensions if issubclass(cls, e.kinds))
        for ext in extensions:
            ext.apply(self, obj, deleted)
        return bool(extensions)

    def _how_to_apply(self, obj: Any) -> tuple[dict[str, str], bool, Any]:
        """For the object's type (models are final): the resourceVersions seen (by namespace/name,
        or name), whether it has a namespace, and its applier if it is a core kind (else None: the
        extensions of its kind)."""
        cls = type(obj)
        seen = self._rv.setdefault(cls.__name__, {})
        return seen, hasattr(obj, "namespace"), self._appliers.get(cls)

    @staticmethod
    def _put(store: dict[str, Any], key: str, obj: Any, deleted: bool) -> None:
        if deleted:
            store.pop(key, None)
        else:
            store[key] = obj

    def _apply_pv(self, pv: PersistentVolume, deleted: bool) -> None:
        if deleted:
            self._informer_pvs.pop(pv.name, None)
        else:
            self._informer_pvs[pv.name] = pv
        self._set_pv(pv.name, None if deleted else pv)
        if pv.claim_ref is not None and not deleted:
            self._bound_elsewhere(_ref_key(pv.claim_ref), pv.name)

    def _bound_elsewhere(self, claim: str, pv_name: str) -> None:
        """The API server says the claim is bound to this PV: a PV assumed for it by a reservation is
        the API server's again (another scheduler, or kube-scheduler through the extender, bound the
        claim elsewhere; without this the assumed PV would stay taken once the pod is confirmed)."""
        assumed = self._assumed_for.pop(claim, None)
        if assumed is None or assumed == pv_name:
            return
        current = self.pvs.get(assumed)
        if current is not None and current.claim_ref is not None and _ref_key(current.claim_ref) == claim:
            self._set_pv(assumed, self._informer_pvs.get(assumed))

    def _apply_pvc(self, pvc: PersistentVolumeClaim, deleted: bool) -> None:
        key = pvc.key
        if deleted:
            self._informer_pvcs.pop(key, None)
        else:
            self._informer_pvcs[key] = pvc
        self._set_pvc(key, None if deleted else pvc)

    def _apply_class(self, obj: StorageClass, deleted: bool) -> None:
        self._put(self.classes, obj.name, obj, deleted)

    def _apply_driver(self, obj: CSIDriver, deleted: bool) -> None:
        self._put(self.drivers, obj.name, obj, deleted)

    def _apply_priority_class(self, obj: PriorityClass, deleted: bool) -> None:
        self._put(self.priority_classes, obj.name, obj, deleted)
        self.priority_changes += 1

    def _apply_node(self, node: Node, deleted: bool) -> None:
        slot = self.nodes.remove(node.name) if deleted else self.nodes.upsert(node)
        if slot is None:
            return
        self.touch(slot)
        for ext in self.extensions:
            ext.node_changed(self, slot)

    def _apply_capacity(self, obj: CSIStorageCapacity, deleted: bool) -> None:
        old = self.capacities.get(obj.key)
        if old is not None:
            index = self.cap_index.get(old.storage_class)
            if index is not None:
                index.drop(old.key)
        self._put(self.capacities, obj.key, obj, deleted)
        if not deleted:
            self.cap_index.setdefault(obj.storage_class, CapacityIndex()).put(obj)

    def _set_pv(self, name: str, pv: PersistentVolume | None) -> None:
        old = self.pvs.pop(name, None)
        if old is not None:
            index = self.pv_index.get(old.storage_class)
            if index is not None:
                index.drop(name)
            if old.claim_ref is not None:
                self.pvs_by_claim.get(_ref_key(old.claim_ref), set()).discard(name)
        if pv is None:
            return
        self.pvs[name] = pv
        if available(pv):
            index = self.pv_index.get(pv.storage_class)
            if index is None:
                index = self.pv_index[pv.storage_class] = ClassIndex()
            index.put(pv)
        if pv.claim_ref is not None:
            self.pvs_by_claim.setdefault(_ref_key(pv.claim_ref), set()).add(name)

    def _set_pvc(self, key: str, pvc: PersistentVolumeClaim | None) -> None:
        if pvc is None:
            self.pvcs.pop(key, None)
        else:
            self.pvcs[key] = pvc

    def _apply_pod(self, pod: Pod, deleted: bool) -> None:
        key = pod.key
        held = self._held.get(key)
        if held is not None:
            if deleted or pod.terminated or (pod.node_name and pod.node_name != held.reservation.node):
                self.release(key)
            elif pod.node_name:
                self._unhold(key)  # confirmed: the API server agrees with the decision
            else:
                return  # still in flight: keep the assumed pod
        old = self.pods.get(key)
        if deleted and old is None:
            return  # a pod never seen (a log or watch that starts after it was added): nothing to forget
        new = None if deleted else pod
        self._put(self.pods, key, pod, deleted)
        self._account(key, new)
        self._pod_changed(old, new)

    def _account(self, key: str, pod: Pod | None) -> None:
        if not self._awake:
            return  # counted on waking
        prev = self._usage.pop(key, None)
        now = None
        if pod is not None and pod.node_name and not pod.terminated:
            now = (pod.node_name, _counted(pod.requests))
            if prev is not None and prev[1] is now[1] and prev[0] == now[0]:
                self._usage[key] = prev  # counted there already (a status update): off and on again nets zero
                return
        if prev is not None:
            self.nodes.add_usage(prev[0], prev[1], -1)
        if now is not None:
            self._usage[key] = now
            self.nodes.add_usage(*now)

    # ---- reservations (kube's Reserve / Unreserve) --------------------------
    def reserve(self, r: Reservation) -> None:
        """Take the node's resources and the chosen PVs for a decided pod."""
        held = _Held(r, prior=self.pods.get(r.pod.key))
        for claim_key, pv_name in r.bindings:
            pv, pvc = self.pvs.get(pv_name), self.pvcs.get(claim_key)
            if pv is None or pvc is None:
                continue
            ref = ClaimRef(namespace=pvc.namespace, name=pvc.name, uid=pvc.uid)
            if pv.claim_ref is None or not pv.claim_ref.names(pvc):
                annotations = {**pv.annotations, ANN_BOUND_BY_CONTROLLER: "yes"}
                self._set_pv(pv_name, msgspec.structs.replace(pv, claim_ref=ref, annotations=annotations))
                held.pvs.append(pv_name)
                self._assumed_for[claim_key] = pv_name
        for claim_key in r.provisions:
            pvc = self.pvcs.get(claim_key)
            if pvc is not None:
                annotations = {**pvc.annotations, ANN_SELECTED_NODE: r.node}
                self._set_pvc(claim_key, msgspec.structs.replace(pvc, annotations=annotations))
                held.pvcs.append(claim_key)
        assumed = msgspec.structs.replace(r.pod, node_name=r.node)
        old = self.pods.get(r.pod.key)
        self.pods[r.pod.key] = assumed
        self._account(r.pod.key, assumed)
        self._unhold(r.pod.key)  # a pod held twice keeps only its newest reservation
        self._held[r.pod.key] = held
        self._held_on.setdefault(r.node, set()).add(r.pod.key)
        self._pod_changed(old, assumed)

    def release(self, pod_key: str) -> None:
        """Undo a reservation: restore PVs and claims to the API server's versions."""
        held = self._unhold(pod_key)
        if held is None:
            return
        for name in held.pvs:
            self._set_pv(name, self._informer_pvs.get(name))
        for claim_key, pv_name in held.reservation.bindings:
            if self._assumed_for.get(claim_key) == pv_name:
                del self._assumed_for[claim_key]
        for key in held.pvcs:
            self._set_pvc(key, self._informer_pvcs.get(key))
        assumed = self.pods.get(pod_key)
        pod = held.prior
        self._put(self.pods, pod_key, pod, pod is None)
        self._account(pod_key, pod)
        self._pod_changed(assumed, pod)

    def reserved_on(self, node: str) -> dict[str, int]:
        """Requests of the pods reserved (decided, not yet bound) on a node, pods counted under 'pods'."""
        out: dict[str, int] = {}
        for key in self._held_on.get(node, ()):
            for k, v in {**self._held[key].reservation.pod.requests, PODS: 1}.items():
                out[k] = out.get(k, 0) + v
        return out

    def _unhold(self, pod_key: str) -> _Held | None:
        held = self._held.pop(pod_key, None)
        if held is not None:
            keys = self._held_on[held.reservation.node]
            keys.discard(pod_key)
            if not keys:
                del self._held_on[held.reservation.node]
        return held

    def reserved(self, pod_key: str) -> Reservation | None:
        held = self._held.get(pod_key)
        return None if held is None else held.reservation

    def held(self) -> list[Reservation]:
        """Every reservation held now, by pod key."""
        return [self._held[key].reservation for key in sorted(self._held)]

    # ---- trial removal (kube's RemovePod / AddPod on a snapshot copy) ------
    def lift(self, pod_key: str) -> Pod | None:
        """Take a pod off its node as if it were gone (preemption's dry run and its victims), whatever
        its resourceVersion; a reservation it has stays held. put_back undoes it."""
        pod = self.pods.pop(pod_key, None)
        if pod is None:
            return None
        self._account(pod_key, None)
        self._pod_changed(pod, None)
        return pod

    def usage_of(self, pod_key: str) -> tuple[str, Mapping[str, int]] | None:
        """The node a pod's requests are counted on and the amounts (lift takes exactly these off)."""
        return self._usage.get(pod_key)

    def counted(self, pod_keys: Collection[str]) -> set[str]:
        """Those of these pods whose requests are counted on a node (usage_of is not None)."""
        usage = self._usage
        if usage.keys().isdisjoint(pod_keys):  # walks the smaller
            return set()
        return {key for key in pod_keys if key in usage}

    def put_back(self, pod: Pod) -> None:
        """Undo lift."""
        self.pods[pod.key] = pod
        self._account(pod.key, pod)
        self._pod_changed(None, pod)

    # ---- trial changes (berth explain's what-ifs), each undone at once -----
    def trial_node(self, node: Node) -> Node | None:
        """Put node in place of the node of its name, whatever its resourceVersion; returns the node it
        replaced (trial_node of that one undoes it)."""
        old = self.nodes.get(node.name)
        self._apply_node(node, False)
        return old

    def trial_pv(self, pv: PersistentVolume) -> PersistentVolume | None:
        """Put pv in place of the PV of its name (the API server's copy kept); returns the PV it
        replaced (trial_pv of that one undoes it)."""
        old = self.pvs.get(pv.name)
        self._set_pv(pv.name, pv)
        return old

    # ---- reads -------------------------------------------------------------
    def class_index(self, storage_class: str) -> ClassIndex:
        idx = self.pv_index.get(storage_class)
        if idx is None:
            idx = self.pv_index[storage_class] = ClassIndex()
        idx.ensure(self.nodes)
        return idx

    def priority(self, pod: Pod) -> int:
        """The pod's priority as admission resolves it (berth.core.api.scheduling.model.priority_of)."""
        return priority_of(pod, self.priority_classes)

    def preemption_policy(self, pod: Pod) -> str:
        return preemption_policy_of(pod, self.priority_classes)

    def pending_pods(self) -> list[Pod]:
        """Pods waiting for a node, oldest first (ties by namespace/name)."""
        pods = [p for p in self.pods.values() if p.pending]
        return sorted(pods, key=lambda p: (p.creation.timestamp() if p.creation else _LAST, p.key))


class _Kept(StateExtension):
    """While a view sleeps, an extension in place of the detached ones: the latest object of each of
    their kinds, by type and namespace/name (a deleted one forgotten), in the order their stores
    would hold them."""

    assigned_only = True

    def __init__(self, kinds: tuple[type, ...]) -> None:
        self.kinds = kinds
        self.objs: dict[tuple[type, str, str], Any] = {}

    def apply(self, state: ClusterState, obj: Any, deleted: bool) -> None:
        key = (type(obj), getattr(obj, "namespace", ""), obj.name)
        if deleted:
            self.objs.pop(key, None)
        else:
            self.objs[key] = obj


_LAST = float("inf")
_JOURNAL = 1 << 20  # touches kept; an answer older than them is computed again in full


def _ref_key(ref: ClaimRef) -> str:
    return f"{ref.namespace}/{ref.name}"
