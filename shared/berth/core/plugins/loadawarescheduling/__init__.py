"""LoadAwareScheduling: Koordinator's load-aware Filter and Score over all node slots at once."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import numpy as np
import numpy.typing as npt

from berth.core import framework as fwk
from berth.core.api.core.model import Pod
from berth.core.api.koordinator.model import NodeMetric
from berth.core.cache.state import ClusterState
from berth.core.errors import ConfigError
from berth.core.plugins.loadawarescheduling.args import PLUGIN, LoadAwareSchedulingArgs, validate
from berth.core.plugins.loadawarescheduling.store import US, NodeMetricStore, to_us
from berth.core.plugins.loadawarescheduling.vectors import Resources, Vec

NAME = PLUGIN
Args = LoadAwareSchedulingArgs
EXPIRED = "node(s) nodeMetric expired"
NOT_ATTACHED = "LoadAwareScheduling: its NodeMetric store is not a ClusterState extension"
_KEY = NAME
_EXPIRED = NAME + "/expired"


def usage_reason(resource: str, aggregated: bool) -> str:
    return f"node(s) {resource} {'aggregated ' if aggregated else ''}usage exceed threshold"


BOUND = 2**62  # estimates and usage below this in size: their int64 sums cannot overflow


class Judge:
    """The Filter on one node for rows of estimates: which of them pass. The test is monotone in
    each resource while the allocatable is positive and the usage and estimates are below BOUND in
    size (an int64 sum that cannot overflow, its float, a division by the allocatable, a product by
    100): an estimate at least as large in every resource as one that fails fails too. So when the
    least estimate of some rows fails, every row does (fails_all)."""

    __slots__ = ("alloc", "ex", "half", "outcome", "py")

    def __init__(self, ex: Vec, alloc: npt.NDArray[np.float64], half: npt.NDArray[np.float64]) -> None:
        self.ex, self.alloc, self.half = ex, alloc, half
        self.outcome: bool | None = None  # every estimate passes (True) or none does (False); None: it depends
        py = list(zip(ex.tolist(), alloc.tolist(), half.tolist(), strict=True))
        monotone = all(a > 0 and -BOUND < e < BOUND for e, a, _ in py)
        # the test in Python floats (the same IEEE operations on the same values, so the same answer)
        self.py = py if monotone else None

    def __call__(self, est: Vec) -> fwk.Mask:
        if self.outcome is not None:
            return np.full(len(est), self.outcome, dtype=bool)
        pct = (self.ex + est) / self.alloc
        pct *= 100
        passing: fwk.Mask = np.all(pct < self.half, axis=1)
        return passing

    def passes(self, est: list[int]) -> bool:
        """The test for one estimate."""
        if self.outcome is not None:
            return self.outcome
        if self.py is None or not all(-BOUND < e < BOUND for e in est):
            return bool(self(np.array([est], dtype=np.int64))[0])
        return all((ex + e) / alloc * 100 < half for (ex, alloc, half), e in zip(self.py, est, strict=True))

    def fails_all(self, floor: list[int] | None) -> bool:
        """Whether every estimate at least `floor` in every resource fails (False: not known). floor:
        values below BOUND in size, or None."""
        if self.outcome is not None:
            return not self.outcome
        return floor is not None and self.py is not None and not self.passes(floor)


def _fixed(outcome: bool) -> Judge:
    judge = Judge(np.zeros(0, dtype=np.int64), np.ones(0), np.zeros(0))
    judge.outcome = outcome
    return judge


_ALL_PASS, _NONE_PASS = _fixed(True), _fixed(False)
_Parts = tuple[tuple[fwk.Mask, Vec, list[int] | None] | None, tuple[fwk.Mask, Vec, list[int] | None] | None]


def is_daemonset(pod: Pod) -> bool:
    return any(o.kind == "DaemonSet" for o in pod.owner_refs)


def new(args: Any, handle: ClusterState) -> LoadAwareScheduling:
    return LoadAwareScheduling(args if args is not None else LoadAwareSchedulingArgs())


class LoadAwareScheduling:
    """PreFilter, Filter and Score; keeps NodeMetrics and the assigned pods' load in its store (its
    ClusterState extension)."""

    name = NAME

    def __init__(self, args: LoadAwareSchedulingArgs) -> None:
        self.args = args
        problems = validate(self.args)
        if problems:
            raise ConfigError(problems)
        self.res = Resources.of(self.args)
        self.store = NodeMetricStore(self.args, self.res)
        # for queueing hints: estimates per pod list (a queue group's version)
        self._matrices: dict[int, tuple[fwk.Mask, _Parts]] = {}
        # every reason the Filter gives, in its order (berth.core.framework.runtime.incremental)
        reasons = [(EXPIRED, fwk.Code.UNSCHEDULABLE)] if self.args.filter_expired_node_metrics else []
        for resource in self.res.names:
            reasons += [(usage_reason(resource, agg), fwk.Code.UNSCHEDULABLE) for agg in (False, True)]
        self._reasons = tuple(reasons)
        self.weights: Vec | None = self.res.vec(self.args.resource_weights)
        if self.args.dominant_resource_weight == 0 and not self.weights.any():
            self.weights = None  # upstream's nil weight vector: every score is 0

    def extension(self) -> NodeMetricStore:
        return self.store

    def events_to_register(self) -> tuple[fwk.ClusterEventWithHint, ...]:
        return (
            fwk.ClusterEventWithHint(fwk.ClusterEvent("Node", fwk.Action.ALL)),
            fwk.ClusterEventWithHint(fwk.ClusterEvent("NodeMetric", fwk.Action.ALL), self.metric_hint),
            fwk.ClusterEventWithHint(fwk.ClusterEvent("Pod", fwk.Action.DELETE)),  # its load leaves the node
        )

    # ---- per cycle --------------------------------------------------------
    def _prepare(self, cycle: fwk.Cycle) -> tuple[Vec, bool] | None:
        """(incoming estimate, pod is prod), computed once per cycle; None when the store does not
        serve this cycle's state (an Error)."""
        got: tuple[Vec, bool] | None = cycle.data.get(_KEY)
        if got is None:
            if not any(ext is self.store for ext in cycle.state.extensions):
                return None
            got = cycle.data[_KEY] = self._estimate(cycle.pod)
        return got

    def _estimate(self, pod: Pod) -> tuple[Vec, bool]:
        """(estimate, prod), kept by the store: a waiting pod is estimated once, not per attempt."""
        return self.store.estimate(pod)

    def _expired(self, cycle: fwk.Cycle) -> fwk.Mask:
        """Per slot, computed once per cycle (the store does not change within one)."""
        got: fwk.Mask | None = cycle.data.get(_EXPIRED)
        if got is None or len(got) != len(self.store.has_time):
            st = self.store.views()
            limit = self.args.node_metric_expiration_seconds * US
            got = cycle.data[_EXPIRED] = ~st.has_time | (to_us(cycle.now) - st.time_us >= limit)
        return got

    def pre_filter(self, cycle: fwk.Cycle) -> fwk.Status:
        if self._prepare(cycle) is None:
            return fwk.Status(fwk.Code.ERROR, NOT_ATTACHED)
        return fwk.SKIP if is_daemonset(cycle.pod) else fwk.OK

    # ---- Filter -------------------------------------------------------------
    def filter(self, cycle: fwk.Cycle) -> list[fwk.Failure]:
        return self._filter(cycle, None)

    def _filter(self, cycle: fwk.Cycle, slots: fwk.Slots | None) -> list[fwk.Failure]:
        """On every slot, or on these slots only (masks over them)."""
        prepared = self._prepare(cycle)
        if prepared is None:
            return [fwk.Failure(cycle.state.nodes.valid, NOT_ATTACHED, fwk.Code.ERROR)]
        est, prod_pod = prepared
        if is_daemonset(cycle.pod):
            return []
        st = self.store.views()
        v = 1 if prod_pod else 0
        # float(ex) + float(est) when that is float(ex + est): no int64 pass and conversion per resource
        as_float = st.exact(est)
        ex, half, alloc = st.f_ex_f[v] if as_float else st.f_ex[v], st.f_half[v], st.alloc_f
        agg_path, f_check, valid = st.f_agg[v], st.f_check[v], cycle.state.nodes.valid
        if slots is not None:
            ex, half, alloc = ex[:, slots], half[:, slots], alloc[:, slots]
            agg_path, f_check, valid = agg_path[slots], f_check[slots], valid[slots]
        check = valid & f_check
        out = []
        if self.args.filter_expired_node_metrics:
            expired = self._expired(cycle)
            expired = check & (expired if slots is None else expired[slots])
            if not self.args.enable_schedule_when_node_metrics_expired and np.count_nonzero(expired):
                out.append(fwk.Failure(expired, EXPIRED))
            check &= ~expired
        check &= st.has_nm if slots is None else st.has_nm[slots]
        if not np.count_nonzero(check):
            return out
        # Go's Round(used / alloc * 100) > thr  <=>  used / alloc * 100 >= thr + 0.5 (exact for floats).
        # A node fails on the first resource over its threshold, in resource-name order.
        failing: fwk.Mask | None = None  # nodes failed on an earlier resource
        for r, resource in enumerate(self.res.names):
            if as_float:
                pct = ex[r] + float(est[r])
                pct /= alloc[r]
            else:
                pct = (ex[r] + est[r]) / alloc[r]
            pct *= 100
            hit = pct >= half[r]
            hit &= check
            if failing is not None:
                hit &= ~failing
            if not np.count_nonzero(hit):
                continue
            if failing is None:
                failing = hit.copy()
            else:
                failing |= hit
            # the reason says "aggregated" on the nodes checked by aggregated usage
            on_agg = hit & agg_path
            if np.count_nonzero(on_agg):
                usual = hit & ~agg_path
                if np.count_nonzero(usual):
                    out.append(fwk.Failure(usual, usage_reason(resource, False)))
                out.append(fwk.Failure(on_agg, usage_reason(resource, True)))
            else:
                out.append(fwk.Failure(hit, usage_reason(resource, False)))
        return out

    def explain_filter(self, cycle: fwk.Cycle, slots: fwk.Slots) -> dict[int, list[fwk.Why]]:
        """Per node: its NodeMetric's age against the expiry, or the resource whose usage with the pod's
        estimate is over its threshold (percent of allocatable)."""
        prepared = self._prepare(cycle)
        out: dict[int, list[fwk.Why]] = {}
        if prepared is None:
            return out
        est, prod_pod = prepared
        st = self.store.views()
        v = 1 if prod_pod else 0
        expired = self._expired(cycle)
        limit = self.args.node_metric_expiration_seconds
        now_us = to_us(cycle.now)
        for s in slots.tolist():
            if self.args.filter_expired_node_metrics and expired[s]:
                age = (now_us - int(st.time_us[s])) // US if st.has_time[s] else None
                text = (
                    f"NodeMetric updated {age} s before --now, over nodeMetricExpirationSeconds {limit}"
                    if age is not None
                    else "no NodeMetric update time"
                )
                out[s] = [fwk.Why(EXPIRED, text, {"ageSeconds": age, "expirationSeconds": limit})]
                continue
            for r, resource in enumerate(self.res.names):
                alloc, half = float(st.alloc_f[r, s]), float(st.f_half[v][r, s])
                pct = (float(st.f_ex[v][r, s]) + float(est[r])) / alloc * 100
                if st.f_check[v][s] and pct >= half:
                    aggregated = bool(st.f_agg[v][s])
                    text = f"{resource} usage with this pod's estimate {pct:.1f}% of allocatable, over the threshold {half - 0.5:g}%"
                    facts = {"resource": resource, "usagePercent": round(pct, 1), "thresholdPercent": half - 0.5}
                    out[s] = [fwk.Why(usage_reason(resource, aggregated), text, facts)]
                    break
        return out

    # ---- node-local (berth.core.framework.runtime.incremental) ----------------------------------
    # A node's answer reads the store's rows for it (touched on each change), the pod's estimate and
    # whether it is prod, and whether the node's metric has expired at cycle.now (moving).
    def filter_signature(self, cycle: fwk.Cycle) -> fwk.Signature | None:
        prepared = self._prepare(cycle)
        if prepared is None or is_daemonset(cycle.pod):
            return None
        return fwk.Signature(self._signature_key(prepared, prepared[1]), self._reasons)

    def filter_on(self, cycle: fwk.Cycle, slots: fwk.Slots) -> list[fwk.Failure]:
        return self._filter(cycle, slots)

    def score_signature(self, cycle: fwk.Cycle) -> fwk.Signature | None:
        prepared = self._prepare(cycle)
        if prepared is None or self.weights is None:
            return None
        return fwk.Signature(self._signature_key(prepared, prepared[1] and self.args.score_according_prod_usage))

    def score_on(self, cycle: fwk.Cycle, slots: fwk.Slots) -> fwk.Scores:
        return self._score(cycle, np.ones(len(slots), dtype=bool), slots)

    def moving(self, cycle: fwk.Cycle) -> npt.NDArray[Any] | None:
        return self._expired(cycle)[: len(cycle.state.nodes.valid)]

    def _signature_key(self, prepared: tuple[Vec, bool], prod: bool) -> tuple[bytes, bool, int]:
        self.store.views()  # a store woken now counts as changed everywhere
        return prepared[0].tobytes(), prod, self.store.generation

    # ---- queueing hint (kube's QueueingHintFn) -------------------------------
    def metric_hint(self, state: ClusterState, obj: Any, now: datetime) -> fwk.Hint:
        """For a NodeMetric change: retry a pod this plugin rejected only if that node passes now.
        Other nodes did not change, so a pod that still fails there would fail everywhere again.
        The node's side of the Filter is read once per change, not once per group of waiting pods."""
        assert isinstance(obj, NodeMetric)
        slot = state.nodes.slot.get(obj.name)
        if slot is None:
            return fwk.never
        judges = self._node_judges(state, slot, now)
        zero = [0] * self.res.size
        if not any(judge.passes(zero) for judge in judges):
            return fwk.never  # fails even with no load added
        return lambda pods, version: self._hint(judges, pods, version)

    def passes(self, state: ClusterState, pod: Pod, slot: int, now: datetime) -> bool:
        """The Filter for one node and one pod (tests check it against filter())."""
        return bool(self._hint(self._node_judges(state, slot, now), [pod], None)[0])

    def _hint(self, judges: tuple[Judge, Judge], pods: list[Pod | None], version: int | None) -> fwk.Mask:
        free, parts = self._pods_matrix(pods, version)
        out = free.copy()
        for judge, part in zip(judges, parts, strict=True):
            if part is not None:
                rows, est, floor = part
                if judge.fails_all(floor):
                    continue  # the least estimate fails: every row does (out is False there)
                out[rows] = judge(est)
        return out

    def _pods_matrix(self, pods: list[Pod | None], version: int | None) -> tuple[fwk.Mask, _Parts]:
        """(not judged: DaemonSet or gone, and per kind of pod (v = 1 for prod) the rows of that kind
        with their estimates and their floor, None when there is none) for a list of pods, cached per
        version. The floor is the least estimate of each resource over the rows (see Judge.passes),
        None when some value is too large for the sums to be exact."""
        got = self._matrices.get(version) if version is not None else None
        if got is not None:
            return got
        n = len(pods)
        free = np.zeros(n, dtype=bool)
        at: tuple[list[int], list[int]] = ([], [])  # per kind, the rows and their estimates
        ests: tuple[list[Vec], list[Vec]] = ([], [])
        for i, pod in enumerate(pods):
            if pod is None or is_daemonset(pod):
                free[i] = True
                continue
            e, prod = self._estimate(pod)
            at[prod].append(i)
            ests[prod].append(e)
        parts: list[tuple[fwk.Mask, Vec, list[int] | None] | None] = []
        for v in (0, 1):
            if not at[v]:
                parts.append(None)
                continue
            rows = np.zeros(n, dtype=bool)
            rows[at[v]] = True
            mine = np.array(ests[v], dtype=np.int64)
            bounded = abs(int(mine.min())) < BOUND and abs(int(mine.max())) < BOUND
            parts.append((rows, mine, mine.min(axis=0).tolist() if bounded else None))
        got = (free, (parts[0], parts[1]))
        if version is not None:
            if len(self._matrices) >= 256:
                self._matrices.clear()
            self._matrices[version] = got
        return got

    def _node_judges(self, state: ClusterState, slot: int, now: datetime) -> tuple[Judge, Judge]:
        """The Filter on one node for rows of estimates, per kind of pod (v = 1 for prod)."""
        st = self.store.views()
        return self._node_judge(st, state, slot, now, 0), self._node_judge(st, state, slot, now, 1)

    def _node_judge(self, st: NodeMetricStore, state: ClusterState, slot: int, now: datetime, v: int) -> Judge:
        if not state.nodes.valid[slot] or not st.f_check[v][slot]:
            return _ALL_PASS
        if self.args.filter_expired_node_metrics:
            limit = self.args.node_metric_expiration_seconds * US
            if not st.has_time[slot] or to_us(now) - int(st.time_us[slot]) >= limit:
                return _ALL_PASS if self.args.enable_schedule_when_node_metrics_expired else _NONE_PASS
        if not st.has_nm[slot]:
            return _ALL_PASS
        return Judge(st.f_ex[v][:, slot].copy(), st.alloc_f[:, slot].copy(), st.f_half[v][:, slot].copy())

    # ---- Score --------------------------------------------------------------
    def score(self, cycle: fwk.Cycle, feasible: fwk.Mask) -> fwk.Scores:
        return self._score(cycle, feasible, None)

    def _score(self, cycle: fwk.Cycle, feasible: fwk.Mask, slots: fwk.Slots | None) -> fwk.Scores:
        """On every slot, or on these slots only (feasible over them)."""
        prepared = self._prepare(cycle)
        if self.weights is None or prepared is None:
            return np.zeros(len(feasible), dtype=np.int64)
        est, prod_pod = prepared
        st = self.store.views()
        ok = st.has_metric & st.has_nm & ~self._expired(cycle)
        existing = st.s_ex[1 if prod_pod and self.args.score_according_prod_usage else 0]
        safe, zero = st.alloc_safe, st.alloc_zero
        if slots is None:
            ok = ok & cycle.state.nodes.valid
        else:
            ok = ok[slots] & cycle.state.nodes.valid[slots]
            existing, safe, zero = existing[:, slots], safe[:, slots], zero[:, slots]
        ok &= feasible
        scores = least_used(existing + est[:, None], safe, zero, self.weights, self.args.dominant_resource_weight)
        scores[~ok] = 0
        return scores


def least_used(used: Vec, safe: Vec, zero: fwk.Mask, weights: Vec, dominant_weight: int) -> fwk.Scores:
    """Upstream's integer score per node: weighted least-used plus the optional dominant term.
    Arrays are resource by node (r x n): used, allocatable with 0 replaced by 1, allocatable == 0."""
    n = used.shape[1]
    denom = int(weights.sum()) + dominant_weight
    if denom <= 0:
        return np.zeros(n, dtype=np.int64)
    total = np.zeros(n, dtype=np.int64)
    lowest = np.full(n, 100, dtype=np.int64)
    for r in range(len(used)):
        free = safe[r] - used[r]
        per = free * 100
        per //= safe[r]
        per[zero[r] | (free < 0)] = 0
        if weights[r]:
            total += per * weights[r]
        if dominant_weight > 0:
            np.minimum(lowest, per, out=lowest)
    if dominant_weight > 0:
        total += lowest * dominant_weight
    total //= denom
    np.maximum(total, 0, out=total)
    np.minimum(total, 100, out=total)
    return total
