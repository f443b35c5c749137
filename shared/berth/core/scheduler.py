"""One scheduling cycle per pod: PreFilter, Filter, Score over all nodes, then pick the best."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

import numpy as np

from berth.core.decision import Decision, NodeResult, Provision, VolumeBindingOut, fit_error
from berth.core.framework import Code, Cycle, Failure, FilterError, FilterPlugin, Mask, ScorePlugin
from berth.core.model import Pod
from berth.core.plugins.volumebinding import VolumeBinding
from berth.core.state import ClusterState, Extension, Reservation

T = TypeVar("T")


@dataclass(frozen=True)
class Profile:
    """The enabled plugins: filters in run order, scorers with their weights."""

    filters: tuple[FilterPlugin, ...]
    scorers: tuple[tuple[ScorePlugin, int], ...]
    extensions: tuple[Extension, ...] = ()  # state the plugins keep (e.g. NodeMetrics)


@dataclass
class Outcome:
    decision: Decision
    reservation: Reservation | None
    rejected_by: frozenset[str] = frozenset()  # plugins that turned nodes (or the pod) away
    pre_filter_rejected: bool = False  # a PreFilter turned the pod away: no node can help (unresolvable)


class Scheduler:
    def __init__(self, state: ClusterState, profile: Profile, top_nodes: int | None = None) -> None:
        """top_nodes: None lists every node in a decision; N lists only the N best feasible ones."""
        self.state = state
        self.profile = profile
        self.top_nodes = top_nodes
        # observe(plugin, extension point, seconds): timings for metrics; ("", "Decide", s) per pod
        self.observe: Callable[[str, str, float], None] | None = None
        for ext in profile.extensions:
            state.attach(ext)

    def decide(self, pod: Pod, now: datetime, on: str | None = None) -> Outcome:
        """on: place the pod on this node (if feasible there) instead of the best one (the extender's bind)."""
        if self.observe is None:
            return self._decide(pod, now, on)
        start = time.perf_counter()
        outcome = self._decide(pod, now, on)
        self.observe("", "Decide", time.perf_counter() - start)
        return outcome

    def _timed(self, plugin: str, point: str, fn: Callable[..., T], *args: Any) -> T:
        if self.observe is None:
            return fn(*args)
        start = time.perf_counter()
        out = fn(*args)
        self.observe(plugin, point, time.perf_counter() - start)
        return out

    def _decide(self, pod: Pod, now: datetime, on: str | None = None) -> Outcome:
        cycle = Cycle(pod=pod, state=self.state, now=now)
        nodes = self.state.nodes
        total_nodes = len(nodes)
        active: list[FilterPlugin] = []
        for plugin in self.profile.filters:
            status = self._timed(plugin.name, "PreFilter", plugin.pre_filter, cycle)
            if status.code is Code.ERROR:
                return self._error(pod, status.message)
            if status.rejects:
                message = f"0/{total_nodes} nodes are available: {status.message}."
                # only feasible nodes are listed with top_nodes, and there is none; else one shared
                # result for every node (results are never changed once made)
                rejected_here = NodeResult(feasible=False, reasons=[status.message])
                every = dict.fromkeys(sorted(nodes.slot), rejected_here) if self.top_nodes is None else {}
                return Outcome(
                    Decision(pod.key, "Unschedulable", None, message, nodes=every),
                    None,
                    frozenset({plugin.name}),
                    pre_filter_rejected=True,
                )
            if status.code is not Code.SKIP:
                active.append(plugin)
        failures: list[Failure] = []
        rejected: set[str] = set()
        try:
            for plugin in active:
                found = self._timed(plugin.name, "Filter", plugin.filter, cycle)
                failing = [f for f in found if f.mask.any()]
                failures.extend(failing)
                if failing:
                    rejected.add(plugin.name)
        except FilterError as e:
            return self._error(pod, str(e))
        feasible = nodes.valid.copy()
        for f in failures:
            feasible &= ~f.mask
        scores: dict[str, np.ndarray] = {}
        if feasible.any():
            for p, _ in self.profile.scorers:
                scores[p.name] = self._timed(p.name, "Score", p.score, cycle, feasible)
        total = np.zeros(len(nodes.valid), dtype=np.int64)
        for p, weight in self.profile.scorers:
            if p.name in scores:
                total += weight * scores[p.name]
        key = self._rank_key(feasible, total)
        results = self._node_results(failures, feasible, scores, total, key)
        chosen: int | None = None
        if on is not None:
            wanted = nodes.slot.get(on)
            if wanted is None or not feasible[wanted]:
                known = results.get(on)
                why = "not known" if wanted is None else "; ".join(known.reasons if known else []) or "not feasible"
                message = f"{pod.key} does not fit on node {on}: {why}"
                return Outcome(
                    Decision(pod.key, "Unschedulable", None, message, nodes=results), None, frozenset(rejected)
                )
            chosen = wanted
        if not feasible.any():
            counts: dict[str, int] = {}
            for f in failures:
                counts[f.reason] = counts.get(f.reason, 0) + int(f.mask.sum())
            message = fit_error(total_nodes, counts)
            return Outcome(Decision(pod.key, "Unschedulable", None, message, nodes=results), None, frozenset(rejected))
        slot = int(np.argmax(key)) if chosen is None else chosen  # the highest total; ties go to the node name
        node = nodes.names[slot] or ""
        bindings, provisions = self._volumes(cycle, slot)
        out = [VolumeBindingOut(claim=c, pv=v) for c, v in bindings]
        out += [
            VolumeBindingOut(claim=c, provision=Provision(self.state.pvcs[c].storage_class, node)) for c in provisions
        ]
        order = {f"{pod.namespace}/{v.claim_name}": i for i, v in enumerate(pod.volumes)}
        out.sort(key=lambda b: order.get(b.claim, 0))
        message = f"Successfully assigned {pod.key} to {node}"
        decision = Decision(pod.key, "Scheduled", node, message, volume_bindings=out, nodes=results)
        return Outcome(decision, Reservation(pod, node, tuple(bindings), tuple(provisions)))

    def _error(self, pod: Pod, message: str) -> Outcome:
        return Outcome(Decision(pod.key, "Error", None, message), None)

    def _rank_key(self, feasible: Mask, total: np.ndarray) -> np.ndarray:
        """One int per slot that orders by total, then by node name; -1 where infeasible."""
        n = len(total)
        key = total * (n + 1)
        key += n
        key -= self.state.nodes.name_rank()
        key[~feasible] = -1
        return key

    def _volumes(self, cycle: Cycle, slot: int) -> tuple[list[tuple[str, str]], list[str]]:
        vb = next((p for p in self.profile.filters if isinstance(p, VolumeBinding)), None)
        return ([], []) if vb is None else vb.volumes_on(cycle, slot)

    def _node_results(
        self,
        failures: list[Failure],
        feasible: Mask,
        scores: dict[str, np.ndarray],
        total: np.ndarray,
        key: np.ndarray,
    ) -> dict[str, NodeResult]:
        names = self.state.nodes.names
        if self.top_nodes is not None:
            return self._top_results(feasible, scores, total, key)
        reasons: dict[int, tuple[str, ...]] = {}
        for f in failures:
            for s in np.flatnonzero(f.mask).tolist():
                reasons[s] = (*reasons.get(s, ()), f.reason)
        rejected: dict[tuple[str, ...], NodeResult] = {}  # one result per set of reasons, shared
        out: dict[str, NodeResult] = {}
        columns = [(k, v.tolist()) for k, v in scores.items()]
        totals = total.tolist()
        ok = feasible.tolist()
        slots = np.flatnonzero(self.state.nodes.valid)
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
        self, feasible: Mask, scores: dict[str, np.ndarray], total: np.ndarray, key: np.ndarray
    ) -> dict[str, NodeResult]:
        """The top_nodes feasible nodes, highest total first, then node name (keys are unique)."""
        names = self.state.nodes.names
        k = self.top_nodes or 0
        idx = np.flatnonzero(feasible)
        if not k or not len(idx):
            return {}
        if len(idx) > k:
            idx = idx[np.argpartition(key[idx], len(idx) - k)[len(idx) - k :]]
        best = idx[np.argsort(-key[idx], kind="stable")].tolist()
        return {
            names[s] or "": NodeResult(True, [], {k: int(v[s]) for k, v in scores.items()}, int(total[s])) for s in best
        }

    def run(self, pods: list[Pod], now: datetime) -> list[Decision]:
        """Decide pods one after another; each Scheduled decision is reserved before the next."""
        decisions = []
        for pod in pods:
            outcome = self.decide(pod, now)
            if outcome.reservation is not None:
                self.state.reserve(outcome.reservation)
            decisions.append(outcome.decision)
        return decisions
