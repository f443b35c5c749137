"""LoadAwareScheduling: Koordinator's load-aware Filter and Score over all node slots at once."""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from berth.core.errors import ConfigError
from berth.core.framework import OK, SKIP, Code, Cycle, Failure, FilterError, Mask, Scores, Status
from berth.core.loadaware.args import LoadAwareSchedulingArgs, validate
from berth.core.loadaware.estimator import PROD, priority_class
from berth.core.loadaware.store import US, NodeMetricStore, to_us
from berth.core.loadaware.vectors import Resources, Vec, round_half_away_array
from berth.core.model import Pod
from berth.core.state import ClusterState

EXPIRED = "node(s) nodeMetric expired"
_KEY = "LoadAwareScheduling"


def usage_reason(resource: str, aggregated: bool) -> str:
    return f"node(s) {resource} {'aggregated ' if aggregated else ''}usage exceed threshold"


def is_daemonset(pod: Pod) -> bool:
    return any(o.kind == "DaemonSet" for o in pod.owner_refs)


class LoadAwareScheduling:
    """Filter and Score. Register `self.store` as a ClusterState extension."""

    name: ClassVar[str] = "LoadAwareScheduling"

    def __init__(self, args: LoadAwareSchedulingArgs | None = None) -> None:
        self.args = args if args is not None else LoadAwareSchedulingArgs()
        problems = validate(self.args)
        if problems:
            raise ConfigError(problems)
        self.res = Resources.of(self.args)
        self.store = NodeMetricStore(self.args, self.res)
        self.weights: Vec | None = self.res.vec(self.args.resource_weights)
        if self.args.dominant_resource_weight == 0 and not self.weights.any():
            self.weights = None  # upstream's nil weight vector: every score is 0

    # ---- per cycle --------------------------------------------------------
    def _prepare(self, cycle: Cycle) -> tuple[Vec, bool]:
        """(incoming estimate, pod is prod), computed once per cycle; syncs node slots."""
        got = cycle.data.get(_KEY)
        if got is None:
            state: ClusterState = cycle.state
            if not any(ext is self.store for ext in state.extensions):
                raise FilterError("LoadAwareScheduling: its NodeMetric store is not a ClusterState extension")
            got = (self.store.estimator.estimate(cycle.pod), priority_class(cycle.pod) == PROD)
            cycle.data[_KEY] = got
        est, prod = got
        return est, prod

    def _expired(self, cycle: Cycle) -> Mask:
        st = self.store
        limit = self.args.node_metric_expiration_seconds * US
        return ~st.has_time | (to_us(cycle.now) - st.time_us >= limit)

    def pre_filter(self, cycle: Cycle) -> Status:
        try:
            self._prepare(cycle)
        except FilterError as e:
            return Status(Code.ERROR, str(e))
        return SKIP if is_daemonset(cycle.pod) else OK

    # ---- Filter -------------------------------------------------------------
    def filter(self, cycle: Cycle) -> list[Failure]:
        est, prod_pod = self._prepare(cycle)
        if is_daemonset(cycle.pod):
            return []
        st = self.store
        valid = cycle.state.nodes.valid
        prod_path = st.prod_on & prod_pod
        agg_path = ~prod_path & st.agg_on
        thr = np.where(prod_path[:, None], st.thr_prod, np.where(agg_path[:, None], st.thr_agg, st.thr_usage))
        check = valid & st.has_metric & (thr != 0).any(axis=1)
        out = []
        if self.args.filter_expired_node_metrics:
            expired = check & self._expired(cycle)
            if not self.args.enable_schedule_when_node_metrics_expired and expired.any():
                out.append(Failure(expired, EXPIRED))
            check &= ~expired
        check &= st.has_nm
        if not check.any():
            return out
        existing = np.where(
            prod_path[:, None],
            st.prod,
            np.where(agg_path[:, None], st.existing_agg(st.agg_f_ok, st.agg_f), st.existing_node()),
        )
        used = (existing + est).astype(np.float64)
        alloc = st.alloc
        pct = round_half_away_array(used / np.where(alloc == 0, 1, alloc).astype(np.float64) * 100)
        over = (pct > thr) & (thr != 0) & (alloc != 0) & check[:, None]
        failing = over.any(axis=1)
        if not failing.any():
            return out
        first = over.argmax(axis=1)
        for i, resource in enumerate(self.res.names):
            hit = failing & (first == i)
            if not hit.any():
                continue
            for aggregated in (False, True):
                mask = hit & (agg_path if aggregated else ~agg_path)
                if mask.any():
                    out.append(Failure(mask, usage_reason(resource, aggregated)))
        return out

    # ---- Score --------------------------------------------------------------
    def score(self, cycle: Cycle, feasible: Mask) -> Scores:
        est, prod_pod = self._prepare(cycle)
        st = self.store
        size = len(cycle.state.nodes.valid)
        if self.weights is None:
            return np.zeros(size, dtype=np.int64)
        ok = feasible & cycle.state.nodes.valid & st.has_metric & st.has_nm & ~self._expired(cycle)
        if prod_pod and self.args.score_according_prod_usage:
            existing = st.prod
        elif st.score_agg is not None:
            existing = st.existing_agg(st.agg_s_ok, st.agg_s)
        else:
            existing = st.existing_node()
        return np.where(ok, least_used(existing + est, st.alloc, self.weights, self.args.dominant_resource_weight), 0)


def least_used(used: Vec, cap: Vec, weights: Vec, dominant_weight: int) -> Scores:
    """Upstream's integer score per row: weighted least-used plus the optional dominant term."""
    safe = np.where(cap == 0, 1, cap)
    per = np.where((cap == 0) | (used > cap), 0, ((cap - used) * 100) // safe)
    total = per @ weights
    denom = int(weights.sum()) + dominant_weight
    if dominant_weight > 0:
        total = total + np.minimum(per.min(axis=1), 100) * dominant_weight
    if denom <= 0:
        return np.zeros(len(used), dtype=np.int64)
    return np.clip(total // denom, 0, 100).astype(np.int64)
