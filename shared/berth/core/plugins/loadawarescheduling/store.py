"""Per-node load state, kept incrementally and mirrored into arrays over node slots.

A ClusterState extension: NodeMetrics arrive through `apply`, assigned pods
through `pod_changed`. Per node we keep upstream's sums (nodeDelta, prodDelta,
nodeEstimated, prodUsage), so a pod event costs O(R) and a NodeMetric update
O(pods on that node x R). `sync` mirrors node-derived data (allocatable,
threshold profile) into the slot arrays when node objects change.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np
import numpy.typing as npt

from berth.core.api.core.model import Node, Pod
from berth.core.api.koordinator.model import ANN_RESERVE_POD, ANN_USAGE_THRESHOLDS, NodeMetric
from berth.core.api.koordinator.normalise import aggregated
from berth.core.cache.extension import StateExtension
from berth.core.cache.state import ClusterState
from berth.core.plugins.loadawarescheduling.args import LoadAwareSchedulingArgs
from berth.core.plugins.loadawarescheduling.estimator import PROD, Estimator, node_allocatable, priority_class
from berth.core.plugins.loadawarescheduling.profile import ThresholdProfile, global_profile, node_profile
from berth.core.plugins.loadawarescheduling.vectors import Resources, Vec

Mask = npt.NDArray[np.bool_]
Rows = npt.NDArray[np.int64]

US = 1_000_000  # microseconds per second
_MINUTE = 60 * US  # a NodeMetric's report interval when it has none
ZERO_TIME = -(2**62)  # Go's zero time: before everything
RECENT = 2**62  # a pod assigned "now" (no PodScheduled time): after everything
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_PROFILE_CACHE = 4096
_DERIVED = frozenset({"alloc_safe", "alloc_f", "alloc_zero"})  # with f_* and s_*: rebuilt, not copied
_ONE_BY_ONE = 8  # up to this many changed slots are derived one by one (see views)
_INF = float("inf")
EXACT = 2**52  # integers of smaller size, and sums of two of them, are exact as floats


_US: dict[datetime, int] = {}  # times repeat (a minute's NodeMetrics, pods started together): a bounded cache


def to_us(t: datetime) -> int:
    """Microseconds since the epoch, exactly (naive times are taken as UTC)."""
    us = _US.get(t)
    if us is None:
        d = (t.replace(tzinfo=UTC) if t.tzinfo is None else t) - _EPOCH
        us = (d.days * 86400 + d.seconds) * US + d.microseconds
        if len(_US) >= 8192:
            _US.clear()
        _US[t] = us
    return us


def _condition_time(pod: Pod, kind: str) -> datetime | None:
    for c in pod.conditions:
        if c.type == kind and c.status == "True" and c.last_transition_time is not None:
            return c.last_transition_time
    return None


def _spec(p: Pod) -> tuple[Any, ...]:
    """What upstream compares to decide whether a cached pod is re-evaluated."""
    return (
        p.node_name, p.requests, p.limits, p.priority, p.priority_class_name, p.conditions,
        p.scheduler_name, p.node_selector, p.affinity, p.tolerations, p.volumes,
    )  # fmt: skip


_LEFT_LIMIT = 16384  # entries kept for pods that left (preemption puts them back at once)
_ESTIMATES = 65536  # pods whose estimate is kept (see NodeMetricStore.estimate)


@dataclass(slots=True, eq=False)
class PodEntry:
    """An assigned pod in the cache, and what it currently adds to its node's sums."""

    key: str
    node: str
    est: Vec | None  # None: the estimate is all zeros, never estimated
    prod: bool
    ts: int  # PodScheduled time in us, RECENT when unknown
    deadline: int | None  # forced-estimation deadline in us
    pu: Vec | None = None  # added to prodUsage
    nd: Vec | None = None  # added to nodeDelta
    pd: Vec | None = None  # added to prodDelta


@dataclass(slots=True, eq=False)
class NodeLoad:
    """Upstream's per-node record, keyed by node name."""

    zero: Vec
    metric: NodeMetric | None = None
    window: int = ZERO_TIME  # updateTime in us, kept when a NodeMetric has none
    interval: int = _MINUTE
    built_agg: dict[tuple[str, int], dict[str, int]] | None = None  # see `agg`; None: not built yet
    usage: dict[str, Vec] = field(default_factory=dict)
    prod_pods: set[str] = field(default_factory=set)
    pods: dict[str, PodEntry] = field(default_factory=dict)
    prod_usage: Vec = field(init=False)
    node_delta: Vec = field(init=False)
    prod_delta: Vec = field(init=False)
    node_est: Vec = field(init=False)

    def __post_init__(self) -> None:
        self.reset(self.zero)

    def reset(self, prod_base: Vec) -> None:
        self.prod_usage = prod_base.copy()
        self.node_delta = self.zero.copy()
        self.prod_delta = self.zero.copy()
        self.node_est = self.zero.copy()

    def add(self, e: PodEntry) -> None:
        """Add one pod's contribution (upstream's assign arithmetic)."""
        u = self.usage.get(e.key)
        active = e.prod and e.key in self.prod_pods
        e.pu = u if active else None
        e.nd = e.pd = None
        if e.pu is not None:
            self.prod_usage += e.pu
        if e.est is None:
            return
        should = (
            u is None or self.window - self.interval < e.ts or (e.deadline is not None and e.deadline > self.window)
        )
        if should:
            e.nd = e.est if u is None else np.maximum(e.est - u, 0)
            self.node_delta += e.nd
        self.node_est += e.est
        if e.prod:
            pu = u if active else None  # reported but not counted in prodUsage: full estimate
            if should or pu is None:
                e.pd = e.est if pu is None else np.maximum(e.est - pu, 0)
                self.prod_delta += e.pd

    def remove(self, e: PodEntry) -> None:
        """Take back exactly what `add` added."""
        if e.pu is not None:
            self.prod_usage -= e.pu
        if e.nd is not None:
            self.node_delta -= e.nd
        if e.pd is not None:
            self.prod_delta -= e.pd
        if e.est is not None:
            self.node_est -= e.est

    @property
    def agg(self) -> dict[tuple[str, int], dict[str, int]]:
        """(aggregation type, duration) -> usage as reported (made a Vec when read); duration 0 is the
        longest reported. Built from the metric when first read: most profiles never read it."""
        agg = self.built_agg
        if agg is None:
            agg = self.built_agg = _aggregated(self.metric)
        return agg

    def agg_base(self, kind: str, duration: int, node_usage: Vec, vec: Callable[[dict[str, int]], Vec]) -> Vec | None:
        """Aggregated usage (kind, duration); duration 0 falls back to nodeUsage when missing."""
        rl = self.agg.get((kind, duration))
        if rl is None:
            return node_usage if duration == 0 else None
        return vec(rl)

    @property
    def empty(self) -> bool:
        return self.metric is None and not self.pods


def _aggregated(m: NodeMetric | None) -> dict[tuple[str, int], dict[str, int]]:
    """A NodeMetric's aggregated usages by (type, duration), and by (type, 0) the longest duration."""
    agg: dict[tuple[str, int], dict[str, int]] = {}
    if m is None or not m.has_node_metric:
        return agg
    longest: dict[str, int] = {}
    for a in aggregated(m):
        duration = a.duration
        for kind, rl in a.usage.items():
            if rl:
                agg[(kind, duration)] = rl
                if duration >= longest.get(kind, -1):
                    longest[kind] = duration
    for kind, d in longest.items():
        agg[(kind, 0)] = agg[(kind, d)]
    return agg


class NodeMetricStore(StateExtension):
    """The ClusterState extension for NodeMetrics and the assigned-pod cache."""

    kinds: tuple[type, ...] = (NodeMetric,)
    dozes = True

    def __init__(self, args: LoadAwareSchedulingArgs, resources: Resources | None = None) -> None:
        self.args = args
        self.res = resources or Resources.of(args)
        self.estimator = Estimator(args, self.res)
        self.profile = global_profile(args, self.res)
        a = args.aggregated
        self.score_agg = (
            (a.score_aggregation_type, a.score_aggregated_duration)
            if a is not None and a.score_aggregation_type
            else None
        )
        self.records: dict[str, NodeLoad] = {}
        self.pods: dict[str, PodEntry] = {}
        # entries of pods that just left, by key, with the pod object they were made from: a pod put
        # back as it was (preemption's dry run lifts and restores pods) reuses its entry
        self._left: dict[str, tuple[Pod, PodEntry]] = {}
        self._profiles: dict[str, ThresholdProfile] = {}
        # per pod key: the fields an estimate reads, (estimate, prod); see estimate()
        self._estimates: dict[str, tuple[tuple[Any, ...], Vec, bool, bool]] = {}
        # per value of what an estimate reads (Estimator.inputs): (estimate, prod, has a value > 0)
        self._by_inputs: dict[tuple[Any, ...], tuple[Vec, bool, bool]] = {}
        self._objs: list[Node | None] = []
        self.cap = 0
        self._alloc_arrays(0)
        # dozing: NodeMetrics are only kept (with their times) and the slot arrays left as they are,
        # until the store is next read (see doze)
        self._dozing = False
        self._later: dict[str, Pod | None] = {}  # dozing: pod key -> the pod to assign on waking, None: none
        self._count: dict[str, int] = {}  # dozing: node -> its pods, as the cache would hold them
        self.generation = 0  # bumped when every slot's rows may have changed at once (waking)

    # ---- slot arrays ------------------------------------------------------
    def _alloc_arrays(self, cap: int) -> None:
        r = self.res.size

        def rows() -> Rows:
            return np.zeros((cap, r), dtype=np.int64)

        def flags() -> Mask:
            return np.zeros(cap, dtype=bool)

        self.has_metric, self.has_nm, self.has_time = flags(), flags(), flags()
        self.time_us = np.zeros(cap, dtype=np.int64)
        self.usage, self.delta, self.est, self.prod = rows(), rows(), rows(), rows()
        self.agg_f, self.agg_s = rows(), rows()
        self.agg_f_ok, self.agg_s_ok = flags(), flags()
        self.alloc, self.thr_usage, self.thr_prod, self.thr_agg = rows(), rows(), rows(), rows()
        self.prod_on, self.agg_on = flags(), flags()
        self.agg_key: list[tuple[str, int]] = [("", 0)] * cap

        # derived per slot for Filter and Score, refreshed lazily from the dirty slots (see views);
        # laid out resource by resource (r x cap) so per-resource passes read contiguous memory
        def cols() -> Rows:
            return np.zeros((r, cap), dtype=np.int64)

        self.alloc_safe = np.ones((r, cap), dtype=np.int64)  # allocatable, 0 replaced by 1
        self.alloc_f = np.ones((r, cap), dtype=np.float64)
        self.alloc_zero = np.ones((r, cap), dtype=bool)
        self.f_ex = [cols(), cols()]  # existing usage, [non-prod pod, prod pod]
        # f_ex as floats, and the slots where some of it is at least EXACT in size: where there is
        # none, float(ex) + float(est) is float(ex + est) for any estimate below EXACT (see exact)
        self.f_ex_f = [np.zeros((r, cap), dtype=np.float64), np.zeros((r, cap), dtype=np.float64)]
        self.wide: set[int] = set()
        self.f_half = [np.full((r, cap), np.inf), np.full((r, cap), np.inf)]  # threshold + 0.5; inf: off
        self.f_check = [flags(), flags()]  # has a metric and some threshold
        self.f_agg = [flags(), flags()]  # the reason says "aggregated"
        self.s_ex = [cols(), cols()]  # existing usage for Score, [other pods, prod pods by prod usage]
        self._dirty: set[int] = set()
        # slots whose metric and pod rows lag their node's record: written when next read (views), so a
        # NodeMetric or a pod that no cycle reads before the node's next change costs no array writes
        self._stale: set[int] = set()

    def _grow(self, cap: int) -> None:
        old = {k: v for k, v in vars(self).items() if isinstance(v, np.ndarray) and k not in _DERIVED}
        keys, dirty, stale = self.agg_key, self._dirty, self._stale
        self._alloc_arrays(cap)
        for k, v in old.items():
            getattr(self, k)[: len(v)] = v
        self.agg_key[: len(keys)] = keys
        self._dirty = dirty | set(range(self.cap))  # derived arrays are rebuilt from the raw ones
        self._stale = stale
        self._objs.extend([None] * (cap - len(self._objs)))
        self.cap = cap

    def sync(self, state: ClusterState) -> None:
        """Bring node-derived slot data up to date; O(nodes) identity checks."""
        self.generation += 1
        nodes = state.nodes
        if len(nodes.valid) > self.cap:
            self._grow(len(nodes.valid))
        objs = self._objs
        for s in range(nodes.size):
            n = nodes.node(s)
            if n is not objs[s]:
                objs[s] = n
                self._write_slot(s, n)

    def _profile_of(self, node: Node) -> ThresholdProfile:
        text = node.annotations.get(ANN_USAGE_THRESHOLDS)
        if text is None:
            return self.profile
        p = self._profiles.get(text)
        if p is None:
            if len(self._profiles) >= _PROFILE_CACHE:
                self._profiles.clear()
            p = node_profile(node.annotations, self.profile, self.res, ANN_USAGE_THRESHOLDS)
            self._profiles[text] = p
        return p

    def _write_slot(self, s: int, node: Node | None) -> None:
        if node is None:
            self.alloc[s] = self.thr_usage[s] = self.thr_prod[s] = self.thr_agg[s] = 0
            self.prod_on[s] = self.agg_on[s] = False
            self._write_metric(s, None)
            return
        self.alloc[s] = self.res.vec(node_allocatable(node))
        p = self._profile_of(node)
        self.thr_usage[s] = p.usage
        self.thr_prod[s] = 0 if p.prod is None else p.prod
        self.prod_on[s] = p.prod_on
        self.agg_on[s] = p.agg is not None
        self.thr_agg[s] = 0 if p.agg is None else p.agg
        self.agg_key[s] = (p.agg_type, p.agg_duration)
        self._write_metric(s, self.records.get(node.name))

    def _write_metric(self, s: int, rec: NodeLoad | None) -> None:
        """The metric's and the pods' rows of slot s, from its node's record."""
        self._stale.discard(s)
        m = None if rec is None else rec.metric
        timed = m is not None and m.update_time is not None
        self.has_metric[s] = m is not None
        self.has_nm[s] = m is not None and m.has_node_metric
        self.has_time[s] = timed
        self.time_us[s] = rec.window if rec is not None and timed else 0  # the metric's updateTime, in us
        if rec is None or m is None or not m.has_node_metric:
            self.usage[s] = 0
            self.agg_f_ok[s] = self.agg_s_ok[s] = False
        else:
            vec = self.res.vec
            node_usage = self.usage[s] = vec(m.node_usage)
            # agg_f and agg_s are read only where agg_f_ok and agg_s_ok say so
            f = rec.agg_base(*self.agg_key[s], node_usage, vec) if self.agg_on[s] else None
            self.agg_f_ok[s] = f is not None
            if f is not None:
                self.agg_f[s] = f
            if self.score_agg is not None:
                g = rec.agg_base(*self.score_agg, node_usage, vec)
                self.agg_s_ok[s] = g is not None
                if g is not None:
                    self.agg_s[s] = g
        if rec is None:
            self.delta[s] = self.est[s] = self.prod[s] = 0
        else:
            self.delta[s] = rec.node_delta
            self.est[s] = rec.node_est
            self.prod[s] = rec.prod_usage + rec.prod_delta
        self._dirty.add(s)

    def views(self) -> NodeMetricStore:
        """Write the rows of the slots whose records changed, and refresh the derived arrays of the
        slots changed since the last call; returns self."""
        if self._dozing:
            self._wake()
        if self._stale:
            objs, records = self._objs, self.records
            for s in list(self._stale):
                node = objs[s]
                self._write_metric(s, None if node is None else records.get(node.name))
        if len(self._dirty) <= _ONE_BY_ONE:  # the usual case: a node or two changed
            for s in self._dirty:
                self._derive_one(s)
            self._dirty.clear()
        elif self._dirty:
            self._derive(np.fromiter(self._dirty, dtype=np.int64, count=len(self._dirty)))
            self._dirty.clear()
        return self

    def _derive(self, i: npt.NDArray[np.int64] | slice) -> None:
        """Upstream's per-node choice of path (prod, aggregated, node usage), made once per change
        instead of once per pod: thresholds, existing usage and whether a node is checked at all."""
        alloc = self.alloc[i]
        self.alloc_safe[:, i] = np.where(alloc == 0, 1, alloc).T
        self.alloc_f[:, i] = self.alloc_safe[:, i]
        self.alloc_zero[:, i] = (alloc == 0).T
        agg = self.agg_on[i]
        ex_agg = np.where(self.agg_f_ok[i][:, None], self.agg_f[i] + self.delta[i], self.est[i])
        ex_np = np.where(agg[:, None], ex_agg, self.usage[i] + self.delta[i])
        thr_np = np.where(agg[:, None], self.thr_agg[i], self.thr_usage[i])
        prod = self.prod_on[i]
        ex_p = np.where(prod[:, None], self.prod[i], ex_np)
        thr_p = np.where(prod[:, None], self.thr_prod[i], thr_np)
        metric = self.has_metric[i]
        wide = np.zeros(len(metric), dtype=bool)
        for v, ex, thr, aggr in ((0, ex_np, thr_np, agg), (1, ex_p, thr_p, agg & ~prod)):
            self.f_ex[v][:, i] = ex.T
            self.f_ex_f[v][:, i] = ex.T
            wide |= ((ex >= EXACT) | (ex <= -EXACT)).any(axis=1)
            self.f_half[v][:, i] = np.where((thr != 0) & (alloc != 0), thr + 0.5, np.inf).T
            self.f_check[v][i] = metric & (thr != 0).any(axis=1)
            self.f_agg[v][i] = aggr
        if self.score_agg is not None:
            self.s_ex[0][:, i] = np.where(self.agg_s_ok[i][:, None], self.agg_s[i] + self.delta[i], self.est[i]).T
        else:
            self.s_ex[0][:, i] = (self.usage[i] + self.delta[i]).T
        self.s_ex[1][:, i] = self.prod[i].T
        slots = range(i.start or 0, i.stop or 0) if isinstance(i, slice) else i.tolist()
        for s, w in zip(slots, wide.tolist(), strict=True):
            if w:
                self.wide.add(s)
            else:
                self.wide.discard(s)

    def _derive_one(self, s: int) -> None:
        """_derive for one slot: the same values (sums in int64, as there), with the per-node
        choices made in Python rather than by masks over a one-slot slice."""
        alloc = self.alloc[s]
        zero = alloc == 0
        safe = np.where(zero, 1, alloc)
        self.alloc_safe[:, s] = safe
        self.alloc_f[:, s] = safe
        self.alloc_zero[:, s] = zero
        agg = bool(self.agg_on[s])
        delta = self.delta[s]
        if agg:
            ex_np = self.agg_f[s] + delta if self.agg_f_ok[s] else self.est[s]
            thr_np = self.thr_agg[s]
        else:
            ex_np = self.usage[s] + delta
            thr_np = self.thr_usage[s]
        prod = bool(self.prod_on[s])
        ex_p, thr_p = (self.prod[s], self.thr_prod[s]) if prod else (ex_np, thr_np)
        metric = bool(self.has_metric[s])
        zeros = zero.tolist()
        wide = False
        for v, ex, thr, aggr in ((0, ex_np, thr_np, agg), (1, ex_p, thr_p, agg and not prod)):
            self.f_ex[v][:, s] = ex
            self.f_ex_f[v][:, s] = ex
            wide = wide or any(x >= EXACT or x <= -EXACT for x in ex.tolist())
            t = thr.tolist()
            self.f_half[v][:, s] = [x + 0.5 if x != 0 and not z else _INF for x, z in zip(t, zeros, strict=True)]
            self.f_check[v][s] = metric and any(t)
            self.f_agg[v][s] = aggr
        if self.score_agg is not None:
            self.s_ex[0][:, s] = self.agg_s[s] + delta if self.agg_s_ok[s] else self.est[s]
        else:
            self.s_ex[0][:, s] = self.usage[s] + delta
        self.s_ex[1][:, s] = self.prod[s]
        if wide:
            self.wide.add(s)
        else:
            self.wide.discard(s)

    def exact(self, est: Vec) -> bool:
        """Whether float(f_ex) + float(est) equals float(f_ex + est) on every slot: every value is
        below EXACT in size, so both sums are exact in a float's 53 bits."""
        return not self.wide and all(-EXACT < x < EXACT for x in est.tolist())

    def attach(self, state: ClusterState) -> None:
        """Register with a state that already holds pods (NodeMetrics it dropped are not recovered)."""
        state.attach(self)

    def doze(self) -> None:
        """Put off the work of NodeMetrics and pods until the store is next read (`views`): a metric is
        only kept, with its time, and a pod that would be (re)assigned only noted; the pod cache, the
        pods' sums and slot rows are made from the last metrics and those pods then. For a cluster
        view that may never be read (the buffer controller's, until a buffer exists). A node's
        record still goes when it has neither metric nor pods, as it would awake (see _later_pod)."""
        if not self._dozing:
            self._dozing = True
            self._count = {name: len(rec.pods) for name, rec in self.records.items() if rec.pods}

    def _wake(self) -> None:
        later, self._later, self._count = self._later, {}, {}
        for key, pod in later.items():  # the records' comings and goings were followed while dozing
            e = self.pods.pop(key, None)
            if e is not None:
                rec = self.records.get(e.node)
                if rec is not None and rec.pods.get(key) is e:  # else its record went while dozing
                    rec.remove(e)
                    del rec.pods[key]
            if pod is not None:
                self._assign(pod)
        for name in [name for name, rec in self.records.items() if rec.empty]:
            del self.records[name]
        self._dozing = False
        self.generation += 1  # every slot's rows are written again
        for rec in self.records.values():
            if rec.metric is not None:
                self._load_metric(rec, rec.metric)
        for s in range(self.cap):
            if self._objs[s] is not None:
                self._write_slot(s, self._objs[s])

    # ---- StateExtension hooks ---------------------------------------------
    def node_changed(self, state: ClusterState, slot: int) -> None:
        if len(state.nodes.valid) > self.cap:
            self._grow(len(state.nodes.valid))
        node = state.nodes.node(slot)
        if node is not self._objs[slot]:
            self._objs[slot] = node
            self._write_slot(slot, node)

    def apply(self, state: ClusterState, obj: Any, deleted: bool) -> None:
        if type(obj) is not NodeMetric:
            return
        name = obj.name
        rec = self.records.get(name)
        if deleted:
            if rec is None:
                return
            rec.metric = None
            rec.built_agg, rec.usage, rec.prod_pods = {}, {}, set()
            rec.reset(rec.zero)
            for e in rec.pods.values():
                rec.add(e)
            if not (self._count.get(name) if self._dozing else rec.pods):
                del self.records[name]
        else:
            if rec is None:
                rec = self.records[name] = NodeLoad(self.res.zeros())
            rec.metric = obj
            t = obj.update_time
            if t is not None:
                us = _US.get(t)
                rec.window = to_us(t) if us is None else us
            if self._dozing:  # taken in when the store wakes
                return
            self._load_metric(rec, obj)
        s = self._mark(state, name)
        if s is not None:
            state.touch(s)

    def _load_metric(self, rec: NodeLoad, m: NodeMetric) -> None:
        """Take in a metric, its time already kept on the record (its slot's rows are written when
        next read)."""
        interval = m.report_interval_seconds
        rec.interval = _MINUTE if interval is None else interval * US
        rec.built_agg = None  # built from rec.metric when read
        if not m.pods and not rec.usage and not self.args.prod_usage_include_sys:
            # no pod reported, now or before: each pod counts its whole estimate whatever the
            # metric's time, and prodUsage starts from zero, so the sums stand as they are
            return
        vec = self.res.vec
        usage = {p.key: vec(p.usage) for p in m.pods if p.usage}
        if not usage and not rec.usage and not self.args.prod_usage_include_sys:
            return
        rec.usage = usage
        rec.prod_pods = {p.key for p in m.pods if p.usage and p.priority == PROD}
        include_sys = self.args.prod_usage_include_sys and m.has_node_metric
        rec.reset(vec(m.system_usage) if include_sys else rec.zero)
        for e in rec.pods.values():
            rec.add(e)

    def pod_changed(self, state: ClusterState, old: Pod | None, new: Pod | None) -> None:
        pod = new if new is not None else old
        if pod is None:
            return
        if self._dozing:
            self._later_pod(pod.key, old, new)
            return
        entry = self.pods.get(pod.key)
        if new is None or not new.node_name or new.terminated or new.annotations.get(ANN_RESERVE_POD) == "true":
            if entry is not None:
                self._unassign(entry)
                self._mark(state, entry.node)
                if new is None and old is not None:
                    if len(self._left) >= _LEFT_LIMIT:
                        self._left.clear()
                    self._left[old.key] = (old, entry)
            return
        if entry is not None and entry.node == new.node_name and old is not None and _spec(old) == _spec(new):
            return  # label- or annotation-only change: upstream keeps the cached evaluation
        if entry is not None:
            self._unassign(entry)
            self._mark(state, entry.node)
        self._assign(new)
        self._mark(state, new.node_name)

    def _later_pod(self, key: str, old: Pod | None, new: Pod | None) -> None:
        """pod_changed while dozing: the same choices, made against the pod each key will be assigned
        as on waking (noted in _later, else its entry); the nodes' counts follow, so that a record
        goes when the cache would have dropped it (its window with it)."""
        if key in self._later:
            later = self._later[key]
            node = None if later is None else later.node_name
        else:
            entry = self.pods.get(key)
            node = None if entry is None else entry.node
        if new is None or not new.node_name or new.terminated or new.annotations.get(ANN_RESERVE_POD) == "true":
            if node is not None:
                self._later[key] = None
                self._leave(node)
            return
        if node == new.node_name and old is not None and _spec(old) == _spec(new):
            return
        self._later[key] = new
        if node is not None:  # off its node first, as _unassign then _assign would
            self._leave(node)
        self._count[new.node_name] = self._count.get(new.node_name, 0) + 1

    def _leave(self, node: str) -> None:
        """Dozing: a pod leaves the node; a record left with neither metric nor pods goes."""
        left = self._count[node] - 1
        if left:
            self._count[node] = left
            return
        del self._count[node]
        rec = self.records.get(node)
        if rec is not None and rec.metric is None:
            del self.records[node]

    # ---- the assigned-pod cache ------------------------------------------
    def estimate(self, pod: Pod) -> tuple[Vec, bool]:
        """(the estimator's estimate, whether the pod is prod), read-only, kept per pod key while
        the fields they read are the same objects: a pod assumed on a node, or updated in its
        status only, is a copy that shares them, and is not estimated again."""
        got = self._estimated(pod)
        return got[1], got[2]

    def _estimated(self, pod: Pod) -> tuple[tuple[Any, ...], Vec, bool, bool]:
        """(the fields read, estimate, prod, whether the estimate has a value other than 0)."""
        inputs = (pod.labels, pod.priority, pod.requests, pod.limits, pod.annotations, pod.spec_requests)
        got = self._estimates.get(pod.key)
        if got is not None and all(a is b for a, b in zip(got[0], inputs, strict=True)):
            return got
        same = self.estimator.inputs(pod)
        shared = self._by_inputs.get(same)
        if shared is None:  # pods of one workload ask alike: one read-only estimate for them all
            est = self.estimator.estimate(pod)
            est.setflags(write=False)
            if len(self._by_inputs) >= _ESTIMATES:
                self._by_inputs.clear()
            shared = self._by_inputs[same] = (est, priority_class(pod) == PROD, bool(est.any()))
        if len(self._estimates) >= _ESTIMATES:
            self._estimates.clear()
        got = self._estimates[pod.key] = (inputs, *shared)
        return got

    def entry_for(self, pod: Pod) -> PodEntry:
        _, est, prod, some = self._estimated(pod)
        scheduled = _condition_time(pod, "PodScheduled")
        ts = RECENT if scheduled is None else to_us(scheduled)
        after_scheduled, after_init = self.estimator.seconds(pod)
        initialized = _condition_time(pod, "Initialized") if after_init > 0 else None
        deadline = None
        if initialized is not None:
            deadline = to_us(initialized) + after_init * US
        elif after_scheduled > 0:
            deadline = ts + after_scheduled * US
        return PodEntry(
            key=pod.key,
            node=pod.node_name,
            est=est if some else None,
            prod=prod,
            ts=ts,
            deadline=deadline,
        )

    def _mark(self, state: ClusterState, node: str) -> int | None:
        """The node's slot rows lag its record (written when next read); returns the slot, if any."""
        s = state.nodes.slot.get(node)
        if s is None or s >= self.cap or self._objs[s] is None:
            return None
        self._stale.add(s)
        return s

    def _assign(self, pod: Pod) -> None:
        left = self._left.pop(pod.key, None)
        e = left[1] if left is not None and left[0] is pod else self.entry_for(pod)
        rec = self.records.get(e.node)
        if rec is None:
            rec = self.records[e.node] = NodeLoad(self.res.zeros())
        rec.pods[e.key] = e
        self.pods[e.key] = e
        rec.add(e)

    def _unassign(self, e: PodEntry) -> None:
        del self.pods[e.key]
        rec = self.records[e.node]
        rec.remove(e)
        del rec.pods[e.key]
        if rec.empty:
            del self.records[e.node]
