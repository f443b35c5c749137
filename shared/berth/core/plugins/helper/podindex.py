"""The assigned pods InterPodAffinity and PodTopologySpread read, counted per node slot, never scanned per decision.

A `PodIndex` is a ClusterState extension (KeepsState), one per state for both plugins (`shared`). It keeps:

- per node name, the pods assigned there (bound or reserved, not finished);
- per *matcher* (namespaces and selectors ANDed: one workload's selector), a count of matching pods per
  node slot, built on first use and then updated as pods come, go and move and as nodes come and go;
- per distinct term of the existing pods (required anti-affinity, required and preferred affinity,
  preferred anti-affinity), how many pods carrying it sit on each slot: pods of one workload share a term.
  Kept sparse (slot -> pods), as a workload's pods sit on few of the nodes: a dense row per term took
  400 kB at 50,000 nodes, for every workload with affinity terms;
- the Namespace objects' labels (InterPodAffinity's namespaceSelector);
- the Services and controllers that give a pod its default spread constraints' selector (PodTopologySpread).

A decision reads the slot counts and folds them into topology domains (`domains`, one id per slot for a
label key, cached until node labels change) with numpy.
"""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np
import numpy.typing as npt

from berth.core.api.core.model import Namespace, Pod, PodAffinityTerm
from berth.core.api.meta.selectors import LabelSelector
from berth.core.cache.extension import StateExtension
from berth.core.cache.state import ClusterState
from berth.core.plugins.helper.spread import Owners

Ints = npt.NDArray[np.int64]
Sparse = dict[int, int]  # slot -> pods, no zeros kept
# Conditions ANDed: (namespaces, None for all, and a valid selector)
Matcher = tuple[tuple[frozenset[str] | None, LabelSelector], ...]
# An existing pod's term: (which list, the owner's namespace, the term)
Group = tuple[str, str, PodAffinityTerm]
# Where a matcher is looked up when a pod changes: (namespace, label key, value), None for any
Anchor = tuple[str | None, str | None, str | None]
GROUP_LISTS = ("required", "required_anti", "preferred", "preferred_anti")
_MAX_MATCHERS = 4096


def matches(m: Matcher, pod: Pod) -> bool:
    return all((nss is None or pod.namespace in nss) and sel.matches(pod.labels) for nss, sel in m)


def assigned(pod: Pod | None) -> bool:
    """An existing pod for both plugins: on a node and not finished."""
    return pod is not None and bool(pod.node_name) and not pod.terminated


class PodIndex(StateExtension):
    assigned_only = True

    def __init__(self, namespaces: bool = False, owners: bool = False) -> None:
        self.owners = Owners()
        self.kinds: tuple[type, ...] = ()
        self._widen(namespaces, owners)
        self.namespaces: dict[str, dict[str, str]] = {}
        self._on: dict[str, dict[str, Pod]] = {}
        self._assigned: dict[str, Pod] = {}
        self._labelled: dict[tuple[str, str, str], set[str]] = {}  # (namespace, key, value) -> assigned pods' keys
        self._in_ns: dict[str, set[str]] = {}
        self._counts: dict[tuple[Matcher, bool], Ints] = {}
        self._watch: dict[Anchor, set[tuple[Matcher, bool]]] = {}
        self._groups: dict[Group, Sparse] = {}
        self._group_at: dict[Anchor, dict[Group, None]] = {}  # (list, label key, value) -> its groups
        self._size = 0
        self._domains: dict[str, tuple[int, Ints, dict[str, int]]] = {}
        self._singles: dict[str, int] = {}  # per label key, the slots with it (as of its `_domains` entry)

    def _widen(self, namespaces: bool, owners: bool) -> None:
        want = ((Namespace,) if namespaces else ()) + (Owners.kinds if owners else ())
        self.kinds = (*self.kinds, *(k for k in want if k not in self.kinds))

    # ---- StateExtension ------------------------------------------------------------------------
    def apply(self, state: ClusterState, obj: Any, deleted: bool) -> None:
        if isinstance(obj, Namespace):
            if deleted:
                self.namespaces.pop(obj.name, None)
            else:
                self.namespaces[obj.name] = obj.labels
        elif isinstance(obj, Owners.kinds):
            self.owners.apply(obj, deleted)

    def pod_changed(self, state: ClusterState, old: Pod | None, new: Pod | None) -> None:
        self._fit(state)
        if (
            old is not None
            and new is not None
            and assigned(old)
            and assigned(new)
            and old.node_name == new.node_name
            and old.labels == new.labels
            and (old.deleting == new.deleting or not self._watch)
        ):
            self._replace(state, old, new)
            return
        if assigned(old):
            assert old is not None
            key = old.key
            on = self._on.get(old.node_name)
            if on is not None:
                on.pop(key, None)
            self._assigned.pop(key, None)
            in_ns = self._in_ns.get(old.namespace)
            if in_ns is not None:
                in_ns.discard(key)
            labelled, ns = self._labelled, old.namespace
            for k, v in old.labels.items():
                keys = labelled.get((ns, k, v))
                if keys is not None:
                    keys.discard(key)
            self._count(state, old, -1)
        if assigned(new):
            assert new is not None
            key = new.key
            self._on.setdefault(new.node_name, {})[key] = new
            self._assigned[key] = new
            self._in_ns.setdefault(new.namespace, set()).add(key)
            labelled, ns = self._labelled, new.namespace
            for k, v in new.labels.items():
                keys = labelled.get((ns, k, v))
                if keys is None:
                    keys = labelled[ns, k, v] = set()
                keys.add(key)
            self._count(state, new, 1)

    def _replace(self, state: ClusterState, old: Pod, new: Pod) -> None:
        """The pod updated on its node, its labels and liveness the same (a status update): the
        matchers count it as before, and so do its terms' groups if its terms are the same (a term
        taken off and put back could only move within its group's slots or among the groups, which
        are read as sums and unions); only the pod object is replaced."""
        key = new.key
        on = self._on.setdefault(new.node_name, {})
        on.pop(key, None)
        on[key] = new
        self._assigned.pop(key, None)
        self._assigned[key] = new
        s = state.nodes.slot.get(new.node_name)
        if s is not None and old.pod_affinity != new.pod_affinity:
            self._count_terms(old, s, -1)
            self._count_terms(new, s, 1)

    def node_changed(self, state: ClusterState, slot: int) -> None:
        self._fit(state)
        name = state.nodes.names[slot] if slot < len(state.nodes.names) else None
        pods = list(self._on.get(name, {}).values()) if name is not None else []
        for (m, live), arr in self._counts.items():
            arr[slot] = sum(1 for p in pods if (not live or not p.deleting) and matches(m, p))
        for held in self._groups.values():
            held.pop(slot, None)
        for p in pods:
            for g in self._terms_of(p):
                _add(self._group(g), slot, 1)

    # ---- reads --------------------------------------------------------------------------------
    def counts(self, state: ClusterState, m: Matcher, live_only: bool) -> Ints:
        """Pods matching m on each slot (live_only: not being deleted). Read-only."""
        self._fit(state)
        key = (m, live_only)
        arr = self._counts.get(key)
        if arr is None:
            if len(self._counts) >= _MAX_MATCHERS:
                self._counts.clear()
                self._watch.clear()
            arr = np.zeros(self._size, dtype=np.int64)
            slots = state.nodes.slot
            for pod_key in self._candidates(m):
                p = self._assigned[pod_key]
                s = slots.get(p.node_name)
                if s is not None and (not live_only or not p.deleting) and matches(m, p):
                    arr[s] += 1
            self._counts[key] = arr
            for anchor in _anchors(m):
                self._watch.setdefault(anchor, set()).add(key)
        return arr

    def matching(self, state: ClusterState, m: Matcher, live_only: bool) -> list[Pod]:
        """The assigned pods `counts` counts for m, by key (berth explain names them)."""
        self._fit(state)
        found = (self._assigned[k] for k in sorted(self._candidates(m)))
        slots = state.nodes.slot
        return [p for p in found if p.node_name in slots and (not live_only or not p.deleting) and matches(m, p)]

    def assigned_pods(self) -> list[Pod]:
        """Every assigned pod the index holds, by key."""
        return [self._assigned[k] for k in sorted(self._assigned)]

    def _candidates(self, m: Matcher) -> set[str]:
        """Keys of a superset of the assigned pods m matches, from its first condition's namespaces and a label."""
        nss, sel = m[0]
        spaces = list(self._in_ns) if nss is None else nss
        out: set[str] = set()
        for ns in spaces:
            if sel.match_labels:
                k, v = sel.match_labels[0]
                out |= self._labelled.get((ns, k, v), set())
            else:
                out |= self._in_ns.get(ns, set())
        return out

    def groups(self, which: str, labels: dict[str, str]) -> list[tuple[str, PodAffinityTerm, Sparse]]:
        """The existing pods' terms of one list that may match a pod with these labels (a superset:
        those whose selector's first matchLabels pair the labels hold, and those with no matchLabels):
        (owner namespace, term, pods carrying it per slot; read-only)."""
        found = [self._group_at.get((which, None, None), {})]
        found += [self._group_at.get((which, k, v), {}) for k, v in labels.items()]
        return [(g[1], g[2], self._groups[g]) for at in found for g in at]

    def domains(self, state: ClusterState, key: str) -> tuple[Ints, int]:
        """Per slot, the id of its value of label `key` (-1: no such label or no node), and how many values."""
        ids, values = self._values(state, key)
        return ids, len(values)

    def single(self, state: ClusterState, key: str) -> bool:
        """Whether every value of label `key` is on one node only (hostnames): then a slot's domain
        total is its own count."""
        values = self._values(state, key)[1]
        return len(values) == self._singles.get(key, -1)

    def domain_id(self, state: ClusterState, key: str, value: str) -> int | None:
        """The id `domains` gives nodes whose label `key` is `value`; None when no node has it."""
        return self._values(state, key)[1].get(value)

    def _values(self, state: ClusterState, key: str) -> tuple[Ints, dict[str, int]]:
        self._fit(state)
        nodes = state.nodes
        got = self._domains.get(key)
        if got is not None and got[0] == nodes.label_version and len(got[1]) == self._size:
            return got[1], got[2]
        ids = np.full(self._size, -1, dtype=np.int64)
        values: dict[str, int] = {}
        for s, name in enumerate(nodes.names):
            node = None if name is None else nodes.node(s)
            if node is not None and key in node.labels:
                ids[s] = values.setdefault(node.labels[key], len(values))
        self._domains[key] = (nodes.label_version, ids, values)
        self._singles[key] = int(np.count_nonzero(ids >= 0))  # slots with the key
        return ids, values

    # ---- upkeep -------------------------------------------------------------------------------
    def _fit(self, state: ClusterState) -> None:
        size = len(state.nodes.valid)
        if size == self._size:
            return
        for k, arr in self._counts.items():
            grown = np.zeros(size, dtype=np.int64)
            grown[: min(size, len(arr))] = arr[:size]
            self._counts[k] = grown
        if size < self._size:
            for held in self._groups.values():
                for s in [s for s in held if s >= size]:
                    del held[s]
        self._size = size

    def _count(self, state: ClusterState, pod: Pod, sign: int) -> None:
        s = state.nodes.slot.get(pod.node_name)
        if s is None:
            return  # counted when its node arrives (node_changed)
        seen: set[tuple[Matcher, bool]] = set()
        for ns in (pod.namespace, None) if self._watch else ():  # no matcher counted yet: none to update
            for anchor in ((ns, None, None), *((ns, k, v) for k, v in pod.labels.items())):
                for key in self._watch.get(anchor, ()):
                    m, live = key
                    if key in seen:
                        continue
                    seen.add(key)
                    if (not live or not pod.deleting) and matches(m, pod):
                        self._counts[key][s] += sign
        self._count_terms(pod, s, sign)

    def _count_terms(self, pod: Pod, s: int, sign: int) -> None:
        for g in self._terms_of(pod):
            held = self._group(g)
            _add(held, s, sign)
            if sign < 0 and not held:
                del self._groups[g]
                at = self._group_at[_group_anchor(g)]
                del at[g]
                if not at:
                    del self._group_at[_group_anchor(g)]

    def _group(self, g: Group) -> Sparse:
        held = self._groups.get(g)
        if held is None:
            held = self._groups[g] = {}
            self._group_at.setdefault(_group_anchor(g), {})[g] = None
        return held

    @staticmethod
    def _terms_of(pod: Pod) -> list[Group]:
        a = pod.pod_affinity
        if a is None:
            return []
        return [(w, pod.namespace, t) for w in GROUP_LISTS for t in getattr(a, w)]


_SHARED: weakref.WeakKeyDictionary[ClusterState, list[PodIndex]] = weakref.WeakKeyDictionary()


def shared(state: ClusterState, namespaces: bool = False, owners: bool = False) -> PodIndex:
    """The PodIndex the plugins made for this state share (InterPodAffinity's and PodTopologySpread's,
    of every profile), so that each pod event is indexed once. One not yet attached to the state takes
    on the kinds asked for; one attached already is shared only if it reads them (it would have missed
    the objects of a kind applied before), else a new index is made."""
    indexes = _SHARED.setdefault(state, [])
    for index in indexes:
        attached = any(e is index for e in state.extensions)
        if not attached:
            index._widen(namespaces, owners)
            return index
        if (not namespaces or Namespace in index.kinds) and (not owners or Owners.kinds[0] in index.kinds):
            return index
    index = PodIndex(namespaces, owners)
    indexes.append(index)
    return index


def _add(held: Sparse, slot: int, sign: int) -> None:
    c = held.get(slot, 0) + sign
    if c:
        held[slot] = c
    else:
        held.pop(slot, None)


def _group_anchor(g: Group) -> Anchor:
    """Where an existing pod's term is filed: its list and its selector's first matchLabels pair,
    which every pod it matches carries."""
    sel = g[2].selector
    k, v = sel.match_labels[0] if sel is not None and sel.match_labels else (None, None)
    return (g[0], k, v)


def _anchors(m: Matcher) -> list[Anchor]:
    """Where to find m when a pod changes: a pod it matches has one of these (namespace, label)."""
    nss, sel = m[0]
    k, v = sel.match_labels[0] if sel.match_labels else (None, None)
    return [(ns, k, v) for ns in (nss if nss is not None else (None,))]
