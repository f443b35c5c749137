"""Metrics over the whole run, not only its end: fed in order by the scorer engine's events and
decisions, each step O(1), so the figures cost next to nothing beside the replay.

Log time runs from the first event with a clock to the last. A ratio is held from one event to
the next and weighted by the time it held (a left Riemann sum); its peak is its largest value
after any event.

Stranded capacity: the median pod is the median request (the lower median) of the pods live on
nodes at that moment, cpu and memory each on their own. Stranded cpu is the free cpu (allocatable −
requested, not below 0) of the live nodes whose free memory is less than the median pod's memory,
over Σ allocatable cpu; stranded memory the reverse. The sums are kept as nodes change, against
the median they were added up for, and added up again over every node (numpy) only when the median
pod changes, which with a workload's few request sizes is rare; its peak is its largest value held
for any log time, or at the end.
"""

from __future__ import annotations

import math
from array import array
from bisect import bisect_left
from datetime import datetime

import numpy as np

from berth.core.api.core.model import Node, Pod
from berth.core.api.core.resources import CPU, MEMORY
from berth.core.api.meta.normalise import parse_time
from berth.core.pipeline.records import DecisionRecord
from berth.core.pipeline.stats import LARGE_PV, SMALL_CLAIM, Binding, BufferPoint, OverRun, Percentiles, Series, Usage


def percentiles(values: list[float]) -> Percentiles:
    """Nearest-rank percentiles: the smallest value with at least p% of the values at or below it."""
    if not values:
        return Percentiles()
    v = sorted(values)

    def rank(p: int) -> float:
        return v[max(0, math.ceil(p * len(v) / 100) - 1)]

    return Percentiles(rank(50), rank(90), rank(99), v[-1])


def quantiles(values: list[float]) -> list[float]:
    """The nearest-rank percentiles 0, 1, ..., 100 of `values` (none when there are no values)."""
    v = sorted(values)
    return [v[max(0, math.ceil(p * len(v) / 100) - 1)] for p in range(101)] if v else []


SERIES_BUCKETS = 120  # the plots' time series: at most this many buckets


def buckets(starts: array[float], end: float, values: list[array[float]], n: int = SERIES_BUCKETS) -> Series:
    """Values each held from its start to the next start (the last to `end`), as `n` time-weighted
    bucket means from the first start to `end`. Times in seconds; the series' are since the first start."""
    if not starts or end <= starts[0]:
        return Series()
    t = np.append(np.frombuffer(starts, dtype=np.float64), end)
    edges = np.linspace(t[0], end, n + 1)
    width = np.diff(edges)
    means = []
    for v in values:
        area = np.concatenate(([0.0], np.cumsum(np.frombuffer(v, dtype=np.float64) * np.diff(t))))
        means.append((np.diff(np.interp(edges, t, area)) / width).tolist())
    middle = ((edges[:-1] + edges[1:]) / 2 - t[0]).tolist()
    return Series(
        seconds=middle,
        cpu=means[0],
        memory=means[1],
        cpu_spread=means[2],
        memory_spread=means[3],
        cpu_stranded=means[4],
        memory_stranded=means[5],
    )


class LowerMedian:
    """A multiset of ints and its lower median (the ((n + 1) // 2)-th smallest), kept as values come
    and go: the distinct values sorted with their counts, and where the median sits among them. A
    change moves it by at most one distinct value; only a value new to the set, or gone from it,
    moves the list of distinct values."""

    def __init__(self) -> None:
        self.n = 0
        self._values: list[int] = []  # distinct, ascending
        self._counts: dict[int, int] = {}
        self._at = 0  # index in _values of the median
        self._below = 0  # how many values are smaller than _values[_at]

    def add(self, v: int) -> None:
        counts, values = self._counts, self._values
        self.n += 1
        if not values:
            values.append(v)
            counts[v] = 1
            self._at = self._below = 0
            return
        here = values[self._at]
        if v in counts:
            counts[v] += 1
        else:
            counts[v] = 1
            values.insert(bisect_left(values, v), v)
            if v < here:
                self._at += 1
        if v < here:
            self._below += 1
        self._settle()

    def remove(self, v: int) -> None:
        """Take one v out (it must be in)."""
        counts, values = self._counts, self._values
        self.n -= 1
        if v < values[self._at]:
            self._below -= 1
        left = counts[v] - 1
        if left:
            counts[v] = left
        else:
            del counts[v]
            i = bisect_left(values, v)
            del values[i]
            if i < self._at:
                self._at -= 1
        if not self.n:
            self._at = self._below = 0
            return
        self._settle()

    def _settle(self) -> None:
        k = (self.n + 1) // 2
        values, counts = self._values, self._counts
        while self._at >= len(values) or k <= self._below:
            self._at -= 1
            self._below -= counts[values[self._at]]
        while k > self._below + counts[values[self._at]]:
            self._below += counts[values[self._at]]
            self._at += 1

    def median(self) -> int:
        """The lower median, or 0 when empty."""
        return self._values[self._at] if self.n else 0


class _Spread:
    """Σ r and Σ r² of per-node ratios requested/allocatable, kept as nodes change."""

    def __init__(self) -> None:
        self.n = 0
        self.s = 0.0
        self.s2 = 0.0

    def change(self, before: float | None, after: float | None) -> None:
        if before is not None:
            self.n -= 1
            self.s -= before
            self.s2 -= before * before
        if after is not None:
            self.n += 1
            self.s += after
            self.s2 += after * after

    def stddev(self) -> float:
        if self.n <= 0:
            return 0.0
        mean = self.s / self.n
        return math.sqrt(max(0.0, self.s2 / self.n - mean * mean))


class OverRunObserver:
    """Live pods on nodes (bound in the log or placed by berth, until they go) over live nodes."""

    def __init__(self) -> None:
        self._first: float | None = None
        self._now: float | None = None
        self._at: datetime | None = None  # the time `_now` was read from
        # the four ratios now (cpu, memory, their spreads), kept until a node or a pod on one changes
        self._current: tuple[float, float, float, float] | None = None
        self._alloc: dict[str, tuple[int, int]] = {}  # live node -> (cpu, memory) allocatable
        self._req: dict[str, list[int]] = {}  # node -> [cpu, memory] requested by live pods
        self._on: dict[str, tuple[str, int, int]] = {}  # live pod -> (node, cpu, memory)
        self._sum = [0, 0, 0, 0]  # Σ cpu requested, Σ memory requested, Σ cpu allocatable, Σ memory allocatable
        self._spread = (_Spread(), _Spread())
        self._area = [0.0, 0.0, 0.0, 0.0]  # cpu, memory, cpu spread, memory spread: ∫ dt
        self._peak = [0.0, 0.0]
        self._created: dict[str, float] = {}  # pending pod -> creation, in seconds
        self._decided: set[str] = set()
        self._scheduled: set[str] = set()
        self._first_attempt = 0
        self._waits: dict[str, float] = {}  # scheduled pod -> seconds from creation to its first Scheduled
        self._waiting: dict[str, str] = {}  # pod whose last decision was Unschedulable -> reason
        self._failing: set[str] = set()  # pods whose last decision was an Error (dynamic resource allocation, ...)
        self._pv = [0, 0, 0, 0, 0]  # count, requested, capacity, large taken by small, large
        # stranded capacity: every node's free cpu and memory by slot, the live pods' requests sorted
        self._slot: dict[str, int] = {}
        self._free = (array("q"), array("q"))  # free cpu, free memory; numpy reads them when the median moves
        self._cpus = LowerMedian()
        self._mems = LowerMedian()
        self._dirty = False
        self._median = (0, 0)  # the median pod's (cpu, memory) that _stuck was added up for
        self._stuck = [0, 0]  # Σ free cpu on nodes with free memory < the median's, and the reverse
        self._stranded = (0.0, 0.0)
        self._stranded_area = [0.0, 0.0]
        self._stranded_peak = [0.0, 0.0]
        # the ratios as held from each time on, for the plots
        self._starts: array[float] = array("d")
        self._held: list[array[float]] = [array("d") for _ in range(6)]

    # ---- the clock ----------------------------------------------------------------------------
    def advance(self, now: datetime | None) -> None:
        """Called once per event, before its changes: the current ratios held until `now`."""
        if now is None or now is self._at:
            return
        self._at = now
        t = now.timestamp()
        if self._now is None:
            self._first = self._now = t
            return
        dt = t - self._now
        if dt <= 0:
            return
        self._now = t
        ratios = self._current
        if ratios is None:
            cpu, mem = self._ratios()
            ratios = self._current = (cpu, mem, self._spread[0].stddev(), self._spread[1].stddev())
        area = self._area
        area[0] += ratios[0] * dt
        area[1] += ratios[1] * dt
        area[2] += ratios[2] * dt
        area[3] += ratios[3] * dt
        stranded = self._stranded if not self._dirty else self._stranded_now()
        self._stranded_area[0] += stranded[0] * dt
        self._stranded_area[1] += stranded[1] * dt
        self._starts.append(t - dt)
        held = self._held
        held[0].append(ratios[0])
        held[1].append(ratios[1])
        held[2].append(ratios[2])
        held[3].append(ratios[3])
        held[4].append(stranded[0])
        held[5].append(stranded[1])

    def _stranded_now(self) -> tuple[float, float]:
        """(stranded cpu, stranded memory) as shares of Σ allocatable. The sums are kept per change
        against the median they were taken for; only a new median makes them add every node up again."""
        if not self._dirty:
            return self._stranded
        self._dirty = False
        median = (self._cpus.median(), self._mems.median())
        if median != self._median:
            self._median = median
            cpu, mem = (np.frombuffer(f, dtype=np.int64) for f in self._free)
            self._stuck = [int(cpu[mem < median[1]].sum()), int(mem[cpu < median[0]].sum())]
        s = self._sum
        stuck = self._stuck
        self._stranded = (stuck[0] / s[2] if s[2] > 0 else 0.0), (stuck[1] / s[3] if s[3] > 0 else 0.0)
        peak = self._stranded_peak
        peak[0] = max(peak[0], self._stranded[0])
        peak[1] = max(peak[1], self._stranded[1])
        return self._stranded

    def _ratios(self) -> tuple[float, float]:
        s = self._sum
        return (s[0] / s[2] if s[2] else 0.0), (s[1] / s[3] if s[3] else 0.0)

    def _peaks(self) -> None:
        cpu, mem = self._ratios()
        if cpu > self._peak[0]:
            self._peak[0] = cpu
        if mem > self._peak[1]:
            self._peak[1] = mem

    # ---- what the log says ----------------------------------------------------------------------
    def node(self, node: Node, deleted: bool) -> None:
        before = self._node_ratios(node.name)
        old = self._alloc.pop(node.name, (0, 0))
        self._sum[2] -= old[0]
        self._sum[3] -= old[1]
        if not deleted:
            alloc = (node.allocatable.get(CPU, 0), node.allocatable.get(MEMORY, 0))
            self._alloc[node.name] = alloc
            self._sum[2] += alloc[0]
            self._sum[3] += alloc[1]
        self._node_changed(node.name, before)
        self._peaks()

    def pod(self, pod: Pod, deleted: bool) -> None:
        key = pod.key
        if deleted or pod.terminated:
            self._leave(key)
            self._created.pop(key, None)
            self._waiting.pop(key, None)
            self._failing.discard(key)
        elif pod.node_name:
            self._created.pop(key, None)
            self._waiting.pop(key, None)
            self._failing.discard(key)
            held = self._on.get(key)
            if held is None or held[0] != pod.node_name:
                self._leave(key)
                self._place(key, pod.node_name, pod)
        elif key not in self._created and pod.creation is not None:
            self._created[key] = pod.creation.timestamp()
        self._peaks()

    def decided(self, r: DecisionRecord, pod: Pod, reason: str, bindings: list[Binding]) -> None:
        key = r.pod
        self._decided.add(key)
        self._failing.discard(key)
        if r.status != "Scheduled" or r.node is None:
            if r.status == "Unschedulable":
                self._waiting[key] = reason
            elif r.status == "Error":
                self._waiting.pop(key, None)
                self._failing.add(key)
            return
        self._waiting.pop(key, None)
        if key not in self._scheduled:
            self._scheduled.add(key)
            self._first_attempt += r.attempt == 1
            created = self._created.get(key)
            if created is not None and self._now is not None:
                self._waits[key] = max(0.0, self._now - created)
        self._leave(key)
        self._place(key, r.node, pod)
        pv = self._pv
        for b in bindings:
            pv[0] += 1
            pv[1] += b.request
            pv[2] += b.capacity
            if b.capacity >= LARGE_PV:
                pv[4] += 1
                pv[3] += b.request <= SMALL_CLAIM
        self._peaks()

    def waits(self) -> dict[str, float]:
        """Per scheduled pod with a creation time, the log time from creation to its first Scheduled decision."""
        return dict(self._waits)

    def revoke(self, key: str) -> None:
        self._leave(key)

    # ---- live pods on nodes -------------------------------------------------------------------
    def _place(self, key: str, node: str, pod: Pod) -> None:
        cpu, mem = pod.requests.get(CPU, 0), pod.requests.get(MEMORY, 0)
        self._on[key] = (node, cpu, mem)
        self._cpus.add(cpu)
        self._mems.add(mem)
        self._request(node, cpu, mem)

    def _leave(self, key: str) -> None:
        held = self._on.pop(key, None)
        if held is None:
            return
        node, cpu, mem = held
        self._cpus.remove(cpu)
        self._mems.remove(mem)
        self._request(node, -cpu, -mem)

    def _request(self, node: str, cpu: int, mem: int) -> None:
        """A live pod's requests come to a node (or leave it, negative)."""
        before = self._node_ratios(node)
        req = self._req.setdefault(node, [0, 0])
        req[0] += cpu
        req[1] += mem
        self._sum[0] += cpu
        self._sum[1] += mem
        self._node_changed(node, before)

    def _node_ratios(self, node: str) -> tuple[float | None, float | None]:
        alloc = self._alloc.get(node)
        if alloc is None:
            return None, None
        req = self._req.get(node, (0, 0))
        return (req[0] / alloc[0] if alloc[0] else None), (req[1] / alloc[1] if alloc[1] else None)

    def _node_changed(self, node: str, before: tuple[float | None, float | None]) -> None:
        after = self._node_ratios(node)
        self._current = None
        self._spread[0].change(before[0], after[0])
        self._spread[1].change(before[1], after[1])
        free_cpu, free_mem = self._free
        slot = self._slot.get(node)
        if slot is None:
            slot = self._slot[node] = len(self._slot)
            free_cpu.append(0)
            free_mem.append(0)
        alloc = self._alloc.get(node, (0, 0))
        req = self._req.get(node, (0, 0))
        cpu, mem = max(0, alloc[0] - req[0]), max(0, alloc[1] - req[1])
        was_cpu, was_mem = free_cpu[slot], free_mem[slot]
        free_cpu[slot] = cpu
        free_mem[slot] = mem
        median, stuck = self._median, self._stuck
        stuck[0] += (cpu if mem < median[1] else 0) - (was_cpu if was_mem < median[1] else 0)
        stuck[1] += (mem if cpu < median[0] else 0) - (was_mem if was_cpu < median[0] else 0)
        self._dirty = True

    # ---- the result ---------------------------------------------------------------------------
    def result(self, buffers: list[BufferPoint]) -> OverRun:
        span = (self._now - self._first) if self._now is not None and self._first is not None else 0.0
        area = self._area
        cpu, mem = self._ratios()
        stranded = self._stranded_now()

        def mean(i: int, last: float) -> float:
            return area[i] / span if span > 0 else last

        def stranded_mean(i: int) -> float:
            return self._stranded_area[i] / span if span > 0 else stranded[i]

        counts: dict[str, int] = {}
        for reason in self._waiting.values():
            counts[reason] = counts.get(reason, 0) + 1
        pv = self._pv
        return OverRun(
            seconds=span,
            pods_decided=len(self._decided),
            pods_scheduled=len(self._scheduled),
            scheduled_first_attempt=self._first_attempt,
            pods_unschedulable_at_end=len(self._waiting),
            pods_error_at_end=len(self._failing),
            unschedulable_at_end=dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))),
            time_to_schedule=percentiles(list(self._waits.values())),
            wait_quantiles=quantiles(list(self._waits.values())),
            pvs_chosen=pv[0],
            pv_bytes_requested=pv[1],
            pv_bytes_capacity=pv[2],
            large_pvs_taken_by_small_claims=pv[3],
            large_pvs_chosen=pv[4],
            cpu=Usage(mean(0, cpu), self._peak[0]),
            memory=Usage(mean(1, mem), self._peak[1]),
            cpu_spread=mean(2, self._spread[0].stddev()),
            memory_spread=mean(3, self._spread[1].stddev()),
            cpu_stranded=Usage(stranded_mean(0), self._stranded_peak[0]),
            memory_stranded=Usage(stranded_mean(1), self._stranded_peak[1]),
            series=buckets(self._starts, self._now, self._held) if self._now is not None else Series(),
            buffers_ready=self._buffers_ready(buffers, span),
        )

    def _buffers_ready(self, points: list[BufferPoint], span: float) -> dict[str, float]:
        """Per buffer: Σ time from each status that made it fully ready to its next status or the end."""
        if self._first is None or self._now is None or span <= 0:
            return {b.buffer: float(b.ready_replicas >= b.replicas) for b in points}  # no clock: the end state
        ready: dict[str, float] = {}
        since: dict[str, float | None] = {}
        for b in points:
            if b.ts is None:
                continue
            t = min(max(parse_time(b.ts).timestamp(), self._first), self._now)
            start = since.get(b.buffer)
            if start is not None:
                ready[b.buffer] = ready.get(b.buffer, 0.0) + t - start
            ready.setdefault(b.buffer, 0.0)
            since[b.buffer] = t if b.ready_replicas >= b.replicas else None
        for name, start in since.items():
            if start is not None:
                ready[name] += self._now - start
        return {name: ready[name] / span for name in sorted(ready)}
