"""InterPodAffinity: required and preferred pod affinity and anti-affinity, as kube's plugin.

PreFilter: a pod whose affinity terms do not parse is turned away on every node
(UnschedulableAndUnresolvable, `parsing pod: ...`, as kube's NewPodInfo says it).
Filter (kube's PreFilter + Filter), per node, the first failing check wins:
1. the pod's required affinity (UnschedulableAndUnresolvable),
2. the pod's required anti-affinity (Unschedulable),
3. existing pods' required anti-affinity against the pod (Unschedulable).
Score (PreScore + Score + NormalizeScore): preferred terms of the pod and of existing pods, existing
pods' required affinity with hardPodAffinityWeight, min/max scaled to 0..100.

Counts come from the PodIndex (per slot, per selector), folded into topology domains with numpy.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec
import numpy as np

from berth.core import framework as fwk
from berth.core.api.core.model import Node, Pod, PodAffinityTerm
from berth.core.api.meta.selectors import LabelSelector, selector_error, show_selector
from berth.core.api.meta.validation import Problems, is_int, unknown_fields
from berth.core.cache.state import ClusterState
from berth.core.plugins.helper.podindex import Ints, Matcher, PodIndex, Sparse, matches, shared

NAME = "InterPodAffinity"
REASON_AFFINITY = "node(s) didn't match pod affinity rules"
REASON_ANTI = "node(s) didn't match pod anti-affinity rules"
REASON_EXISTING_ANTI = "node(s) didn't satisfy existing pods anti-affinity rules"
_EXISTING = f"{NAME}/existing"  # cycle.data: PreFilter's nodes where an existing pod's anti-affinity matches


class Args(msgspec.Struct, frozen=True):
    """kube's InterPodAffinityArgs."""

    hard_pod_affinity_weight: int = 1
    ignore_preferred_terms_of_existing_pods: bool = False

    @classmethod
    def parse(cls, raw: Any, path: str, problems: Problems) -> Args:
        unknown_fields(
            raw, {"hardPodAffinityWeight", "ignorePreferredTermsOfExistingPods", "apiVersion", "kind"}, path, problems
        )
        weight = raw.get("hardPodAffinityWeight")
        if weight is None:
            weight = 1
        elif not is_int(weight):
            problems.append(f"{path}.hardPodAffinityWeight: Invalid value: {weight!r}: must be an integer")
            weight = 1
        elif not 0 <= weight <= 100:
            problems.append(f"{path}.hardPodAffinityWeight: Invalid value: {weight}: not in valid range [0, 100]")
        ignore = raw.get("ignorePreferredTermsOfExistingPods", False)
        if not isinstance(ignore, bool):
            problems.append(f"{path}.ignorePreferredTermsOfExistingPods: Invalid value: {ignore!r}: must be a boolean")
            ignore = False
        return cls(hard_pod_affinity_weight=weight, ignore_preferred_terms_of_existing_pods=ignore)


def _empty(sel: LabelSelector) -> bool:
    return not sel.match_labels and not sel.match_expressions


def _valid(sel: LabelSelector | None) -> LabelSelector | None:
    """A selector kube can parse; None (matches no pod) otherwise."""
    return sel if sel is not None and sel.valid else None


def existing_term_matches(term: PodAffinityTerm, owner_ns: str, pod: Pod, ns_labels: dict[str, str]) -> bool:
    """An existing pod's term against the incoming pod, with the incoming pod's namespace labels."""
    sel = _valid(term.selector)
    if sel is None:
        return False
    ns_sel = term.namespace_selector
    nss = term.namespaces or ((owner_ns,) if ns_sel is None else ())
    ns_ok = pod.namespace in nss
    if not ns_ok and ns_sel is not None:
        ns_ok = _empty(ns_sel) or (bool(ns_labels) and ns_sel.valid and ns_sel.matches(ns_labels))
    return ns_ok and sel.matches(pod.labels)


class InterPodAffinity:
    name = NAME
    reads_other_nodes = True  # its verdict on a node depends on pods elsewhere (framework.ReadsOtherNodes)

    def __init__(self, args: Args, index: PodIndex | None = None) -> None:
        self.args = args
        self.index = PodIndex(namespaces=True) if index is None else index

    def extension(self) -> PodIndex:
        return self.index

    def removal_safe(self, cycle: fwk.Cycle, leaving: Sequence[Pod] | None = None) -> bool:
        """Anti-affinity, the pod's and the existing pods', only eases as pods leave; a required
        affinity term may lose the pod it needs, unless none of the pods leaving matches the terms
        (then every count the filter reads stays as it is)."""
        a = cycle.pod.pod_affinity
        if a is None or not a.required:
            return True
        if leaving is None:
            return False
        key = f"{NAME}.together"  # the same for every node of the cycle (DefaultPreemption asks per node)
        if key not in cycle.data:
            cycle.data[key] = self._together(cycle.pod, a.required)
        together: Matcher | None = cycle.data[key]
        return together is None or not any(matches(together, p) for p in leaving)

    def _together(self, pod: Pod, required: Sequence[PodAffinityTerm]) -> Matcher | None:
        """The pod's required affinity terms as one matcher (kube: one pod must match them all);
        None when a term matches no pod."""
        matchers = [self._matcher(pod, t) for t in required]
        if any(m is None for m in matchers):
            return None
        return tuple(c for m in matchers if m is not None for c in m)

    # ---- the incoming pod's terms -------------------------------------------------------------
    def _matcher(self, pod: Pod, term: PodAffinityTerm) -> Matcher | None:
        """The term with its namespaceSelector unrolled into namespace names (kube's merge); None
        when it matches no pod."""
        sel = _valid(term.selector)
        if sel is None:
            return None
        ns_sel = term.namespace_selector
        if not term.namespaces and ns_sel is None:
            return ((frozenset((pod.namespace,)), sel),)
        if ns_sel is not None and _empty(ns_sel):
            return ((None, sel),)
        names = set(term.namespaces)
        if ns_sel is not None and ns_sel.valid:
            names |= {n for n, labels in self.index.namespaces.items() if ns_sel.matches(labels)}
        return ((frozenset(names), sel),)

    def _per_domain(self, state: ClusterState, key: str, slots: fwk.Slots, pods: Ints) -> _Totals:
        """From the pods on some slots (the others have none), each slot's domain total for label `key`."""
        ids, n = self.index.domains(state, key)
        d = ids[slots]
        inside = d >= 0
        if self.index.single(state, key):  # each domain one slot: its total is the slot's own
            return _Totals(ids, None, slots[inside], pods[inside])
        dom = np.bincount(d[inside], weights=pods[inside], minlength=n + 1).astype(np.int64)
        return _Totals(ids, dom)

    # ---- PreFilter and Filter ---------------------------------------------------------------
    def pre_filter(self, cycle: fwk.Cycle) -> fwk.Status:
        """kube's PreFilter turns a pod away when framework.NewPodInfo cannot parse its terms, and
        skips (its Filter, and the nominated pods' AddPod) a pod without required terms that no
        existing pod's required anti-affinity matches."""
        error = parse_error(cycle.pod)
        if error is not None:
            return fwk.Status(fwk.Code.UNRESOLVABLE, f"parsing pod: {error}", NAME)
        a = cycle.pod.pod_affinity
        existing = self._existing(cycle)
        cycle.data[_EXISTING] = existing
        if not np.count_nonzero(existing) and (a is None or not (a.required or a.required_anti)):
            return fwk.SKIP
        return fwk.OK

    def _existing(self, cycle: fwk.Cycle) -> fwk.Mask:
        """The nodes in a domain where an existing pod's required anti-affinity matches the pod."""
        pod, state = cycle.pod, cycle.state
        n = len(state.nodes.valid)
        ns_labels = self.index.namespaces.get(pod.namespace, {})
        existing = np.zeros(n, dtype=bool)
        for owner_ns, term, held in self.index.groups("required_anti", pod.labels):
            if held and existing_term_matches(term, owner_ns, pod, ns_labels):
                totals = self._per_domain(state, term.topology_key, *_sparse(held, n))
                if totals.found:
                    existing |= totals.positive()
        return existing

    def filter(self, cycle: fwk.Cycle) -> list[fwk.Failure]:
        pod, state = cycle.pod, cycle.state
        valid = state.nodes.valid
        n = len(valid)
        required = pod.pod_affinity.required if pod.pod_affinity else ()
        anti = pod.pod_affinity.required_anti if pod.pod_affinity else ()
        existing: fwk.Mask = cycle.data.pop(_EXISTING, None)  # PreFilter's, for this state
        if existing is None or len(existing) != n:
            existing = self._existing(cycle)
        if not np.count_nonzero(existing) and not required and not anti:
            return []  # kube's PreFilter Skip
        fail_aff = np.zeros(n, dtype=bool)
        if required:
            together = self._together(pod, required)
            per_slot = np.zeros(n, dtype=np.int64) if together is None else self.index.counts(state, together, False)
            slots = np.flatnonzero(per_slot[:n])
            pods = per_slot[slots]
            pods_exist = np.ones(n, dtype=bool)
            anywhere = False
            for t in required:
                totals = self._per_domain(state, t.topology_key, slots, pods)
                fail_aff |= totals.ids < 0
                pods_exist &= totals.positive()
                anywhere |= totals.found
            first_of_group = not anywhere and together is not None and matches(together, pod)
            if not first_of_group:
                fail_aff |= ~pods_exist
        fail_anti = np.zeros(n, dtype=bool)
        for t in anti:
            m = self._matcher(pod, t)
            if m is not None:
                per_slot = self.index.counts(state, m, False)[:n]
                slots = np.flatnonzero(per_slot)
                totals = self._per_domain(state, t.topology_key, slots, per_slot[slots])
                if totals.found:
                    fail_anti |= totals.positive()
        fail_aff &= valid
        fail_anti &= valid & ~fail_aff
        existing = existing & valid & ~fail_aff & ~fail_anti
        return [
            fwk.Failure(fail_aff, REASON_AFFINITY, fwk.Code.UNRESOLVABLE),
            fwk.Failure(fail_anti, REASON_ANTI, fwk.Code.UNSCHEDULABLE),
            fwk.Failure(existing, REASON_EXISTING_ANTI, fwk.Code.UNSCHEDULABLE),
        ]

    # ---- berth explain ------------------------------------------------------------------------
    def explain_filter(self, cycle: fwk.Cycle, slots: fwk.Slots) -> dict[int, list[fwk.Why]]:
        """Per node: the pod's required affinity term no pod in the node's domain matches, the pods in
        its domain that the pod's required anti-affinity matches, and the existing pods in its domain
        whose required anti-affinity matches the pod."""
        pod, state = cycle.pod, cycle.state
        a = pod.pod_affinity
        out: dict[int, list[fwk.Why]] = {}
        labels = [(s, _labels(state, s)) for s in slots.tolist()]
        if a is not None:
            for i, t in enumerate(a.required, 1):
                found = self._by_domain(state, pod, t)
                for s, lab in labels:
                    value = lab.get(t.topology_key)
                    if value is None or not found.get(value):
                        where = f"{t.topology_key}={value}" if value is not None else f"no label {t.topology_key}"
                        text = f"affinity term {i} ({_term(t)}): no matching pod in {where}"
                        facts = {
                            "term": i,
                            "topologyKey": t.topology_key,
                            "domain": value,
                            "selector": show_selector(t.selector),
                        }
                        out.setdefault(s, []).append(fwk.Why(REASON_AFFINITY, text, facts))
            for i, t in enumerate(a.required_anti, 1):
                found = self._by_domain(state, pod, t)
                for s, lab in labels:
                    value = lab.get(t.topology_key)
                    pods = found.get(value, []) if value is not None else []
                    if pods:
                        text = f"anti-affinity term {i} ({_term(t)}): {_pods(pods)} in {t.topology_key}={value}"
                        facts = {"term": i, "topologyKey": t.topology_key, "domain": value, "pods": pods}
                        out.setdefault(s, []).append(fwk.Why(REASON_ANTI, text, facts, fwk.Change(leave=tuple(pods))))
        ns_labels = self.index.namespaces.get(pod.namespace, {})
        for p in self.index.assigned_pods():
            terms = p.pod_affinity.required_anti if p.pod_affinity is not None else ()
            node = state.nodes.get(p.node_name)
            for t in terms:
                if node is None or not existing_term_matches(t, p.namespace, pod, ns_labels):
                    continue
                value = node.labels.get(t.topology_key)
                for s, lab in labels:
                    if value is not None and lab.get(t.topology_key) == value:
                        text = f"{p.key}'s anti-affinity ({_term(t)}) matches this pod in {t.topology_key}={value}"
                        facts = {"pod": p.key, "topologyKey": t.topology_key, "domain": value}
                        why = fwk.Why(REASON_EXISTING_ANTI, text, facts, fwk.Change(leave=(p.key,)))
                        out.setdefault(s, []).append(why)
        return out

    def _by_domain(self, state: ClusterState, pod: Pod, term: PodAffinityTerm) -> dict[str, list[str]]:
        """The pods (keys) a term of `pod` matches, by their node's value of the term's topologyKey."""
        m = self._matcher(pod, term)
        out: dict[str, list[str]] = {}
        for p in [] if m is None else self.index.matching(state, m, False):
            node = state.nodes.get(p.node_name)
            value = node.labels.get(term.topology_key) if node is not None else None
            if value is not None:
                out.setdefault(value, []).append(p.key)
        return out

    # ---- Score --------------------------------------------------------------------------------
    def pre_score(self, cycle: fwk.Cycle, feasible: fwk.Mask) -> fwk.Status:
        """kube's PreScore: Skip with no nodes, with ignorePreferredTermsOfExistingPods and a pod without
        preferred terms, and when no term matches a pod on a node carrying its topology key."""
        a = cycle.pod.pod_affinity
        has_constraints = a is not None and bool(a.preferred or a.preferred_anti)
        if not len(cycle.state.nodes) or (self.args.ignore_preferred_terms_of_existing_pods and not has_constraints):
            return fwk.SKIP
        raw = self._raw(cycle)
        if raw is None:
            return fwk.SKIP
        cycle.data[NAME] = raw
        return fwk.OK

    def score(self, cycle: fwk.Cycle, feasible: fwk.Mask) -> fwk.Scores:
        raw: fwk.Scores | None = cycle.data.get(NAME)
        if raw is None:
            raw = self._raw(cycle)
        return np.zeros(len(cycle.state.nodes.valid), dtype=np.int64) if raw is None else raw

    def _raw(self, cycle: fwk.Cycle) -> fwk.Scores | None:
        """Each slot's summed weights over its topology domains; None when no term matched anywhere."""
        pod, state = cycle.pod, cycle.state
        n = len(state.nodes.valid)
        raw = np.zeros(n, dtype=np.int64)
        produced = False

        def add(key: str, slots: fwk.Slots, pods: Ints, weight: int) -> None:
            nonlocal produced
            totals = self._per_domain(state, key, slots, pods)
            if totals.found:
                produced = True
                totals.add_to(raw, weight)

        a = pod.pod_affinity
        for terms, sign in ((a.preferred, 1), (a.preferred_anti, -1)) if a is not None else ():
            for t in terms:
                m = self._matcher(pod, t)
                if m is not None:
                    per_slot = self.index.counts(state, m, False)[:n]
                    slots = np.flatnonzero(per_slot)
                    add(t.topology_key, slots, per_slot[slots], sign * t.weight)
        ns_labels = self.index.namespaces.get(pod.namespace, {})
        hard = self.args.hard_pod_affinity_weight
        lists = [("preferred", 1), ("preferred_anti", -1)]
        if hard > 0:
            lists.append(("required", 0))
        for which, sign in lists:
            for owner_ns, term, held in self.index.groups(which, pod.labels):
                if held and existing_term_matches(term, owner_ns, pod, ns_labels):
                    add(term.topology_key, *_sparse(held, n), hard if sign == 0 else sign * term.weight)
        return raw if produced else None

    def normalize_score(self, cycle: fwk.Cycle, scores: fwk.Scores, feasible: fwk.Mask) -> None:
        if cycle.data.get(NAME) is None or not feasible.any():
            scores[:] = 0
            return
        lo, hi = int(scores[feasible].min()), int(scores[feasible].max())
        if hi <= lo:
            scores[:] = 0
            return
        scaled = 100.0 * ((scores - lo).astype(np.float64) / float(hi - lo))
        scores[:] = np.where(feasible, scaled.astype(np.int64), 0)

    # ---- requeueing ---------------------------------------------------------------------------
    def events_to_register(self) -> tuple[fwk.ClusterEventWithHint, ...]:
        # kube: Pod Add|UpdatePodLabel|Delete (assigned pods), Node Add|UpdateNodeLabel, with hints. berth
        # sees only the new pod of an update, so a label update has no hint (a retry too many, never too few).
        return (
            fwk.ClusterEventWithHint(fwk.ClusterEvent("Pod", fwk.Action.ADD), self.pod_added_hint),
            fwk.ClusterEventWithHint(fwk.ClusterEvent("Pod", fwk.Action.UPDATE_POD_LABEL)),
            fwk.ClusterEventWithHint(fwk.ClusterEvent("Pod", fwk.Action.DELETE), self.pod_deleted_hint),
            fwk.ClusterEventWithHint(fwk.ClusterEvent("Node", fwk.Action.ADD | fwk.Action.UPDATE), self.node_hint),
        )

    def _matches_all(self, pod: Pod, terms: tuple[PodAffinityTerm, ...], other: Pod) -> bool:
        """kube's podMatchesAllAffinityTerms: `other` matches every one of the pod's terms (none: False)."""
        if not terms:
            return False
        for t in terms:
            m = self._matcher(pod, t)
            if m is None or not matches(m, other):
                return False
        return True

    def pod_added_hint(self, state: ClusterState, obj: Any, now: Any) -> fwk.Hint:
        """kube: an assigned pod was added; retry a pod whose required affinity terms it all matches."""
        assert isinstance(obj, Pod)
        if not obj.node_name:
            return lambda pods, version: fwk.each_pod(pods, lambda p: False)
        return lambda pods, version: fwk.each_pod(
            pods, lambda p: p.pod_affinity is not None and self._matches_all(p, p.pod_affinity.required, obj)
        )

    def pod_deleted_hint(self, state: ClusterState, obj: Any, now: Any) -> fwk.Hint:
        """kube: an assigned pod left; retry a pod whose required anti-affinity terms it all matched. berth
        also retries a pod the leaving pod's own required anti-affinity matched (kube's filter rejects for it,
        and kube's hint leaves that pod to its periodic flush, which berth does not have)."""
        assert isinstance(obj, Pod)
        if not obj.node_name:
            return lambda pods, version: fwk.each_pod(pods, lambda p: False)
        anti = obj.pod_affinity.required_anti if obj.pod_affinity is not None else ()

        def helps(p: Pod) -> bool:
            mine = p.pod_affinity.required_anti if p.pod_affinity is not None else ()
            ns_labels = self.index.namespaces.get(p.namespace, {})
            return self._matches_all(p, mine, obj) or any(
                existing_term_matches(t, obj.namespace, p, ns_labels) for t in anti
            )

        return lambda pods, version: fwk.each_pod(pods, helps)

    def node_hint(self, state: ClusterState, obj: Any, now: Any) -> fwk.Hint:
        """kube: a node added or updated; retry a pod one of whose required affinity terms' topology keys the
        node carries, and a pod with required anti-affinity (kube retries it for any node added, and for a
        node whose anti-affinity key changed or went: berth sees only the new node, so any node)."""
        assert isinstance(obj, Node)
        labels = obj.labels

        def helps(p: Pod) -> bool:
            a = p.pod_affinity
            return a is not None and (bool(a.required_anti) or any(t.topology_key in labels for t in a.required))

        return lambda pods, version: fwk.each_pod(pods, helps)


_TERM_GROUPS = (
    ("required", "requiredAffinityTerms"),
    ("required_anti", "requiredAntiAffinityTerms"),
    ("preferred", "preferredAffinityTerms"),
    ("preferred_anti", "preferredAntiAffinityTerms"),
)


def parse_error(pod: Pod) -> str | None:
    """kube's PodInfo.Update error for the pod's affinity terms: per group, the first term whose label
    or namespace selector does not parse (GetAffinityTerms stops there), the groups aggregated."""
    affinity = pod.pod_affinity
    if affinity is None:
        return None
    errors = []
    for field, name in _TERM_GROUPS:
        for term in getattr(affinity, field):
            error = selector_error(term.selector) or selector_error(term.namespace_selector)
            if error is not None:
                errors.append(f"{name}: {error}")
                break
    if not errors:
        return None
    unique = list(dict.fromkeys(errors))
    return unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]"


def _labels(state: ClusterState, slot: int) -> dict[str, str]:
    node = state.nodes.node(slot)
    return node.labels if node is not None else {}


def _term(t: PodAffinityTerm) -> str:
    return f"topologyKey {t.topology_key}, selector {show_selector(t.selector)}"


def _pods(keys: list[str], most: int = 5) -> str:
    shown = ", ".join(keys[:most])
    return shown + (f" and {len(keys) - most} more" if len(keys) > most else "")


class _Totals:
    """Each slot's domain total for one label key, from the pods on some slots: per domain (dom, with a
    spare last domain of 0 that id -1 reads), or, when each domain is one slot, as those slots and
    their pods (no pass over every slot but the one that makes a mask)."""

    def __init__(self, ids: Ints, dom: Ints | None, slots: fwk.Slots | None = None, pods: Ints | None = None) -> None:
        self.ids = ids
        self.dom = dom
        self.slots = slots
        self.pods = pods
        self.found = bool(dom.any()) if dom is not None else pods is not None and bool(pods.any())

    def positive(self) -> fwk.Mask:
        """Slots whose domain total is above 0."""
        if self.dom is not None:
            out: fwk.Mask = (self.dom > 0)[self.ids]
            return out
        assert self.slots is not None and self.pods is not None
        out = np.zeros(len(self.ids), dtype=bool)
        out[self.slots[self.pods > 0]] = True
        return out

    def add_to(self, raw: fwk.Scores, weight: int) -> None:
        """raw += weight x each slot's domain total."""
        if self.dom is not None:
            self.dom *= weight
            raw += self.dom[self.ids]
            return
        assert self.slots is not None and self.pods is not None
        raw[self.slots] += weight * self.pods  # slots are distinct


def _sparse(held: Sparse, n: int) -> tuple[fwk.Slots, Ints]:
    """A term's pods per slot as (slots, pods) arrays, slots past n left out."""
    slots = np.fromiter(held, np.intp, len(held))
    pods = np.fromiter(held.values(), np.int64, len(held))
    if len(slots) and int(slots.max()) >= n:
        inside = slots < n
        return slots[inside], pods[inside]
    return slots, pods


def new(args: Args | None, handle: ClusterState) -> InterPodAffinity:
    return InterPodAffinity(args or Args(), shared(handle, namespaces=True))
