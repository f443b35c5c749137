"""One scheduling cycle per pod, as kube-scheduler runs it, over all nodes at once:
PreFilter, Filter, PostFilter (when nothing fits), PreScore, Score, NormalizeScore, weights, select, Reserve.

The scheduler knows plugins only by the extension points they implement (the Profile finds them
when it is built); it never names one.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, TypeVar

import msgspec
import numpy as np

from berth.core.api.core.model import Pod
from berth.core.cache.state import Reservation
from berth.core.framework.cycle import Cycle
from berth.core.framework.interface import (
    NodeFit,
    NodeLocalFilter,
    NodeLocalScore,
    PostFilterResult,
    ReadsOtherNodes,
    ReservePlugin,
)
from berth.core.framework.runtime.incremental import Answers
from berth.core.framework.runtime.profile import Profile
from berth.core.framework.status import (
    NO_NODES_AVAILABLE,
    OK,
    Code,
    Failure,
    NodeStatus,
    NodeToStatus,
    Status,
    fit_error,
    with_post_filter,
)
from berth.core.framework.types import Mask
from berth.core.scheduler.nominator import Nominator
from berth.core.scheduler.results import Decision, NodeResult, Provision, VolumeBindingOut
from berth.core.scheduler.sampling import first_feasible, num_feasible_nodes_to_find

T = TypeVar("T")


@dataclass
class Outcome:
    decision: Decision
    reservation: Reservation | None
    rejected_by: frozenset[str] = frozenset()  # plugins that turned nodes (or the pod) away
    pre_filter_rejected: bool = False  # a PreFilter turned the pod away: no node can help (unresolvable)
    statuses: NodeToStatus | None = None  # after Filter: kube's NodeToStatus, each node's first failing plugin
    post_filter: PostFilterResult | None = None
    codes: dict[str, Code] = field(default_factory=dict)  # each Filter reason's Status code
    reasons: dict[str, int] = field(
        default_factory=dict
    )  # when nothing fits: nodes per reason, as the message counts them


@dataclass
class _Filtered:
    """What PreFilter and Filter found for a cycle."""

    feasible: Mask
    failures: list[Failure] = field(default_factory=list)  # every failing group, in filter order
    by_plugin: list[tuple[str, list[Failure]]] = field(default_factory=list)
    stop: Outcome | None = None  # the cycle ended early: an Error or a PreFilter rejection


@dataclass(frozen=True)
class _DryRun:
    """Scheduler.dry_run as the framework's DryRun (with whether the profile's filters are node-local);
    readers: the profile's plugins marked reads_other_nodes."""

    scheduler: Scheduler
    node_local: bool
    node_fit: NodeFit | None
    readers: tuple[object, ...] = ()
    # the readers as ReadsOtherNodes, checked once (a Protocol check is slow); None: one lacks removal_safe
    _checked: tuple[ReadsOtherNodes, ...] | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        checked = tuple(p for p in self.readers if isinstance(p, ReadsOtherNodes))
        object.__setattr__(self, "_checked", checked if len(checked) == len(self.readers) else None)

    def __call__(self, cycle: Cycle) -> tuple[Mask, NodeToStatus]:
        return self.scheduler.dry_run(cycle)

    def nominated(self, pod: Pod) -> frozenset[str]:
        return frozenset(self.scheduler.nominator.for_pod(pod))

    def removal_safe(self, cycle: Cycle, leaving: Sequence[Pod] | None = None) -> bool:
        # a reader without removal_safe is taken as unsafe
        return self._checked is not None and all(p.removal_safe(cycle, leaving) for p in self._checked)


class Scheduler:
    def __init__(self, profile: Profile, top_nodes: int | None = None, incremental: bool = True) -> None:
        """top_nodes: None lists every node in a decision; N lists only the N best feasible ones.
        incremental: keep node-local plugins' answers per pod signature and compute again only the nodes
        changed since (berth.core.framework.runtime.incremental); False runs every plugin on every node each cycle."""
        self.profile = profile
        self.state = profile.state
        self.top_nodes = top_nodes
        self.answers = Answers() if incremental else None
        # the plugins whose answers may be kept (a Protocol check is slow: made once)
        self._local_filters = {id(p) for p in profile.filters if isinstance(p, NodeLocalFilter)}
        self._local_scores = {id(p) for p, _ in profile.scorers if isinstance(p, NodeLocalScore)}
        # observe(plugin, extension point, seconds): timings for metrics; ("", "Decide", s) per pod
        self.observe: Callable[[str, str, float], None] | None = None
        plugins = [*profile.pre_filters, *profile.filters]
        readers = tuple(dict.fromkeys(p for p in plugins if getattr(p, "reads_other_nodes", False)))
        fit = next((p for p in profile.filters if isinstance(p, NodeFit)), None)
        self.dry_runner = _DryRun(self, not readers, fit, readers)  # what PostFilter plugins get
        self.nominator = Nominator(self.state)
        self.state.attach(self.nominator)
        self._post_filtering = True
        self.next_start = 0  # kube's nextStartNodeIndex: where the next cycle's search for feasible nodes starts
        self._rank_base: tuple[np.ndarray, np.ndarray] | None = None  # (name_rank, n - name_rank): _rank_key's

    def pre_enqueue(self, pod: Pod) -> Status:
        """The profile's PreEnqueue plugins in order: the first rejection (the pod is held back, not
        decided), else OK."""
        for plugin in self.profile.pre_enqueues:
            status = plugin.pre_enqueue(pod)
            if status.rejects:
                return status if status.plugin else replace(status, plugin=plugin.name)
        return OK

    def decide(self, pod: Pod, now: datetime, on: str | None = None) -> Outcome:
        """on: place the pod on this node (if feasible there) instead of the best one (the extender's bind)."""
        if self.observe is None:
            return self._decide(pod, now, on, self.top_nodes)
        start = time.perf_counter()
        outcome = self._decide(pod, now, on, self.top_nodes)
        self.observe("", "Decide", time.perf_counter() - start)
        return outcome

    def evaluate(self, pod: Pod, now: datetime) -> Outcome:
        """The pod against the state now with every node listed, untimed (the extender's filter and
        prioritize). Reserve plugins run; PostFilter does not (kube-scheduler preempts on its own);
        nothing is applied to the state."""
        observe, self.observe = self.observe, None
        self._post_filtering = False
        try:
            return self._decide(pod, now, None, None)
        finally:
            self.observe = observe
            self._post_filtering = True

    def _timed(self, plugin: str, point: str, fn: Callable[..., T], *args: Any) -> T:
        if self.observe is None:
            return fn(*args)
        start = time.perf_counter()
        out = fn(*args)
        self.observe(plugin, point, time.perf_counter() - start)
        return out

    def _filter(self, cycle: Cycle, top_nodes: int | None) -> _Filtered:
        """PreFilter, then Filter on every node at once; on nodes with nominated pods, again with them."""
        found = self._filter_once(cycle, top_nodes)
        nominated = self.nominator.for_pod(cycle.pod)
        if not nominated or found.stop is not None:
            return found
        return self._with_nominated(cycle, found, nominated)

    def _with_nominated(self, cycle: Cycle, found: _Filtered, nominated: dict[str, list[Pod]]) -> _Filtered:
        """kube's RunFilterPluginsWithNominatedPods: a node where pods of at least this pod's priority
        are nominated must pass with them placed there (whose failure is the node's status) as well
        as without them. Each such node is tried with its own nominated pods only."""
        nodes = self.state.nodes
        n = len(found.feasible)
        replaced = np.zeros(n, dtype=bool)
        extra: list[tuple[str, list[Failure]]] = []
        for node, pods in nominated.items():
            slot = nodes.slot.get(node)
            if slot is None:
                continue
            for p in pods:
                self.state.reserve(Reservation(p, node))
            try:
                # a trial state, undone at once: its answers are not worth keeping
                trial = self._filter_once(Cycle(cycle.pod, self.state, cycle.now), None, keep=False)
            finally:
                for p in pods:
                    self.state.release(p.key)
            here = np.zeros(n, dtype=bool)
            here[slot] = True
            if trial.stop is not None:
                status = None if trial.stop.statuses is None else trial.stop.statuses.everywhere
                if status is None:
                    return trial
                failures = [Failure(here, reason, status.code) for reason in status.reasons]
                extra.append((status.plugin, failures))
            elif not trial.feasible[slot]:
                for name, failing in trial.by_plugin:
                    hits = [Failure(here, f.reason, f.code) for f in failing if f.mask[slot]]
                    if hits:
                        extra.append((name, hits))
            else:
                continue
            replaced |= here
        if not replaced.any():
            return found
        out = _Filtered(found.feasible & ~replaced)
        for name, failing in found.by_plugin:
            kept = [Failure(f.mask & ~replaced, f.reason, f.code) for f in failing]
            kept = [f for f in kept if f.mask.any()]
            if kept:
                out.by_plugin.append((name, kept))
        out.by_plugin.extend(extra)
        out.failures = [f for _, failing in out.by_plugin for f in failing]
        return out

    def _filter_once(self, cycle: Cycle, top_nodes: int | None, keep: bool = True) -> _Filtered:
        """PreFilter, then Filter on every node at once (keep: with the kept answers, if any)."""
        pod, nodes = cycle.pod, self.state.nodes
        skipped: set[str] = set()
        for plugin in self.profile.pre_filters:
            status = self._timed(plugin.name, "PreFilter", plugin.pre_filter, cycle)
            if status.code is Code.ERROR:
                return _Filtered(nodes.valid, stop=self._error(pod, status.message))
            if status.rejects:
                message = fit_error(len(nodes), {}, pre_filter=status.message)
                # only feasible nodes are listed with top_nodes, and there is none; else one shared
                # result for every node (results are never changed once made)
                rejected_here = NodeResult(feasible=False, reasons=[status.message])
                every = dict.fromkeys(sorted(nodes.slot), rejected_here) if top_nodes is None else {}
                statuses = NodeToStatus(nodes, everywhere=NodeStatus(plugin.name, status.code, (status.message,)))
                stop = Outcome(
                    Decision(pod.key, "Unschedulable", None, message, nodes=every),
                    None,
                    frozenset({plugin.name}),
                    pre_filter_rejected=True,
                    statuses=statuses,
                )
                return _Filtered(nodes.valid, stop=stop)
            if status.code is Code.SKIP:
                skipped.add(plugin.name)
        out = _Filtered(nodes.valid.copy())
        for filt in self.profile.filters:
            if filt.name in skipped:
                continue
            if keep and self.answers is not None and id(filt) in self._local_filters:
                found = self._timed(filt.name, "Filter", self.answers.filter, filt, cycle, filt.filter)
            else:
                found = self._timed(filt.name, "Filter", filt.filter, cycle)
            failing = []
            for f in found:
                if f.code is Code.ERROR:
                    return _Filtered(nodes.valid, stop=self._error(pod, f.reason))
                if np.count_nonzero(f.mask):  # much cheaper than any() on a mask this long
                    failing.append(f)
                    out.feasible &= ~f.mask
            if failing:
                out.failures.extend(failing)
                out.by_plugin.append((filt.name, failing))
        return out

    def dry_run(self, cycle: Cycle) -> tuple[Mask, NodeToStatus]:
        """PreFilter and Filter of this profile for a cycle, against the state as it is now (for a
        PostFilter that changes the state for the call, as kube's preemption does on a copy)."""
        trial = Cycle(cycle.pod, self.state, cycle.now)
        found = self._filter(trial, None)
        if found.stop is not None:
            if found.stop.statuses is not None:
                return np.zeros(len(found.feasible), dtype=bool), found.stop.statuses
            everywhere = NodeStatus("", Code.ERROR, (found.stop.decision.message,))
            return np.zeros(len(found.feasible), dtype=bool), NodeToStatus(self.state.nodes, everywhere=everywhere)
        return found.feasible, NodeToStatus(self.state.nodes, found.by_plugin)

    def _decide(self, pod: Pod, now: datetime, on: str | None, top_nodes: int | None) -> Outcome:
        cycle = Cycle(pod=pod, state=self.state, now=now)
        nodes = self.state.nodes
        if not len(nodes):  # kube's ErrNoNodesAvailable, before PreFilter; any change may help
            return Outcome(Decision(pod.key, "Unschedulable", None, NO_NODES_AVAILABLE), None)
        found = self._filter(cycle, top_nodes)
        if found.stop is not None:
            if found.stop.pre_filter_rejected:
                return self._preempt(cycle, found.stop)
            return found.stop
        feasible, failures = found.feasible, found.failures
        statuses = NodeToStatus(nodes, found.by_plugin)
        if on is None:
            feasible = self._sample(feasible)
        rejected = frozenset(name for name, _ in found.by_plugin)
        codes = {f.reason: f.code for f in failures}
        scores: dict[str, np.ndarray] = {}
        any_feasible = bool(np.count_nonzero(feasible))
        if any_feasible:
            skipped: set[str] = set()
            for plugin in self.profile.pre_scores:
                status = self._timed(plugin.name, "PreScore", plugin.pre_score, cycle, feasible)
                if status.code is Code.ERROR:
                    return self._error(pod, status.message)
                if status.code is Code.SKIP:
                    skipped.add(plugin.name)
            for p, _ in self.profile.scorers:
                if p.name in skipped:
                    continue
                if self.answers is not None and id(p) in self._local_scores:
                    scored = self._timed(p.name, "Score", self.answers.score, p, cycle, feasible, p.score)
                else:
                    scored = self._timed(p.name, "Score", p.score, cycle, feasible)
                scores[p.name] = scored
                normalizer = self.profile.normalizers.get(p.name)
                if normalizer is not None:
                    self._timed(p.name, "NormalizeScore", normalizer.normalize_score, cycle, scores[p.name], feasible)
        total: np.ndarray | None = None
        for p, weight in self.profile.scorers:
            part = scores.get(p.name)
            if part is not None:
                if total is None:
                    total = np.multiply(part, weight, dtype=np.int64)  # a new array: parts stay as given
                elif weight == 1:
                    total += part
                else:
                    total += part * weight
        if total is None:
            total = np.zeros(len(nodes.valid), dtype=np.int64)
        ranked = np.flatnonzero(feasible)
        key = self._rank_key(ranked, total)
        results = self._node_results(failures, feasible, scores, total, ranked, key, top_nodes, found.feasible)
        chosen: int | None = None
        if on is not None:
            wanted = nodes.slot.get(on)
            if wanted is None or not feasible[wanted]:
                known = results.get(on)
                why = "not known" if wanted is None else "; ".join(known.reasons if known else []) or "not feasible"
                message = f"{pod.key} does not fit on node {on}: {why}"
                decision = Decision(pod.key, "Unschedulable", None, message, nodes=results)
                return Outcome(decision, None, rejected, statuses=statuses, codes=codes)
            chosen = wanted
        if not any_feasible:
            counts = statuses.reason_counts()
            message = fit_error(len(nodes), counts)
            decision = Decision(pod.key, "Unschedulable", None, message, nodes=results)
            unfit = Outcome(decision, None, rejected, statuses=statuses, codes=codes, reasons=counts)
            return self._preempt(cycle, unfit)
        # the highest total; ties go to the node name
        slot = int(ranked[np.argmax(key)]) if chosen is None else chosen
        node = nodes.names[slot] or ""
        failed = self._reserve(cycle, slot)
        if failed is not None:
            if failed.code is Code.ERROR:
                return self._error(pod, failed.message)
            # kube: a FitError over the one node tried, holding the Reserve status
            message = fit_error(1, {failed.message: 1})
            decision = Decision(pod.key, "Unschedulable", None, message, nodes=results)
            return Outcome(decision, None, frozenset({failed.plugin}), statuses=statuses, codes=codes)
        out = [VolumeBindingOut(claim=c, pv=v) for c, v in cycle.bindings]
        out += [
            VolumeBindingOut(claim=c, provision=Provision(self.state.pvcs[c].storage_class, node))
            for c in cycle.provisions
        ]
        order = {f"{pod.namespace}/{v.claim_name}": i for i, v in enumerate(pod.volumes)}
        out.sort(key=lambda b: order.get(b.claim, 0))
        message = f"Successfully assigned {pod.key} to {node}"
        decision = Decision(pod.key, "Scheduled", node, message, volume_bindings=out, nodes=results)
        reservation = Reservation(pod, node, tuple(cycle.bindings), tuple(cycle.provisions))
        return Outcome(decision, reservation, statuses=statuses, codes=codes)

    def _preempt(self, cycle: Cycle, outcome: Outcome) -> Outcome:
        """PostFilter for a pod that fits nowhere: its message gains the plugins' (kube's FitError
        with PostFilterMsg; an Error is not shown), a nomination its node and victims."""
        if not self.profile.post_filters or not self._post_filtering or outcome.statuses is None:
            return outcome
        post = self._post_filter(cycle, outcome.statuses)
        outcome.post_filter = post
        if post is None:
            return outcome
        d = outcome.decision
        if post.status.code is not Code.ERROR:
            d = msgspec.structs.replace(d, message=with_post_filter(d.message, post.status.message))
        if post.status.code is Code.SUCCESS and post.nominated_node:
            d = msgspec.structs.replace(d, nominated_node=post.nominated_node, victims=list(post.victims))
        outcome.decision = d
        return outcome

    def _sample(self, feasible: Mask) -> Mask:
        """percentageOfNodesToScore: the first feasible nodes from where the last cycle stopped
        (berth.core.scheduler.sampling); the others are neither scored nor listed."""
        nodes = self.state.nodes
        k = num_feasible_nodes_to_find(self.profile.percentage_of_nodes_to_score, len(nodes))
        if k >= len(nodes):  # every node is looked at: the next search starts where this one did
            return feasible
        slots = np.flatnonzero(nodes.valid)
        order = slots[np.argsort(nodes.name_rank()[slots], kind="stable")]
        kept, processed = first_feasible(feasible, order, self.next_start, k)
        if len(order):
            self.next_start = (self.next_start + processed) % len(order)
        return kept

    def _post_filter(self, cycle: Cycle, statuses: NodeToStatus) -> PostFilterResult | None:
        """kube runs PostFilter plugins in order until one succeeds or rejects the pod outright."""
        result = None
        for plugin in self.profile.post_filters:
            result = self._timed(plugin.name, "PostFilter", plugin.post_filter, cycle, statuses, self.dry_runner)
            if result.status.code in (Code.SUCCESS, Code.UNRESOLVABLE, Code.ERROR):
                break
        return result

    def _reserve(self, cycle: Cycle, slot: int) -> Status | None:
        """Reserve plugins in order; on a failure the ones that ran are unreserved in reverse."""
        done: list[ReservePlugin] = []
        for plugin in self.profile.reservers:
            status = self._timed(plugin.name, "Reserve", plugin.reserve, cycle, slot)
            if status.rejects:
                for p in reversed(done):
                    p.unreserve(cycle, slot)
                return Status(status.code, status.message, plugin.name)
            done.append(plugin)
        return None

    def _error(self, pod: Pod, message: str) -> Outcome:
        return Outcome(Decision(pod.key, "Error", None, message), None)

    def _rank_key(self, ranked: np.ndarray, total: np.ndarray) -> np.ndarray:
        """Per slot of `ranked` (the feasible ones), one int that orders by total, then by node name
        (distinct: the name rank breaks ties)."""
        n = len(total)
        rank = self.state.nodes.name_rank()
        if self._rank_base is None or self._rank_base[0] is not rank or len(rank) != n:
            self._rank_base = (rank, n - rank)  # kept as long as the node table keeps its ranks
        key: np.ndarray = total[ranked] * (n + 1)
        key += self._rank_base[1][ranked]
        return key

    def _node_results(
        self,
        failures: list[Failure],
        feasible: Mask,
        scores: dict[str, np.ndarray],
        total: np.ndarray,
        ranked: np.ndarray,
        key: np.ndarray,
        top_nodes: int | None,
        filtered: Mask,
    ) -> dict[str, NodeResult]:
        """The per-node report. A rejected node lists every failing plugin's reasons (in filter
        order), not only its first failing plugin's (that one is in the Outcome's statuses).
        Feasible nodes past percentageOfNodesToScore (filtered but not in feasible: not looked at) are
        not listed."""
        names = self.state.nodes.names
        if top_nodes is not None:
            return self._top_results(scores, total, ranked, key, top_nodes)
        reasons: dict[int, tuple[str, ...]] = {}
        for f in failures:
            for s in np.flatnonzero(f.mask).tolist():
                reasons[s] = (*reasons.get(s, ()), f.reason)
        rejected: dict[tuple[str, ...], NodeResult] = {}  # one result per set of reasons, shared
        out: dict[str, NodeResult] = {}
        columns = [(k, v.tolist()) for k, v in scores.items()]
        totals = total.tolist()
        ok = feasible.tolist()
        slots = np.flatnonzero(self.state.nodes.valid & ~(filtered & ~feasible))
        for s in slots[np.argsort(self.state.nodes.name_rank()[slots])].tolist():  # in node-name order
            if ok[s]:
                out[names[s] or ""] = NodeResult(True, [], {k: col[s] for k, col in columns}, totals[s])
            else:
                why = reasons.get(s, ())
                result = rejected.get(why)
                if result is None:
                    result = rejected[why] = NodeResult(False, list(why))
                out[names[s] or ""] = result
        return out

    def _top_results(
        self, scores: dict[str, np.ndarray], total: np.ndarray, ranked: np.ndarray, key: np.ndarray, k: int
    ) -> dict[str, NodeResult]:
        """The k best of the feasible slots `ranked` (with their keys), highest total first, then node
        name (keys are unique)."""
        names = self.state.nodes.names
        if not k or not len(ranked):
            return {}
        idx = ranked
        if len(idx) > k:
            # feasible slots' keys are distinct (the name rank breaks ties): the k-th highest bounds
            # exactly the k best
            m = len(idx) - k
            kth = np.partition(key, m)[m]
            top = key >= kth
            idx, key = idx[top], key[top]
        best = idx[np.argsort(-key, kind="stable")]
        # each column gathered once (one numpy call per plugin, not one per node and plugin)
        columns = [(k, v[best].tolist()) for k, v in scores.items()]
        totals = total[best].tolist()
        return {
            names[s] or "": NodeResult(True, [], {k: col[i] for k, col in columns}, totals[i])
            for i, s in enumerate(best.tolist())
        }

    def run(self, pods: list[Pod], now: datetime) -> list[Decision]:
        """Decide pods one after another; each Scheduled decision is reserved before the next. A
        preemption is taken as done (kube's nominator): its victims are gone and the pod is
        nominated to its node, where the later pods of no higher priority see it placed."""
        decisions = []
        for pod in pods:
            outcome = self.decide(pod, now)
            if outcome.reservation is not None:
                self.state.reserve(outcome.reservation)
            else:
                self.nominate(pod, outcome)
            decisions.append(outcome.decision)
        return decisions

    def queue(self, pods: list[Pod]) -> list[Pod]:
        """kube's PrioritySort: higher priority first, then the given order (pending_pods: oldest
        first, ties by namespace/name)."""
        return sorted(pods, key=lambda p: -self.state.priority(p))

    def nominate(self, pod: Pod, outcome: Outcome) -> None:
        """Carry out a PostFilter result on the state: evict the victims and nominate the pod to its
        node; a PostFilter that found no node clears the pod's nomination (kube's Override)."""
        post = outcome.post_filter
        if post is None:
            return
        if post.nominated_node == "":
            self.nominator.forget(pod.key)
        if post.status.code is not Code.SUCCESS or not post.nominated_node:
            return
        for victim in post.victims:
            self.state.lift(victim)
        self.nominator.hold(pod, post.nominated_node)
