"""PodTopologySpread: topologySpreadConstraints, as kube's plugin.

Filter (PreFilter + Filter): the pod's DoNotSchedule constraints; per node the first failing
constraint decides: a missing topology key (UnschedulableAndUnresolvable) or a skew above maxSkew
(Unschedulable). Score (PreScore + Score + NormalizeScore): the ScheduleAnyway constraints.
A pod without constraints gets the plugin's default constraints (args defaultingType: System's
hostname and zone pair, or the List), with the selector kube deduces from the Services and the
controller of the pod (berth.core.plugins.helper.spread); none when that selector is empty.

Matching pods per slot come from the PodIndex (per selector, in the pod's namespace, not being
deleted), folded into topology domains with numpy.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

import msgspec
import numpy as np

from berth.core import framework as fwk
from berth.core.api.core.model import Node, Pod, SpreadConstraint
from berth.core.api.meta.selectors import LabelSelector, show_selector, valid_label_key
from berth.core.api.meta.validation import Problems, is_int, unknown_fields
from berth.core.cache.state import ClusterState
from berth.core.plugins.helper.podindex import Ints, PodIndex, shared

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

    def __init__(self, args: Args, index: PodIndex | None = None) -> None:
        self.args = args
        self.system = args.defaulting_type == "System"
        self.defaults = SYSTEM_DEFAULTS if self.system else args.default_constraints
        self.index = PodIndex(owners=bool(self.defaults)) if index is None else index
        self._shapes: dict[Hashable, _Eligible] = {}
        self._shapes_version: tuple[int, int] = (-1, -1)

    def extension(self) -> PodIndex:
        return self.index

    def removal_safe(self, cycle: fwk.Cycle, leaving: Sequence[Pod] | None = None) -> bool:
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

    def _constraints(self, cycle: fwk.Cycle, mode: str) -> list[tuple[SpreadConstraint, LabelSelector | None]]:
        """constraints() once per cycle and mode (PreFilter and Filter, PreScore and Score ask alike)."""
        key = f"{NAME}.{mode}"
        got: list[tuple[SpreadConstraint, LabelSelector | None]] | None = cycle.data.get(key)
        if got is None:
            got = cycle.data[key] = self.constraints(cycle.pod, mode)
        return got

    def _eligible(
        self, cycle: fwk.Cycle, cs: list[tuple[SpreadConstraint, LabelSelector | None]], require_all: bool = True
    ) -> _Eligible:
        """Slots with every constraint's key, and per constraint the slots its inclusion policies admit
        (among those with every key, or among all nodes when not require_all), with each constraint's
        domains. Kept per shape (the constraints' keys and policies, and the pod's node affinity where a
        policy honours it) until node labels change; computed each time when a policy honours taints
        (taints are not versioned)."""
        state, pod = cycle.state, cycle.pod
        nodes = state.nodes
        honor_affinity = any(c.node_affinity_policy == "Honor" for c, _ in cs)
        honor_taints = any(c.node_taints_policy == "Honor" for c, _ in cs)
        key: Hashable = None
        if not honor_taints:
            affinity = (tuple(sorted(pod.node_selector.items())), pod.affinity) if honor_affinity else None
            policies = tuple((c.topology_key, c.node_affinity_policy, c.node_taints_policy) for c, _ in cs)
            key = (require_all, policies, affinity)
            version = (nodes.label_version, len(nodes.valid))
            if self._shapes_version != version or len(self._shapes) >= _SHAPES:
                self._shapes.clear()
                self._shapes_version = version
            got = self._shapes.get(key)
            if got is not None:
                return got
        every = nodes.valid.copy()
        for c, _ in cs:
            every &= self.index.domains(state, c.topology_key)[0] >= 0
        base = every if require_all else nodes.valid
        allowed = nodes.valid
        if honor_affinity:
            allowed = nodes.valid.copy()
            if pod.node_selector:
                allowed &= nodes.match_labels_mask(pod.node_selector)
            if pod.affinity is not None:
                allowed &= nodes.selector_mask(pod.affinity)
        taints = _tolerated(cycle) if honor_taints else nodes.valid
        doms = []
        for c, _ in cs:
            m = base.copy()
            if c.node_affinity_policy == "Honor":
                m &= allowed
            if c.node_taints_policy == "Honor":
                m &= taints
            ids, nd = self.index.domains(state, c.topology_key)
            blank = None if c.topology_key == HOSTNAME else self.index.domain_id(state, c.topology_key, "")
            doms.append(_Domains(m, ids[: len(nodes.valid)], nd, nodes.valid, blank))
        out = _Eligible(every, doms)
        if key is not None:
            self._shapes[key] = out
        return out

    def _per_slot(self, cycle: fwk.Cycle, sel: LabelSelector | None) -> Ints:
        """Matching pods per slot (read-only), once per cycle and selector (default constraints share one)."""
        memo: dict[int, tuple[LabelSelector | None, Ints]] = cycle.data.setdefault(f"{NAME}.per_slot", {})
        got = memo.get(id(sel))
        if got is not None and got[0] is sel:
            return got[1]
        out = self._count(cycle, sel)
        memo[id(sel)] = (sel, out)
        return out

    def _count(self, cycle: fwk.Cycle, sel: LabelSelector | None) -> Ints:
        n = len(cycle.state.nodes.valid)
        if sel is None or not sel.valid or (not sel.match_labels and not sel.match_expressions):
            return np.zeros(n, dtype=np.int64)  # nothing matches nil; kube counts 0 for an empty selector
        return self.index.counts(cycle.state, ((frozenset((cycle.pod.namespace,)), sel),), True)[:n]

    # ---- Filter -------------------------------------------------------------------------------
    def pre_filter(self, cycle: fwk.Cycle) -> fwk.Status:
        return fwk.OK if self._constraints(cycle, DO_NOT_SCHEDULE) else fwk.SKIP

    def filter(self, cycle: fwk.Cycle) -> list[fwk.Failure]:
        """Per constraint, each domain's matching pods among admitted slots (one bincount), the skew
        decided per domain and gathered to the slots (a slot without the key indexes a spare domain)."""
        cs = self._constraints(cycle, DO_NOT_SCHEDULE)
        state, pod = cycle.state, cycle.pod
        valid = state.nodes.valid
        n = len(valid)
        shape = self._eligible(cycle, cs)
        undecided = valid.copy()
        missing = np.zeros(n, dtype=bool)
        skewed = np.zeros(n, dtype=bool)
        for (c, sel), d in zip(cs, shape.domains, strict=True):
            per_slot = self._per_slot(cycle, sel)
            self_match = int(sel is not None and sel.valid and sel.matches(pod.labels))
            domains = d.count
            if d.single:  # each domain one slot (hostname): a slot's count is its domain's
                min_match = 0
                if domains and domains >= c.min_domains:
                    min_match = int(np.where(d.admitted, per_slot, _MOST).min())
                if self_match - min_match <= c.max_skew:  # else a slot not admitted (count 0) is over too
                    over = d.admitted & (per_slot > c.max_skew + min_match - self_match)
                else:
                    over = self._over(d, per_slot, self_match, min_match, c.max_skew)
            else:
                dom = d.sums(per_slot)
                min_match = 0
                if domains and domains >= c.min_domains:
                    min_match = int(np.where(d.exists, dom, _MOST).min())
                over = self._over(d, per_slot, self_match, min_match, c.max_skew, dom)
            missing |= d.missing & undecided
            skewed |= over & undecided
            undecided &= d.has
            undecided &= ~over
        return [
            fwk.Failure(missing, REASON_MISSING, fwk.Code.UNRESOLVABLE),
            fwk.Failure(skewed, REASON, fwk.Code.UNSCHEDULABLE),
        ]

    def explain_filter(self, cycle: fwk.Cycle, slots: fwk.Slots) -> dict[int, list[fwk.Why]]:
        """Per DoNotSchedule constraint the node fails: its missing key, or its domain's matching pods
        against the fewest in any domain its policies admit (the counts the Filter compared)."""
        cs = self._constraints(cycle, DO_NOT_SCHEDULE)
        state, pod = cycle.state, cycle.pod
        nodes = state.nodes
        shape = self._eligible(cycle, cs)
        out: dict[int, list[fwk.Why]] = {}
        for i, ((c, sel), d) in enumerate(zip(cs, shape.domains, strict=True), 1):
            key = c.topology_key
            per_slot = self._per_slot(cycle, sel)
            counts: dict[str, int] = {}
            for s in np.flatnonzero(d.admitted).tolist():
                node = nodes.node(s)
                value = node.labels.get(key) if node is not None else None
                if value is not None:
                    counts[value] = counts.get(value, 0) + int(per_slot[s])
            self_match = int(sel is not None and sel.valid and sel.matches(pod.labels))
            fewest = min(counts.values()) if counts and len(counts) >= c.min_domains else 0
            what = f"constraint {i} (topologyKey {key}, maxSkew {c.max_skew}, selector {show_selector(sel)})"
            m = ((frozenset((pod.namespace,)), sel),) if sel is not None and sel.valid else None
            for s in slots.tolist():
                node = nodes.node(s)
                value = node.labels.get(key) if node is not None else None
                if value is None:
                    text = f"{what}: the node has no label {key}"
                    out.setdefault(s, []).append(fwk.Why(REASON_MISSING, text, {"constraint": i, "topologyKey": key}))
                    continue
                here = counts.get(value, 0)
                skew = here + self_match - fewest
                if skew <= c.max_skew:
                    continue
                low = sorted(v for v, n in counts.items() if n == fewest)
                text = (
                    f"{what}: {key}={value} has {here} matching pod(s), the fewest is {fewest} "
                    f"({', '.join(low[:3])}{' …' if len(low) > 3 else ''}): skew {skew} > {c.max_skew}"
                )
                facts = {"constraint": i, "topologyKey": key, "maxSkew": c.max_skew, "domain": value,
                         "skew": skew, "counts": dict(sorted(counts.items()))}  # fmt: skip
                change = None
                if m is not None:
                    inside = [p for p in self.index.matching(state, m, True) if _label(state, p, key) == value]
                    inside.sort(key=lambda p: (p.node_name != (node.name if node else ""), p.key))
                    change = fwk.Change(leave=tuple(p.key for p in inside[: skew - c.max_skew]))
                    facts["pods"] = [p.key for p in inside]
                out.setdefault(s, []).append(fwk.Why(REASON, text, facts, change))
        return out

    @staticmethod
    def _over(
        d: _Domains, per_slot: Ints, self_match: int, min_match: int, skew: int, dom: Ints | None = None
    ) -> fwk.Mask:
        """Slots with the key whose domain's matching pods (0 for a domain with no admitted slot), with
        the pod itself, exceed the minimum by more than maxSkew."""
        if dom is None:
            dom = d.sums(per_slot)
        over_dom: fwk.Mask = np.where(d.exists, dom, 0) + self_match - min_match > skew
        over_dom[d.nd] = False  # the spare domain: slots without the key
        if not np.count_nonzero(over_dom):
            return np.zeros(len(d.ids), dtype=bool)
        out: fwk.Mask = over_dom[d.ids]
        return out

    # ---- Score --------------------------------------------------------------------------------
    def pre_score(self, cycle: fwk.Cycle, feasible: fwk.Mask) -> fwk.Status:
        return fwk.OK if self._constraints(cycle, SCHEDULE_ANYWAY) and len(cycle.state.nodes) else fwk.SKIP

    def score(self, cycle: fwk.Cycle, feasible: fwk.Mask) -> fwk.Scores:
        # kube's requireAllTopologies: with the pod's own constraints or List defaulting, a candidate without
        # every key is ignored and only nodes with every key count. With System defaulting every node takes
        # part: one without a key adds nothing for that constraint, and counts in the domain of value "".
        cs = self._constraints(cycle, SCHEDULE_ANYWAY)
        state = cycle.state
        n = len(state.nodes.valid)
        require_all = bool(cycle.pod.spread) or not self.system
        shape = self._eligible(cycle, cs, require_all)
        scored = feasible[:n] & (shape.every if require_all else state.nodes.valid)
        raw = np.zeros(n, dtype=np.float64)
        for (c, sel), d in zip(cs, shape.domains, strict=True):
            per_slot = self._per_slot(cycle, sel)
            if c.topology_key == HOSTNAME:
                size = int(np.count_nonzero(scored))
                part = per_slot * math.log(size + 2)
                part += c.max_skew - 1
                raw += np.where(d.has, part, 0)
            else:
                # per domain (slots without the key in the domain of value "" if any, else a spare one,
                # nd; nd + 1 gathers 0 for them): pods among admitted slots, if a scored slot is there
                ids = d.score_ids
                registered = np.zeros(d.nd + 2, dtype=bool)
                registered[ids[scored]] = True
                size = int(np.count_nonzero(registered))
                dom = np.bincount(d.score_bins, weights=per_slot, minlength=d.nd + 2)
                value = np.where(registered, dom, 0.0) * math.log(size + 2) + (c.max_skew - 1)
                value[d.nd + 1] = 0.0
                raw += value[d.score_gather]
        raw += 0.5  # Go's math.Round (raw >= 0): floor(raw + 0.5), in place
        np.floor(raw, out=raw)
        raw *= scored  # 0 where not scored (raw is finite and not negative)
        out = raw.astype(np.int64)
        cycle.data[NAME] = scored
        return out

    def normalize_score(self, cycle: fwk.Cycle, scores: fwk.Scores, feasible: fwk.Mask) -> None:
        scored: fwk.Mask | None = cycle.data.get(NAME)
        if scored is None or not np.count_nonzero(scored):
            scores[:] = 0
            return
        mine = scores[scored]
        lo, hi = int(mine.min()), max(0, int(mine.max()))
        if hi == 0:
            scores[:] = np.where(scored, 100, 0)
            return
        scores[:] = np.where(scored, 100 * (hi + lo - scores) // hi, 0)

    # ---- requeueing ---------------------------------------------------------------------------
    def events_to_register(self) -> tuple[fwk.ClusterEventWithHint, ...]:
        # kube: Pod Add|UpdatePodLabel|Delete, Node Add|Delete|UpdateNodeLabel|UpdateNodeTaint, with hints
        # over the pod's hard constraints. berth sees only the new object of an update: no hint there.
        return (
            fwk.ClusterEventWithHint(fwk.ClusterEvent("Pod", fwk.Action.ADD | fwk.Action.DELETE), self.pod_hint),
            fwk.ClusterEventWithHint(fwk.ClusterEvent("Pod", fwk.Action.UPDATE_POD_LABEL)),
            fwk.ClusterEventWithHint(fwk.ClusterEvent("Node", fwk.Action.ADD | fwk.Action.DELETE), self.node_hint),
            fwk.ClusterEventWithHint(fwk.ClusterEvent("Node", fwk.Action.UPDATE)),
        )

    def pod_hint(self, state: ClusterState, obj: Any, now: Any) -> fwk.Hint:
        """kube: an assigned pod of the pod's namespace added or deleted; retry when its labels match one of
        the pod's hard constraints' selectors."""
        assert isinstance(obj, Pod)

        def helps(p: Pod) -> bool:
            if not obj.node_name or obj.namespace != p.namespace:
                return False
            return any(sel is not None and sel.matches(obj.labels) for _, sel in self.constraints(p, DO_NOT_SCHEDULE))

        return lambda pods, version: fwk.each_pod(pods, helps)

    def node_hint(self, state: ClusterState, obj: Any, now: Any) -> fwk.Hint:
        """kube: a node added or deleted; retry when it carries every hard constraint's topology key."""
        assert isinstance(obj, Node)
        labels = obj.labels

        def helps(p: Pod) -> bool:
            cs = self.constraints(p, DO_NOT_SCHEDULE)
            return bool(cs) and all(c.topology_key in labels for c, _ in cs)

        return lambda pods, version: fwk.each_pod(pods, helps)


def _selector(c: SpreadConstraint, pod: Pod) -> LabelSelector | None:
    """The constraint's selector with matchLabelKeys merged (keys the pod carries)."""
    sel = c.selector
    if sel is None or not c.match_label_keys:
        return sel
    extra = {(k, pod.labels[k]) for k in c.match_label_keys if k in pod.labels}
    return LabelSelector(
        match_labels=tuple(sorted(set(sel.match_labels) | extra)), match_expressions=sel.match_expressions
    )


def _tolerated(cycle: fwk.Cycle) -> fwk.Mask:
    """Slots whose NoSchedule/NoExecute taints the pod tolerates."""
    nodes, pod = cycle.state.nodes, cycle.pod
    ok_sets = np.array(
        [all(any(t.tolerates(taint) for t in pod.tolerations) for taint in ts) for ts in nodes.taint_sets], dtype=bool
    )
    out: fwk.Mask = nodes.valid & ok_sets[nodes.taint_set]
    return out


_SHAPES = 256  # eligibility shapes kept (cleared when node labels change)
_MOST = np.iinfo(np.int64).max


def _label(state: ClusterState, pod: Pod, key: str) -> str | None:
    node = state.nodes.get(pod.node_name)
    return None if node is None else node.labels.get(key)


class _Domains:
    """One constraint's topology domains over the slots, for one eligibility shape: ids (-1 without the
    key), nd of them; the slots its policies admit; for the Filter the domains with an admitted slot and
    the bins that count admitted slots only (nd: a spare bin for the others); for the Score the ids
    with the slots without the key in the blank domain (or nd), bins with nd + 1 for slots not
    admitted, and gather ids with nd + 1 for slots without the key. Built on first use; read-only."""

    def __init__(self, admitted: fwk.Mask, ids: Ints, nd: int, valid: fwk.Mask, blank: int | None) -> None:
        self.admitted = admitted
        self.ids = ids
        self.nd = nd
        self.has: fwk.Mask = ids >= 0
        self.missing: fwk.Mask = valid & ~self.has
        self._blank = blank
        self._bins: tuple[Ints, Ints, Ints] | None = None
        self._exists: fwk.Mask | None = None
        self._count: int | None = None
        self._score: tuple[Ints, Ints, Ints] | None = None
        self.single = nd == int(np.count_nonzero(self.has))  # each domain one slot (hostnames)

    @property
    def exists(self) -> fwk.Mask:
        """Per domain (nd + 1, the spare last and False), whether an admitted slot is in it."""
        if self._exists is None:
            exists = np.zeros(self.nd + 1, dtype=bool)
            exists[self.ids[self.admitted]] = True
            exists[self.nd] = False
            self._exists = exists
        return self._exists

    @property
    def count(self) -> int:
        """How many domains have an admitted slot."""
        if self._count is None:
            self._count = int(np.count_nonzero(self.exists))
        return self._count

    def sums(self, per_slot: Ints) -> Ints:
        """Per domain (nd + 1), the matching pods on its admitted slots."""
        if self._bins is None:
            # the slots in domain order, where each domain's run starts, and which domain it is: a
            # reduceat over them is a bincount in int64 (and cheaper than one through float weights)
            bins = np.where(self.admitted, self.ids, self.nd)
            order = np.argsort(bins, kind="stable")
            ordered = bins[order]
            starts = np.flatnonzero(np.concatenate(([True], ordered[1:] != ordered[:-1])))
            self._bins = (order, starts, ordered[starts])
        order, starts, which = self._bins
        out: Ints = np.zeros(self.nd + 1, dtype=np.int64)
        if len(order):
            out[which] = np.add.reduceat(per_slot[order], starts)
        return out

    def _score_ids(self) -> tuple[Ints, Ints, Ints]:
        if self._score is None:
            nd = self.nd
            ids = np.where(self.has, self.ids, nd if self._blank is None else self._blank)
            self._score = (ids, np.where(self.admitted, ids, nd + 1), np.where(self.has, ids, nd + 1))
        return self._score

    @property
    def score_ids(self) -> Ints:
        return self._score_ids()[0]

    @property
    def score_bins(self) -> Ints:
        return self._score_ids()[1]

    @property
    def score_gather(self) -> Ints:
        return self._score_ids()[2]


class _Eligible:
    """Slots with every constraint's key, and each constraint's domains (one eligibility shape)."""

    def __init__(self, every: fwk.Mask, domains: list[_Domains]) -> None:
        self.every = every
        self.domains = domains


def new(args: Args | None, handle: ClusterState) -> PodTopologySpread:
    args = args or Args()
    defaults = args.defaulting_type == "System" or bool(args.default_constraints)
    return PodTopologySpread(args, shared(handle, owners=defaults))
