"""LoadAwareScheduling: Koordinator's load-aware Filter and Score over all node slots at once."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import numpy as np
import numpy.typing as npt

from berth.core.errors import ConfigError
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
    Shape,
    Slots,
    Status,
    never,
)
from berth.core.loadaware.args import PLUGIN, LoadAwareSchedulingArgs, validate
from berth.core.loadaware.model import NodeMetric
from berth.core.loadaware.store import US, NodeMetricStore, to_us
from berth.core.loadaware.vectors import Resources, Vec
from berth.core.model import Pod
from berth.core.state import ClusterState

NAME = PLUGIN
Args = LoadAwareSchedulingArgs
EXPIRED = "node(s) nodeMetric expired"
NOT_ATTACHED = "LoadAwareScheduling: its NodeMetric store is not a ClusterState extension"
_KEY = NAME
_EXPIRED = NAME + "/expired"


def usage_reason(resource: str, aggregated: bool) -> str:
    return f"node(s) {resource} {'aggregated ' if aggregated else ''}usage exceed threshold"


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
        self._matrices: dict[int, tuple[Vec, Mask, Mask]] = {}
        # every reason the Filter gives, in its order (berth.core.incremental)
        reasons = [(EXPIRED, Code.UNSCHEDULABLE)] if self.args.filter_expired_node_metrics else []
        for resource in self.res.names:
            reasons += [(usage_reason(resource, agg), Code.UNSCHEDULABLE) for agg in (False, True)]
        self._reasons = tuple(reasons)
        self.weights: Vec | None = self.res.vec(self.args.resource_weights)
        if self.args.dominant_resource_weight == 0 and not self.weights.any():
            self.weights = None  # upstream's nil weight vector: every score is 0

    def extension(self) -> NodeMetricStore:
        return self.store

    def events_to_register(self) -> tuple[ClusterEventWithHint, ...]:
        return (
            ClusterEventWithHint(ClusterEvent("Node", Action.ALL)),
            ClusterEventWithHint(ClusterEvent("NodeMetric", Action.ALL), self.metric_hint),
            ClusterEventWithHint(ClusterEvent("Pod", Action.DELETE)),  # its load leaves the node
        )

    # ---- per cycle --------------------------------------------------------
    def _prepare(self, cycle: Cycle) -> tuple[Vec, bool] | None:
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

    def _expired(self, cycle: Cycle) -> Mask:
        """Per slot, computed once per cycle (the store does not change within one)."""
        got: Mask | None = cycle.data.get(_EXPIRED)
        if got is None or len(got) != len(self.store.has_time):
            st = self.store
            limit = self.args.node_metric_expiration_seconds * US
            got = cycle.data[_EXPIRED] = ~st.has_time | (to_us(cycle.now) - st.time_us >= limit)
        return got

    def pre_filter(self, cycle: Cycle) -> Status:
        if self._prepare(cycle) is None:
            return Status(Code.ERROR, NOT_ATTACHED)
        return SKIP if is_daemonset(cycle.pod) else OK

    # ---- Filter -------------------------------------------------------------
    def filter(self, cycle: Cycle) -> list[Failure]:
        return self._filter(cycle, None)

    def _filter(self, cycle: Cycle, slots: Slots | None) -> list[Failure]:
        """On every slot, or on these slots only (masks over them)."""
        prepared = self._prepare(cycle)
        if prepared is None:
            return [Failure(cycle.state.nodes.valid, NOT_ATTACHED, Code.ERROR)]
        est, prod_pod = prepared
        if is_daemonset(cycle.pod):
            return []
        st = self.store.views()
        v = 1 if prod_pod else 0
        ex, half, alloc = st.f_ex[v], st.f_half[v], st.alloc_f
        agg_path, f_check, valid = st.f_agg[v], st.f_check[v], cycle.state.nodes.valid
        if slots is not None:
            ex, half, alloc = ex[:, slots], half[:, slots], alloc[:, slots]
            agg_path, f_check, valid = agg_path[slots], f_check[slots], valid[slots]
        check = valid & f_check
        out = []
        if self.args.filter_expired_node_metrics:
            expired = self._expired(cycle)
            expired = check & (expired if slots is None else expired[slots])
            if not self.args.enable_schedule_when_node_metrics_expired and expired.any():
                out.append(Failure(expired, EXPIRED))
            check &= ~expired
        check &= st.has_nm if slots is None else st.has_nm[slots]
        if not check.any():
            return out
        # Go's Round(used / alloc * 100) > thr  <=>  used / alloc * 100 >= thr + 0.5 (exact for floats).
        # A node fails on the first resource over its threshold, in resource-name order.
        failing = np.zeros(len(check), dtype=bool)
        for r, resource in enumerate(self.res.names):
            pct = (ex[r] + est[r]) / alloc[r]
            pct *= 100
            hit = pct >= half[r]
            hit &= check
            hit &= ~failing
            if not hit.any():
                continue
            failing |= hit
            for aggregated in (False, True):
                mask = hit & (agg_path if aggregated else ~agg_path)
                if mask.any():
                    out.append(Failure(mask, usage_reason(resource, aggregated)))
        return out

    # ---- node-local (berth.core.incremental) ----------------------------------
    # A node's answer reads the store's rows for it (touched on each change), the pod's estimate and
    # whether it is prod, and whether the node's metric has expired at cycle.now (moving).
    def filter_shape(self, cycle: Cycle) -> Shape | None:
        prepared = self._prepare(cycle)
        if prepared is None or is_daemonset(cycle.pod):
            return None
        return Shape(self._shape_key(prepared, prepared[1]), self._reasons)

    def filter_on(self, cycle: Cycle, slots: Slots) -> list[Failure]:
        return self._filter(cycle, slots)

    def score_shape(self, cycle: Cycle) -> Shape | None:
        prepared = self._prepare(cycle)
        if prepared is None or self.weights is None:
            return None
        return Shape(self._shape_key(prepared, prepared[1] and self.args.score_according_prod_usage))

    def score_on(self, cycle: Cycle, slots: Slots) -> Scores:
        return self._score(cycle, np.ones(len(slots), dtype=bool), slots)

    def moving(self, cycle: Cycle) -> npt.NDArray[Any] | None:
        return self._expired(cycle)[: len(cycle.state.nodes.valid)]

    def _shape_key(self, prepared: tuple[Vec, bool], prod: bool) -> tuple[bytes, bool, int]:
        self.store.views()  # a store woken now counts as changed everywhere
        return prepared[0].tobytes(), prod, self.store.generation

    # ---- queueing hint (kube's QueueingHintFn) -------------------------------
    def metric_hint(self, state: ClusterState, obj: Any, now: datetime) -> Hint:
        """For a NodeMetric change: retry a pod this plugin rejected only if that node passes now.
        Other nodes did not change, so a pod that still fails there would fail everywhere again."""
        assert isinstance(obj, NodeMetric)
        slot = state.nodes.slot.get(obj.name)
        zero = self.res.zeros()[None, :]
        if slot is None or not any(self._judge(state, slot, now, v, zero)[0] for v in (0, 1)):
            return never  # fails even with no load added
        return lambda pods, version: self._hint(state, slot, now, pods, version)

    def passes(self, state: ClusterState, pod: Pod, slot: int, now: datetime) -> bool:
        """The Filter for one node and one pod (tests check it against filter())."""
        return bool(self._hint(state, slot, now, [pod], None)[0])

    def _hint(self, state: ClusterState, slot: int, now: datetime, pods: list[Pod | None], version: int | None) -> Mask:
        est, prod, free = self._pods_matrix(pods, version)
        out = free.copy()
        for v in (0, 1):
            rows = (prod == bool(v)) & ~free
            if rows.any():
                out[rows] = self._judge(state, slot, now, v, est[rows])
        return out

    def _pods_matrix(self, pods: list[Pod | None], version: int | None) -> tuple[Vec, Mask, Mask]:
        """(estimates, prod pod, not judged: DaemonSet or gone) for a list of pods, cached per version."""
        got = self._matrices.get(version) if version is not None else None
        if got is not None:
            return got
        est = np.zeros((len(pods), self.res.size), dtype=np.int64)
        prod = np.zeros(len(pods), dtype=bool)
        free = np.zeros(len(pods), dtype=bool)
        for i, pod in enumerate(pods):
            if pod is None or is_daemonset(pod):
                free[i] = True
                continue
            est[i], prod[i] = self._estimate(pod)
        got = (est, prod, free)
        if version is not None:
            if len(self._matrices) >= 256:
                self._matrices.clear()
            self._matrices[version] = got
        return got

    def _judge(self, state: ClusterState, slot: int, now: datetime, v: int, est: Vec) -> Mask:
        """The Filter on one node for rows of estimates (pods of one kind: v = 1 for prod)."""
        st = self.store.views()
        if not state.nodes.valid[slot] or not st.f_check[v][slot]:
            return np.ones(len(est), dtype=bool)
        if self.args.filter_expired_node_metrics:
            limit = self.args.node_metric_expiration_seconds * US
            if not st.has_time[slot] or to_us(now) - int(st.time_us[slot]) >= limit:
                return np.full(len(est), bool(self.args.enable_schedule_when_node_metrics_expired))
        if not st.has_nm[slot]:
            return np.ones(len(est), dtype=bool)
        pct = (st.f_ex[v][:, slot] + est) / st.alloc_f[:, slot]
        pct *= 100
        passing: Mask = np.all(pct < st.f_half[v][:, slot], axis=1)
        return passing

    # ---- Score --------------------------------------------------------------
    def score(self, cycle: Cycle, feasible: Mask) -> Scores:
        return self._score(cycle, feasible, None)

    def _score(self, cycle: Cycle, feasible: Mask, slots: Slots | None) -> Scores:
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


def least_used(used: Vec, safe: Vec, zero: Mask, weights: Vec, dominant_weight: int) -> Scores:
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
