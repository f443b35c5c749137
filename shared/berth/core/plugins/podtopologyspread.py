"""PodTopologySpread: topologySpreadConstraints, as kube's plugin.

Filter (PreFilter + Filter): the pod's DoNotSchedule constraints; per node the first failing
constraint decides: a missing topology key (UnschedulableAndUnresolvable) or a skew above maxSkew
(Unschedulable). Score (PreScore + Score + NormalizeScore): the ScheduleAnyway constraints.
A pod without constraints gets the plugin's default constraints (args defaultingType: System's
hostname and zone pair, or the List), with the selector kube deduces from the Services and the
controller of the pod (berth.core.defaultselector); none when that selector is empty.

Matching pods per slot come from the PodIndex (per selector, in the pod's namespace, not being
deleted), folded into topology domains with numpy.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import msgspec
import numpy as np

from berth.core.framework import (
    OK,
    SKIP,
    Action,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    Cycle,
    Failure,
    Hint,
    Mask,
    Scores,
    Status,
    each_pod,
)
from berth.core.model import Node, Pod, SpreadConstraint
from berth.core.podindex import Ints, PodIndex
from berth.core.selectors import LabelSelector, valid_label_key
from berth.core.state import ClusterState
from berth.core.validation import Problems, is_int, unknown_fields

NAME = "PodTopologySpread"
REASON = "node(s) didn't match pod topology spread constraints"
REASON_MISSING = "node(s) didn't match pod topology spread constraints (missing required label)"
HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
DO_NOT_SCHEDULE, SCHEDULE_ANYWAY = "DoNotSchedule", "ScheduleAnyway"
# kube's systemDefaultConstraints, in its order
SYSTEM_DEFAULTS = (
    SpreadConstraint(max_skew=3, topology_key=HOSTNAME, when_unsatisfiable=SCHEDULE_ANYWAY),
    SpreadConstraint(max_skew=5, topology_key=ZONE, when_unsatisfiable=SCHEDULE_ANYWAY),
)


class Args(msgspec.Struct, frozen=True):
    """kube's PodTopologySpreadArgs: defaultingType System (kube's two soft constraints) or List."""

    defaulting_type: str = "System"
    default_constraints: tuple[SpreadConstraint, ...] = ()

    @classmethod
    def parse(cls, raw: Any, path: str, problems: Problems) -> Args:
        unknown_fields(raw, {"defaultingType", "defaultConstraints", "apiVersion", "kind"}, path, problems)
        kind = raw.get("defaultingType") or "System"
        if kind not in ("System", "List"):
            problems.append(f'{path}.defaultingType: Unsupported value: "{kind}": supported values: "System", "List"')
        items = raw.get("defaultConstraints") or []
        if not isinstance(items, list):
            problems.append(f"{path}.defaultConstraints: Invalid value: {items!r}: must be a list")
            items = []
        if kind == "System" and items:
            problems.append(f'{path}.defaultingType: Invalid value: "System": when .defaultConstraints are not empty')
        constraints = []
        seen: set[tuple[str, str]] = set()
        for i, c in enumerate(items):
            at = f"{path}.defaultConstraints[{i}]"
            got = _default_constraint(c, at, problems)
            if got is None:
                continue
            pair = (got.topology_key, got.when_unsatisfiable)
            if pair in seen:
                problems.append(f'{at}: Duplicate value: "{{{pair[0]}, {pair[1]}}}"')
            seen.add(pair)
            constraints.append(got)
        return cls(defaulting_type=kind, default_constraints=tuple(constraints))


def _default_constraint(c: Any, at: str, problems: Problems) -> SpreadConstraint | None:
    if not isinstance(c, Mapping):
        problems.append(f"{at}: Invalid value: {c!r}: must be an object")
        return None
    unknown_fields(
        c,
        {"maxSkew", "topologyKey", "whenUnsatisfiable", "labelSelector", "minDomains", "nodeAffinityPolicy",
         "nodeTaintsPolicy", "matchLabelKeys"},
        at,
        problems,
    )  # fmt: skip
    skew = c.get("maxSkew", 0)
    if not is_int(skew) or skew <= 0:
        problems.append(f"{at}.maxSkew: Invalid value: {skew}: not in valid range (0, inf)")
    key = c.get("topologyKey") or ""
    if not key:
        problems.append(f"{at}.topologyKey: Required value: can not be empty")
    elif not isinstance(key, str) or not valid_label_key(key):
        problems.append(f'{at}.topologyKey: Invalid value: "{key}": must be a qualified label name')
    mode = c.get("whenUnsatisfiable") or ""
    if not mode:
        problems.append(f"{at}.whenUnsatisfiable: Required value: can not be empty")
    elif mode not in (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY):
        problems.append(
            f'{at}.whenUnsatisfiable: Unsupported value: "{mode}": supported values: "DoNotSchedule", "ScheduleAnyway"'
        )
    if c.get("labelSelector") is not None:
        problems.append(
            f"{at}.labelSelector: Forbidden: constraint must not define a selector, as they deduced for each pod"
        )
    return SpreadConstraint(
        max_skew=skew if is_int(skew) else 0,
        topology_key=key if isinstance(key, str) else "",
        when_unsatisfiable=str(mode),
    )


class PodTopologySpread:
    name = NAME
    reads_other_nodes = True  # its verdict on a node depends on pods elsewhere (framework.ReadsOtherNodes)

    def __init__(self, args: Args) -> None:
        self.args = args
        self.system = args.defaulting_type == "System"
        self.defaults = SYSTEM_DEFAULTS if self.system else args.default_constraints
        self.index = PodIndex(owners=bool(self.defaults))

    def extension(self) -> PodIndex:
        return self.index

    def removal_safe(self, cycle: Cycle, leaving: Sequence[Pod] | None = None) -> bool:
        """Always: pods leaving a node lower only its own domains' counts (none if its policies leave
        it out), and the minimum by at most as much; the domains, and so minDomains, are the nodes'."""
        return True

    def constraints(self, pod: Pod, mode: str) -> list[tuple[SpreadConstraint, LabelSelector | None]]:
        """The pod's constraints of one mode with their selectors (matchLabelKeys merged); the
        default constraints when it has none."""
        if pod.spread:
            own = [c for c in pod.spread if c.when_unsatisfiable == mode]
            return [(c, _selector(c, pod)) for c in own]
        defaults = [c for c in self.defaults if c.when_unsatisfiable == mode]
        sel = self.index.owners.selector(pod) if defaults else None
        return [] if sel is None else [(c, sel) for c in defaults]

    def _eligible(
        self, cycle: Cycle, cs: list[tuple[SpreadConstraint, LabelSelector | None]], require_all: bool = True
    ) -> tuple[Mask, Any]:
        """Slots with every constraint's key, and per constraint the slots its inclusion policies admit
        (among those with every key, or among all nodes when not require_all)."""
        state, pod = cycle.state, cycle.pod
        nodes = state.nodes
        every = nodes.valid.copy()
        for c, _ in cs:
            every &= self.index.domains(state, c.topology_key)[0] >= 0
        base = every if require_all else nodes.valid
        affinity = nodes.valid.copy()
        if pod.node_selector:
            affinity &= nodes.match_labels_mask(pod.node_selector)
        if pod.affinity is not None:
            affinity &= nodes.selector_mask(pod.affinity)
        taints = _tolerated(cycle)
        policies = []
        for c, _ in cs:
            m = base.copy()
            if c.node_affinity_policy == "Honor":
                m &= affinity
            if c.node_taints_policy == "Honor":
                m &= taints
            policies.append(m)
        return every, policies

    def _per_slot(self, cycle: Cycle, sel: LabelSelector | None) -> Ints:
        n = len(cycle.state.nodes.valid)
        if sel is None or not sel.valid or (not sel.match_labels and not sel.match_expressions):
            return np.zeros(n, dtype=np.int64)  # nothing matches nil; kube counts 0 for an empty selector
        return self.index.counts(cycle.state, ((frozenset((cycle.pod.namespace,)), sel),), True)[:n]

    # ---- Filter -------------------------------------------------------------------------------
    def pre_filter(self, cycle: Cycle) -> Status:
        return OK if self.constraints(cycle.pod, DO_NOT_SCHEDULE) else SKIP

    def filter(self, cycle: Cycle) -> list[Failure]:
        cs = self.constraints(cycle.pod, DO_NOT_SCHEDULE)
        state, pod = cycle.state, cycle.pod
        valid = state.nodes.valid
        n = len(valid)
        _, policies = self._eligible(cycle, cs)
        decided = ~valid
        missing = np.zeros(n, dtype=bool)
        skewed = np.zeros(n, dtype=bool)
        for (c, sel), admitted in zip(cs, policies, strict=True):
            ids, nd = self.index.domains(state, c.topology_key)
            ids = ids[:n]
            has = ids >= 0
            per_slot = self._per_slot(cycle, sel)
            # one spare domain, so that slots without the key (id -1) can index safely
            dom = np.bincount(ids[admitted], weights=per_slot[admitted], minlength=nd + 1).astype(np.int64)
            exists = np.zeros(nd + 1, dtype=bool)
            exists[ids[admitted]] = True
            domains = int(exists.sum())
            min_match = 0 if domains == 0 or domains < c.min_domains else int(dom[exists].min())
            self_match = int(sel is not None and sel.valid and sel.matches(pod.labels))
            match_num = np.where(has, np.where(exists[np.maximum(ids, 0)], dom[np.maximum(ids, 0)], 0), 0)
            over = has & (match_num + self_match - min_match > c.max_skew)
            missing |= ~has & ~decided
            skewed |= over & ~decided
            decided = decided | ~has | over
        return [
            Failure(missing, REASON_MISSING, Code.UNRESOLVABLE),
            Failure(skewed, REASON, Code.UNSCHEDULABLE),
        ]

    # ---- Score --------------------------------------------------------------------------------
    def pre_score(self, cycle: Cycle, feasible: Mask) -> Status:
        return OK if self.constraints(cycle.pod, SCHEDULE_ANYWAY) and len(cycle.state.nodes) else SKIP

    def score(self, cycle: Cycle, feasible: Mask) -> Scores:
        # kube's requireAllTopologies: with the pod's own constraints or List defaulting, a candidate without
        # every key is ignored and only nodes with every key count. With System defaulting every node takes
        # part: one without a key adds nothing for that constraint, and counts in the domain of value "".
        cs = self.constraints(cycle.pod, SCHEDULE_ANYWAY)
        state = cycle.state
        n = len(state.nodes.valid)
        require_all = bool(cycle.pod.spread) or not self.system
        every, policies = self._eligible(cycle, cs, require_all)
        scored = feasible[:n] & (every if require_all else state.nodes.valid)
        raw = np.zeros(n, dtype=np.float64)
        for (c, sel), admitted in zip(cs, policies, strict=True):
            ids, nd = self.index.domains(state, c.topology_key)
            ids = ids[:n]
            has = ids >= 0
            per_slot = self._per_slot(cycle, sel)
            if c.topology_key == HOSTNAME:
                size = int(scored.sum())
                cnt = per_slot
            else:
                blank = self.index.domain_id(state, c.topology_key, "")
                ids = np.where(has, ids, nd if blank is None else blank)  # nd: a spare domain for no label
                registered = np.zeros(nd + 1, dtype=bool)
                registered[ids[scored]] = True
                size = int(registered.sum())
                dom = np.bincount(ids[admitted], weights=per_slot[admitted], minlength=nd + 1).astype(np.int64)
                cnt = np.where(registered[ids], dom[ids], 0)
            raw += np.where(has, cnt * math.log(size + 2) + (c.max_skew - 1), 0)
        out = np.where(scored, np.floor(raw + 0.5), 0).astype(np.int64)  # Go's math.Round; raw >= 0
        cycle.data[NAME] = scored
        return out

    def normalize_score(self, cycle: Cycle, scores: Scores, feasible: Mask) -> None:
        scored: Mask = cycle.data.get(NAME, np.zeros(len(scores), dtype=bool))
        if not scored.any():
            scores[:] = 0
            return
        lo, hi = int(scores[scored].min()), max(0, int(scores[scored].max()))
        if hi == 0:
            scores[:] = np.where(scored, 100, 0)
            return
        scores[:] = np.where(scored, 100 * (hi + lo - scores) // hi, 0)

    # ---- requeueing ---------------------------------------------------------------------------
    def events_to_register(self) -> tuple[ClusterEventWithHint, ...]:
        # kube: Pod Add|UpdatePodLabel|Delete, Node Add|Delete|UpdateNodeLabel|UpdateNodeTaint, with hints
        # over the pod's hard constraints. berth sees only the new object of an update: no hint there.
        return (
            ClusterEventWithHint(ClusterEvent("Pod", Action.ADD | Action.DELETE), self.pod_hint),
            ClusterEventWithHint(ClusterEvent("Pod", Action.UPDATE)),
            ClusterEventWithHint(ClusterEvent("Node", Action.ADD | Action.DELETE), self.node_hint),
            ClusterEventWithHint(ClusterEvent("Node", Action.UPDATE)),
        )

    def pod_hint(self, state: ClusterState, obj: Any, now: Any) -> Hint:
        """kube: an assigned pod of the pod's namespace added or deleted; retry when its labels match one of
        the pod's hard constraints' selectors."""
        assert isinstance(obj, Pod)

        def helps(p: Pod) -> bool:
            if not obj.node_name or obj.namespace != p.namespace:
                return False
            return any(sel is not None and sel.matches(obj.labels) for _, sel in self.constraints(p, DO_NOT_SCHEDULE))

        return lambda pods, version: each_pod(pods, helps)

    def node_hint(self, state: ClusterState, obj: Any, now: Any) -> Hint:
        """kube: a node added or deleted; retry when it carries every hard constraint's topology key."""
        assert isinstance(obj, Node)
        labels = obj.labels

        def helps(p: Pod) -> bool:
            cs = self.constraints(p, DO_NOT_SCHEDULE)
            return bool(cs) and all(c.topology_key in labels for c, _ in cs)

        return lambda pods, version: each_pod(pods, helps)


def _selector(c: SpreadConstraint, pod: Pod) -> LabelSelector | None:
    """The constraint's selector with matchLabelKeys merged (keys the pod carries)."""
    sel = c.selector
    if sel is None or not c.match_label_keys:
        return sel
    extra = {(k, pod.labels[k]) for k in c.match_label_keys if k in pod.labels}
    return LabelSelector(
        match_labels=tuple(sorted(set(sel.match_labels) | extra)), match_expressions=sel.match_expressions
    )


def _tolerated(cycle: Cycle) -> Mask:
    """Slots whose NoSchedule/NoExecute taints the pod tolerates."""
    nodes, pod = cycle.state.nodes, cycle.pod
    ok_sets = np.array(
        [all(any(t.tolerates(taint) for t in pod.tolerations) for taint in ts) for ts in nodes.taint_sets], dtype=bool
    )
    out: Mask = nodes.valid & ok_sets[nodes.taint_set]
    return out


def new(args: Args | None, handle: ClusterState) -> PodTopologySpread:
    return PodTopologySpread(args or Args())
