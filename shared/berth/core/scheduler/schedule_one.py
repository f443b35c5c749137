"""One scheduling cycle per pod, as kube-scheduler runs it (pkg/scheduler/schedule_one.go), over all
nodes at once, in kube's steps: find_nodes_that_fit (PreFilter, Filter, with nominated pods),
PostFilter when nothing fits (_preempt), prioritize (PreScore, Score, NormalizeScore), the weighted
total, select_host, reserve. The cycle finds statuses, scores and the chosen slot; results builds the
Decision.

The scheduler knows plugins only by the extension points they implement (the Profile finds them
when it is built); it never names one.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, TypeVar

import msgspec
import numpy as np

from berth.core.api.core.model import Pod
from berth.core.cache.state import Reservation
from berth.core.framework.cycle import Cycle
from berth.core.framework.interface import (
    IgnoresPods,
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
    PreFilterResult,
    Status,
    disjoint,
    fit_error,
    unsatisfied,
    with_post_filter,
)
from berth.core.framework.types import Mask, Slots
from berth.core.scheduler import results
from berth.core.scheduler.nominator import AmountsAndColumns, Nominated, Nominator
from berth.core.scheduler.results import Decision
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
    rejected_groups: list[results.RejectedGroup] | None = None  # Scheduler.rejected_groups's


@dataclass
class _Filtered:
    """What PreFilter and Filter found for a cycle."""

    feasible: Mask
    failures: list[Failure] = field(default_factory=list)  # every failing group, in filter order
    by_plugin: list[tuple[str, list[Failure]]] = field(default_factory=list)
    stop: Outcome | None = None  # the cycle ended early: an Error or a PreFilter rejection
    # the nodes the filters passed, whether or not kube evaluates them (a PreFilter's node set left them out)
    passed: Mask | None = None
    # the nodes a PreFilter's node set left out (kube never evaluates them), and the plugins that gave sets
    outside: Mask | None = None
    with_nodes: frozenset[str] = frozenset()
    chosen: int | None = None  # the pod's nominated node, where it fits: kube looks no further


@dataclass(frozen=True)
class _DryRun:
    """Scheduler.dry_run as the framework's DryRun (with whether the profile's filters are node-local);
    readers: the profile's plugins marked reads_other_nodes."""

    scheduler: Scheduler
    node_local: bool
    node_fit: NodeFit | None
    readers: tuple[object, ...] = ()
    guards: tuple[Any, ...] = ()  # node-local filters with a removal_safe of their own (NodeVolumeLimits)
    # the readers as ReadsOtherNodes, checked once (a Protocol check is slow); None: one lacks removal_safe
    _checked: tuple[ReadsOtherNodes, ...] | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        checked = tuple(p for p in self.readers if isinstance(p, ReadsOtherNodes))
        object.__setattr__(self, "_checked", checked if len(checked) == len(self.readers) else None)

    def __call__(self, cycle: Cycle, nodes: Collection[str] | None = None) -> tuple[Mask, NodeToStatus]:
        return self.scheduler.dry_run(cycle, nodes)

    def nominated(self, pod: Pod) -> frozenset[str]:
        return frozenset(self.scheduler.nominator.for_pod(pod))

    def nominated_node(self, pod: Pod) -> str:
        return self.scheduler.nominator.nominated_node(pod)

    def nominated_amounts(self, cycle: Cycle) -> dict[str, dict[str, int]] | None:
        return self.scheduler.nominated_amounts(cycle)

    def nominated_columns(self, cycle: Cycle) -> AmountsAndColumns | None:
        return self.scheduler.nominated_columns(cycle)

    def removal_safe(self, cycle: Cycle, leaving: Sequence[Pod] | None = None) -> bool:
        # a reader without removal_safe is taken as unsafe
        if self._checked is None or not all(p.removal_safe(cycle, leaving) for p in self._checked):
            return False
        return all(p.removal_safe(cycle, leaving) for p in self.guards)


class Scheduler:
    def __init__(
        self, profile: Profile, top_nodes: int | None = None, incremental: bool = True, rejected_groups: int = 0
    ) -> None:
        """top_nodes: None lists every node in a decision; N lists only the N best feasible ones.
        rejected_groups: with top_nodes, the outcome groups the rejected nodes by their reasons, each
        group with its count and its first this many node names (what a table of the rejections
        shows, without a result per node).
        incremental: keep node-local plugins' answers per pod signature and compute again only the nodes
        changed since (berth.core.framework.runtime.incremental); False runs every plugin on every node each cycle."""
        self.profile = profile
        self.state = profile.state
        self.top_nodes = top_nodes
        self.rejected_groups = rejected_groups
        self.answers = Answers() if incremental else None
        # the plugins whose answers may be kept (a Protocol check is slow: made once)
        self._local_filters = {id(p) for p in profile.filters if isinstance(p, NodeLocalFilter)}
        self._local_scores = {id(p) for p, _ in profile.scorers if isinstance(p, NodeLocalScore)}
        # observe(plugin, extension point, seconds): timings for metrics; ("", "Decide", s) per pod
        self.observe: Callable[[str, str, float], None] | None = None
        plugins = [*profile.pre_filters, *profile.filters]
        readers = tuple(dict.fromkeys(p for p in plugins if getattr(p, "reads_other_nodes", False)))
        fit = next((p for p in profile.filters if isinstance(p, NodeFit)), None)
        guards = tuple(p for p in dict.fromkeys(plugins) if p not in readers and hasattr(p, "removal_safe"))
        self.dry_runner = _DryRun(self, not readers, fit, readers, guards)  # what PostFilter plugins get
        # the PreFilter and Filter plugins that may read the pods on a node, the node fit aside
        blind = {p.name for p in profile.pre_filters if isinstance(p, IgnoresPods)}
        blind |= {p.name for p in profile.filters if isinstance(p, IgnoresPods)}
        every = {p.name for p in profile.pre_filters} | {p.name for p in profile.filters}
        self._filter_names = [p.name for p in profile.filters]
        self._pod_readers = frozenset(every - blind - {fit.name if fit is not None else ""})
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

    def find_nodes_that_fit(
        self, cycle: Cycle, top_nodes: int | None, nominated_node: str = "", read: Collection[str] | None = None
    ) -> _Filtered:
        """kube's findNodesThatFitPod: PreFilter, then Filter on every node at once; on nodes with
        nominated pods, again with them. nominated_node: the pod's status.nominatedNodeName; where
        it passes (with the nominated pods there too) it is `chosen` and no other node is looked at
        (kube's evaluateNominatedNode, whatever a PreFilter's node set says). read: the nodes whose
        answer is read (a dry run's); the nominated pods are tried there only."""
        found = self._filter_once(cycle, top_nodes)
        if found.stop is not None:
            return found
        view = self.nominator.view(cycle.pod)
        nominated = view.by_node
        if nominated_node:
            slot = self.state.nodes.slot.get(nominated_node)
            if slot is not None and found.passed is not None and found.passed[slot]:
                others = nominated.get(nominated_node)
                if not others or self._passes_with(cycle, others, slot):
                    found.chosen = slot
                    return found
        if read is not None:
            picked = [node for node in read if node in nominated]
            if len(picked) > 1:  # in the nominator's order
                keep = set(picked)
                picked = [node for node in nominated if node in keep]
            nominated = {node: nominated[node] for node in picked}
        if not nominated:
            return found
        return self._with_nominated(cycle, found, nominated, view)

    def _passes_with(self, cycle: Cycle, pods: list[Pod], slot: int) -> bool:
        """Whether the node passes the filters with these nominated pods placed on it."""
        trial = self._trial(cycle, pods, self.state.nodes.names[slot] or "")
        return trial.stop is None and trial.passed is not None and bool(trial.passed[slot])

    def _trial(self, cycle: Cycle, pods: list[Pod], node: str) -> _Filtered:
        """PreFilter and Filter again with the nominated pods placed on the node (kube's
        addGENominatedPods: AddPod for the plugins whose PreFilter did not skip), then undone."""
        with self.placed(pods, node):
            # a trial state, undone at once: its answers are not worth keeping
            again = Cycle(cycle.pod, self.state, cycle.now, skip_filter=cycle.skip_filter)
            return self._filter_once(again, None, keep=False)

    @contextmanager
    def placed(self, pods: list[Pod], node: str) -> Iterator[None]:
        """Nominated pods placed on their node (reserved) for the block, then released."""
        for p in pods:
            self.state.reserve(Reservation(p, node))
        try:
            yield
        finally:
            for p in pods:
                self.state.release(p.key)

    def _with_nominated(
        self, cycle: Cycle, found: _Filtered, nominated: dict[str, list[Pod]], view: Nominated
    ) -> _Filtered:
        """kube's RunFilterPluginsWithNominatedPods: a node where pods of at least this pod's priority
        are nominated must pass with them placed there (whose failure is the node's status) as well
        as without them. Each such node is tried with its own nominated pods only; the nodes that fail
        the same way share their failures (one mask, not one per node)."""
        nodes = self.state.nodes
        fit = self._fit_alone(cycle)
        counted = self.state.counted(view.keys()) if fit is not None else set()
        if fit is not None and not counted and found.outside is None:
            grouped = self._all_by_amounts(cycle, found, fit, nominated, view)
            if grouped is not None:
                return _replaced(found, grouped)
        tried: list[tuple[int, _Failing | None]] = []  # (slot, what fails there; None: by amounts)
        fast: list[tuple[int, str]] = []
        for node, pods in nominated.items():
            slot = nodes.slot.get(node)
            if slot is None or (found.outside is not None and found.outside[slot]):
                continue  # kube evaluates only the nodes a PreFilter's node set names
            what: _Failing | None = None
            if fit is not None and _none_counted(pods, counted):
                fast.append((slot, node))
            else:
                trial = self._trial(cycle, pods, node)
                if trial.stop is not None:
                    status = None if trial.stop.statuses is None else trial.stop.statuses.everywhere
                    if status is None:
                        return trial
                    what = ((status.plugin, tuple((reason, status.code) for reason in status.reasons)),)
                elif trial.passed is not None and not trial.passed[slot]:
                    # a node set's own entry ("") is left out: the node is in the set
                    what = _failing_at(trial.by_plugin, slot)
                else:
                    what = ()
            tried.append((slot, what))
        by_amounts = iter(self._by_amounts(cycle, found, fit, fast, view) if fit is not None and fast else ())
        failing: dict[_Failing, list[int]] = {}  # what fails with the nominated pods -> the slots
        for slot, tried_what in tried:
            what = next(by_amounts) if tried_what is None else tried_what
            if what:
                failing.setdefault(what, []).append(slot)
        return _replaced(found, failing)

    def _all_by_amounts(
        self, cycle: Cycle, found: _Filtered, fit: NodeFit, nominated: dict[str, list[Pod]], view: Nominated
    ) -> dict[_Failing, Slots] | None:
        """_with_nominated's groups when every node is tried by amounts and only the node fit fails
        there (no other filter): by each set of node-fit failures, in the order of its first node,
        its slots; None where that does not hold."""
        slot_of = self.state.nodes.slot
        names = [node for node in nominated if node in slot_of]
        slots = np.fromiter((slot_of[node] for node in names), dtype=np.int64, count=len(names))
        failures, elsewhere, _ = self._fit_with(cycle, found, fit, slots, names, view)
        if elsewhere.any() or len(failures) > results.CODE_BITS:
            return None
        codes = results.failure_codes([f.mask for f in failures], len(slots))
        distinct, first = np.unique(codes, return_index=True)
        failing = [code for code in distinct[np.argsort(first)].tolist() if code]
        out: dict[_Failing, Slots] = {}
        for code in failing:
            out[((fit.name, _hits_of(failures, code)),)] = slots[codes == code]
        return out if len(out) == len(failing) else None  # two sets of failures alike: one by one

    def _fit_alone(self, cycle: Cycle) -> NodeFit | None:
        """The node fit, when it is the only PreFilter or Filter this cycle runs that reads the pods on
        a node (the others skipped or IgnoresPods): then nominated pods change a node's verdict only
        through the node fit's amounts (_by_amounts)."""
        fit = self.dry_runner.node_fit
        if fit is None or not self._pod_readers <= cycle.skip_filter:
            return None
        return fit

    def nominated_amounts(self, cycle: Cycle) -> dict[str, dict[str, int]] | None:
        """Where _fit_alone holds for the cycle: by node, what the nominated pods the pod sees there
        request (one pod each under pods), for the nodes where none of them is counted anywhere yet;
        None where it does not hold. Read only."""
        if self._fit_alone(cycle) is None:
            return None
        view = self.nominator.view(cycle.pod)
        amounts = view.amounts(self.nominator)
        counted = self.state.counted(view.keys())
        if not counted:
            return amounts
        return {node: a for node, a in amounts.items() if _none_counted(view.by_node[node], counted)}

    def nominated_columns(self, cycle: Cycle) -> AmountsAndColumns | None:
        """Where none of the view's pods is counted anywhere yet (then nominated_amounts holds every
        node with nominated pods the pod sees): those amounts, and the view's columns of them; else
        None. Read only."""
        if self._fit_alone(cycle) is None:
            return None
        view = self.nominator.view(cycle.pod)
        if self.state.counted(view.keys()):
            return None
        rows, by_name = view.columns(self.nominator)
        return view.amounts(self.nominator), rows, by_name

    def _by_amounts(
        self, cycle: Cycle, found: _Filtered, fit: NodeFit, fast: list[tuple[int, str]], view: Nominated
    ) -> list[_Failing]:
        """_trial by arithmetic where _fit_alone holds, for each (slot, its node) with nominated pods:
        what fails there with the pods placed, in filter order, is every other filter's failures
        without them and the node fit's with their requests (and one pod each) added, all slots at once."""
        slots = np.fromiter((s for s, _ in fast), dtype=np.int64, count=len(fast))
        fit_failing, elsewhere, others = self._fit_with(cycle, found, fit, slots, [node for _, node in fast], view)
        alone: dict[tuple[tuple[str, Code], ...], _Failing] = {}
        out: list[_Failing] = []
        for slot, other, hits in zip(slots.tolist(), elsewhere.tolist(), _hits(fit_failing, len(slots)), strict=True):
            if not other:
                what = alone.get(hits)
                if what is None:
                    what = alone[hits] = ((fit.name, hits),) if hits else ()
                out.append(what)
                continue
            failing = dict(_failing_at(others, slot))
            if hits:
                failing[fit.name] = hits
            out.append(tuple((name, failing[name]) for name in self._filter_names if name in failing))
        return out

    def _fit_with(
        self, cycle: Cycle, found: _Filtered, fit: NodeFit, slots: Slots, names: list[str], view: Nominated
    ) -> tuple[list[Failure], Mask, list[tuple[str, list[Failure]]]]:
        """On these slots (of these nodes): the node fit's failures with the nominated pods' amounts
        added (masks over the slots), where another filter fails too, and the other filters' failures."""
        rows, columns = view.columns(self.nominator)
        at = np.fromiter((rows[node] for node in names), dtype=np.int64, count=len(names))
        extra = {name: column[at] for name, column in columns.items()}
        failures = fit.filter_with(cycle, slots, extra)
        others = [(name, fs) for name, fs in found.by_plugin if name and name != fit.name]
        elsewhere = np.zeros(len(slots), dtype=bool)
        for _, fs in others:
            for f in fs:
                elsewhere |= f.mask[slots]
        return failures, elsewhere, others

    def _filter_once(self, cycle: Cycle, top_nodes: int | None, keep: bool = True) -> _Filtered:
        """PreFilter, then Filter on every node at once (keep: with the kept answers, if any). The
        plugins cycle.skip_filter names (skipped by this cycle's first PreFilter) stay skipped, as
        kube keeps its SkipFilterPlugins for the whole cycle. A PreFilter's node set (kube's
        PreFilterResult) leaves the other nodes out: they fail with kube's status for them, first,
        and berth's own report still lists what the filters say there."""
        pod, nodes = cycle.pod, self.state.nodes
        skipped = set(cycle.skip_filter)
        names: frozenset[str] | None = None
        with_nodes: list[str] = []
        for plugin in self.profile.pre_filters:
            if plugin.name in cycle.skip_filter:
                continue
            status = self._timed(plugin.name, "PreFilter", plugin.pre_filter, cycle)
            if status.code is Code.ERROR:
                return _Filtered(nodes.valid, stop=self._error(pod, status.message))
            if status.rejects:
                return _Filtered(nodes.valid, stop=self._pre_filter_rejected(pod, status, plugin.name, top_nodes))
            if status.code is Code.SKIP:
                skipped.add(plugin.name)
            elif isinstance(status, PreFilterResult):
                with_nodes.append(plugin.name)
                names = status.node_names if names is None else names & status.node_names
                if not names:  # kube: the sets have no node in common
                    message = disjoint(with_nodes)
                    rejection = Status(Code.UNRESOLVABLE, message)
                    stop = self._pre_filter_rejected(pod, rejection, "", top_nodes, frozenset(with_nodes))
                    return _Filtered(nodes.valid, stop=stop)
        cycle.skip_filter = frozenset(skipped)
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
        out.passed = out.feasible
        if names is not None:
            inside = np.zeros(len(nodes.valid), dtype=bool)
            inside[[slot for name in names if (slot := nodes.slot.get(name)) is not None]] = True
            outside = nodes.valid & ~inside
            out.outside, out.with_nodes = outside, frozenset(with_nodes)
            out.feasible = out.passed & inside
            if np.count_nonzero(outside):
                left_out = Failure(outside, unsatisfied(with_nodes), Code.UNRESOLVABLE)
                out.failures.insert(0, left_out)
                out.by_plugin.insert(0, ("", [left_out]))
        return out

    def _pre_filter_rejected(
        self, pod: Pod, status: Status, plugin: str, top_nodes: int | None, rejected_by: frozenset[str] | None = None
    ) -> Outcome:
        """A PreFilter turned the pod away: every node gets its status (kube's absent-nodes status)."""
        nodes = self.state.nodes
        message = fit_error(len(nodes), {}, pre_filter=status.message)
        statuses = NodeToStatus(nodes, everywhere=NodeStatus(plugin, status.code, (status.message,)))
        groups = None
        if top_nodes is not None and self.rejected_groups:
            groups = [results.RejectedGroup((status.message,), len(nodes), nodes.by_name()[1][: self.rejected_groups])]
        return Outcome(
            results.rejected_everywhere(pod, message, status.message, nodes, top_nodes is None),
            None,
            frozenset({plugin}) if rejected_by is None else rejected_by,
            pre_filter_rejected=True,
            statuses=statuses,
            rejected_groups=groups,
        )

    def dry_run(self, cycle: Cycle, read: Collection[str] | None = None) -> tuple[Mask, NodeToStatus]:
        """PreFilter and Filter of this profile for a cycle, against the state as it is now (for a
        PostFilter that changes the state for the call, as kube's preemption does on a copy). read:
        the nodes whose answer is read; the pods nominated elsewhere are not tried (kube's dry run
        runs the filters with the nominated pods on each candidate node alone). A trial with a node's
        nominated pods decides that node's answer only, so the nodes read get the same answer."""
        trial = Cycle(cycle.pod, self.state, cycle.now, skip_filter=cycle.skip_filter)
        found = self.find_nodes_that_fit(trial, None, read=read)
        if found.stop is not None:
            if found.stop.statuses is not None:
                return np.zeros(len(found.feasible), dtype=bool), found.stop.statuses
            everywhere = NodeStatus("", Code.ERROR, (found.stop.decision.message,))
            return np.zeros(len(found.feasible), dtype=bool), NodeToStatus(self.state.nodes, everywhere=everywhere)
        return found.feasible, NodeToStatus(self.state.nodes, found.by_plugin)

    def _decide(self, pod: Pod, now: datetime, on: str | None, top_nodes: int | None) -> Outcome:
        """kube's schedulePod: find the nodes that fit, prioritize them, select the host, reserve it."""
        cycle = Cycle(pod=pod, state=self.state, now=now)
        nodes = self.state.nodes
        if not len(nodes):  # kube's ErrNoNodesAvailable, before PreFilter; any change may help
            return Outcome(results.unschedulable(pod, NO_NODES_AVAILABLE), None)
        # kube tries the nominated node first in its own cycles (not the extender's calls)
        first = self.nominator.nominated_node(pod) if on is None and self._post_filtering else ""
        found = self.find_nodes_that_fit(cycle, top_nodes, first)
        if found.stop is not None:
            if found.stop.pre_filter_rejected:
                outcome = self._preempt(cycle, found.stop)
                outcome.rejected_groups = found.stop.rejected_groups
                return outcome
            return found.stop
        if found.chosen is not None:
            return self._place(cycle, found.chosen, {first: results.NodeResult(True, [])}, NodeToStatus(nodes), {})
        statuses = NodeToStatus(nodes, found.by_plugin)
        feasible = found.feasible if on is not None else self._sample(found.feasible, found.outside)
        rejected = frozenset(name for name, _ in found.by_plugin if name) | found.with_nodes
        codes = {f.reason: f.code for f in found.failures}
        scores: dict[str, np.ndarray] = {}
        any_feasible = bool(np.count_nonzero(feasible))
        if any_feasible:
            error = self.prioritize(cycle, feasible, scores)
            if error is not None:
                return self._error(pod, error.message)
        total = self._weighted_total(scores, len(nodes.valid))
        ranked = np.flatnonzero(feasible)
        key = self._rank_key(ranked, total)
        groups = None
        if top_nodes is not None:
            listed = results.top_results(nodes, scores, total, ranked, key, top_nodes)
            if self.rejected_groups:
                groups = results.rejected_groups(nodes, found.failures, found.feasible, self.rejected_groups)
        else:
            listed = results.node_results(nodes, found.failures, feasible, scores, total, found.feasible)
        if on is not None:
            slot = nodes.slot.get(on)
            if slot is None or not feasible[slot]:
                known = listed.get(on)
                why = "not known" if slot is None else "; ".join(known.reasons if known else []) or "not feasible"
                message = f"{pod.key} does not fit on node {on}: {why}"
                decision = results.unschedulable(pod, message, listed)
                return Outcome(decision, None, rejected, statuses=statuses, codes=codes, rejected_groups=groups)
            outcome = self._place(cycle, slot, listed, statuses, codes)
        elif not any_feasible:
            counts = statuses.reason_counts()
            decision = results.unschedulable(pod, fit_error(len(nodes), counts), listed)
            unfit = Outcome(decision, None, rejected, statuses=statuses, codes=codes, reasons=counts)
            outcome = self._preempt(cycle, unfit)
        else:
            outcome = self._place(cycle, self.select_host(ranked, key), listed, statuses, codes)
        outcome.rejected_groups = groups
        return outcome

    def _place(
        self,
        cycle: Cycle,
        slot: int,
        listed: dict[str, results.NodeResult],
        statuses: NodeToStatus,
        codes: dict[str, Code],
    ) -> Outcome:
        """kube's assume and Reserve on the chosen node."""
        pod, node = cycle.pod, self.state.nodes.names[slot] or ""
        failed = self.reserve(cycle, slot)
        if failed is not None:
            if failed.code is Code.ERROR:
                return self._error(pod, failed.message)
            # kube: a FitError over the one node tried, holding the Reserve status
            decision = results.unschedulable(pod, fit_error(1, {failed.message: 1}), listed)
            return Outcome(decision, None, frozenset({failed.plugin}), statuses=statuses, codes=codes)
        decision = results.scheduled(pod, node, cycle.bindings, cycle.provisions, self.state.pvcs, listed)
        reservation = Reservation(pod, node, tuple(cycle.bindings), tuple(cycle.provisions))
        return Outcome(decision, reservation, statuses=statuses, codes=codes)

    def prioritize(self, cycle: Cycle, feasible: Mask, scores: dict[str, np.ndarray]) -> Status | None:
        """kube's prioritizeNodes: PreScore, then each Score plugin (and its NormalizeScore) over the
        feasible slots, into scores by plugin; an Error status ends the cycle."""
        skipped: set[str] = set()
        for plugin in self.profile.pre_scores:
            status = self._timed(plugin.name, "PreScore", plugin.pre_score, cycle, feasible)
            if status.code is Code.ERROR:
                return status
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
                self._timed(p.name, "NormalizeScore", normalizer.normalize_score, cycle, scored, feasible)
        return None

    def _weighted_total(self, scores: dict[str, np.ndarray], n: int) -> np.ndarray:
        """Each slot's score summed over the plugins, times their weights."""
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
        return np.zeros(n, dtype=np.int64) if total is None else total

    def select_host(self, ranked: np.ndarray, key: np.ndarray) -> int:
        """kube's selectHost: the highest total; berth breaks ties by node name, not at random."""
        return int(ranked[np.argmax(key)])

    def _preempt(self, cycle: Cycle, outcome: Outcome) -> Outcome:
        """PostFilter for a pod that fits nowhere: its message gains the plugins' (kube's FitError
        with PostFilterMsg, an Error's message too), a nomination its node and victims."""
        if not self.profile.post_filters or not self._post_filtering or outcome.statuses is None:
            return outcome
        post = self._post_filter(cycle, outcome.statuses)
        outcome.post_filter = post
        if post is None:
            return outcome
        d = outcome.decision
        # kube's FitError shows the PostFilter's message whatever its code (an Error's too)
        d = msgspec.structs.replace(d, message=with_post_filter(d.message, post.status.message))
        if post.status.code is Code.SUCCESS and post.nominated_node:
            d = msgspec.structs.replace(d, nominated_node=post.nominated_node, victims=list(post.victims))
        outcome.decision = d
        return outcome

    def _sample(self, feasible: Mask, outside: Mask | None = None) -> Mask:
        """percentageOfNodesToScore: the first feasible nodes from where the last cycle stopped
        (berth.core.scheduler.sampling); the others are neither scored nor listed. outside: the
        nodes a PreFilter's node set left out; kube searches the others only, and the next search
        starts as many nodes further on as it looked at."""
        nodes = self.state.nodes
        searched = nodes.valid if outside is None else nodes.valid & ~outside
        count = len(nodes) if outside is None else int(np.count_nonzero(searched))
        k = num_feasible_nodes_to_find(self.profile.percentage_of_nodes_to_score, count)
        if k >= count:  # every node is looked at: without a node set, the next search starts where this one did
            if outside is not None and len(nodes):
                self.next_start = (self.next_start + count) % len(nodes)
            return feasible
        slots = np.flatnonzero(searched)  # listed only when the search stops early
        order = slots[np.argsort(nodes.name_rank()[slots], kind="stable")]
        kept, processed = first_feasible(feasible, order, self.next_start, k)
        self.next_start = (self.next_start + processed) % len(nodes)
        return kept

    def _post_filter(self, cycle: Cycle, statuses: NodeToStatus) -> PostFilterResult | None:
        """kube's RunPostFilterPlugins: the plugins in order until one succeeds, rejects the pod outright
        or fails; otherwise Unschedulable with every plugin's reasons joined by ", " (a Status's
        Message()), the first rejecting plugin's name and the last result that nominates or clears."""
        result = None
        reasons: list[str] = []
        rejector = ""
        for plugin in self.profile.post_filters:
            found = self._timed(plugin.name, "PostFilter", plugin.post_filter, cycle, statuses, self.dry_runner)
            if found.status.code in (Code.SUCCESS, Code.UNRESOLVABLE, Code.ERROR):
                return found
            if found.nominated_node is not None:
                result = found
            if found.status.message:
                reasons.append(found.status.message)
            rejector = rejector or found.status.plugin or plugin.name
        if result is None and not rejector:
            return None
        status = Status(Code.UNSCHEDULABLE, ", ".join(reasons), rejector)
        return PostFilterResult(status) if result is None else replace(result, status=status)

    def reserve(self, cycle: Cycle, slot: int) -> Status | None:
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
        return Outcome(results.error(pod, message), None)

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

    def run(self, pods: list[Pod], now: datetime) -> list[Decision]:
        """Decide pods one after another; each Scheduled decision is reserved before the next. A
        preemption is taken as done (kube's nominator): its victims are gone and the pod is
        nominated to its node, where the later pods of no higher priority see it placed."""
        return [outcome.decision for outcome in self.run_outcomes(pods, now)]

    def run_outcomes(self, pods: list[Pod], now: datetime) -> list[Outcome]:
        """run, with each pod's whole outcome."""
        outcomes = []
        for pod in pods:
            outcome = self.decide(pod, now)
            if outcome.reservation is not None:
                self.state.reserve(outcome.reservation)
            else:
                self.nominate(pod, outcome)
            outcomes.append(outcome)
        return outcomes

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
            self.nominator.clear(pod.key)
        if post.status.code is not Code.SUCCESS or not post.nominated_node:
            return
        self.clear_nominations(pod, post.nominated_node, post.victims)
        for victim in post.victims:
            self.state.lift(victim)
        self.nominator.hold(pod, post.nominated_node)

    def clear_nominations(self, preemptor: Pod, node: str, victims: Iterable[str]) -> list[str]:
        """kube's asynchronous preemption (prepareCandidateAsync, on by default in 1.36): when a
        victim is not being deleted already, the pods nominated to the node with a priority below
        the preemptor's lose their nomination (getLowerPriorityNominatedPods); returns them. It does
        not retry them: kube's status-only update of a pending pod matches no plugin's event."""
        pods = self.state.pods
        if all((victim := pods.get(key)) is not None and victim.deleting for key in victims):
            return []
        return self.nominator.clear_lower(node, self.state.priority(preemptor))


# what fails on a node: (plugin, ((reason, code), ...)) for each failing plugin, in filter order
_Failing = tuple[tuple[str, tuple[tuple[str, Code], ...]], ...]


def _replaced(found: _Filtered, failing: Mapping[_Failing, Sequence[int] | Slots]) -> _Filtered:
    """What the filters found, with the nodes that fail with their nominated pods placed rejected,
    that failure in place of theirs (by what fails there: the slots)."""
    if not failing:
        return found
    n = len(found.feasible)
    replaced = np.zeros(n, dtype=bool)
    extra: list[tuple[str, list[Failure]]] = []
    for what, slots in failing.items():
        here = np.zeros(n, dtype=bool)
        here[slots] = True
        replaced |= here
        extra.extend((plugin, [Failure(here, reason, code) for reason, code in hits]) for plugin, hits in what)
    out = _Filtered(found.feasible & ~replaced, outside=found.outside, with_nodes=found.with_nodes)
    out.passed = found.passed & ~replaced if found.passed is not None else None
    for name, by_plugin in found.by_plugin:
        kept = [Failure(f.mask & ~replaced, f.reason, f.code) for f in by_plugin]
        kept = [f for f in kept if f.mask.any()]
        if kept:
            out.by_plugin.append((name, kept))
    out.by_plugin.extend(extra)
    out.failures = [f for _, by_plugin in out.by_plugin for f in by_plugin]
    return out


def _none_counted(pods: list[Pod], counted: set[str]) -> bool:
    """None of these nominated pods is counted on a node yet (`counted`: ClusterState.counted of
    them or more): placing them adds their requests."""
    return not counted or counted.isdisjoint(p.key for p in pods)


def _hits_of(failures: list[Failure], code: int) -> tuple[tuple[str, Code], ...]:
    """The (reason, code) of the failures whose bits the code holds (results.failure_codes), in order."""
    return tuple((f.reason, f.code) for bit, f in enumerate(failures) if code >> bit & 1)


def _hits(failures: list[Failure], n: int) -> list[tuple[tuple[str, Code], ...]]:
    """Per slot of n, the (reason, code) of the failures whose mask holds it, in their order; the
    same tuple for slots that fail alike. Each slot's failures are read as the bits of one number
    (a node fit's: one or two per resource), past results.CODE_BITS of them slot by slot."""
    if len(failures) > results.CODE_BITS:
        masks = [f.mask.tolist() for f in failures]
        return [tuple((f.reason, f.code) for f, mask in zip(failures, masks, strict=True) if mask[i]) for i in range(n)]
    codes = results.failure_codes([f.mask for f in failures], n)
    hits = {code: _hits_of(failures, code) for code in np.unique(codes).tolist()}
    return [hits[code] for code in codes.tolist()]


def _failing_at(by_plugin: list[tuple[str, list[Failure]]], slot: int) -> _Failing:
    """What fails on the slot, from failures by plugin (a node set's own entry, "", left out)."""
    out = []
    for name, failures in by_plugin:
        hits = tuple((f.reason, f.code) for f in failures if f.mask[slot])
        if name and hits:
            out.append((name, hits))
    return tuple(out)
