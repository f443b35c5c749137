"""Metrics over the whole run, not only its end: fed in order by the scorer engine's events and
decisions, each step O(1), so the figures cost next to nothing beside the replay.

Log time runs from the first event with a clock to the last. A ratio is held from one event to
the next and weighted by the time it held (a left Riemann sum); its peak is its largest value
after any event.
"""

from __future__ import annotations

import math
from datetime import datetime

from berth.core.amounts import parse_time
from berth.core.model import Node, Pod
from berth.core.pipeline.records import DecisionRecord
from berth.core.pipeline.stats import LARGE_PV, SMALL_CLAIM, Binding, BufferPoint, OverRun, Percentiles, Usage
from berth.core.resources import CPU, MEMORY


def percentiles(values: list[float]) -> Percentiles:
    """Nearest-rank percentiles: the smallest value with at least p% of the values at or below it."""
    if not values:
        return Percentiles()
    v = sorted(values)

    def rank(p: int) -> float:
        return v[max(0, math.ceil(p * len(v) / 100) - 1)]

    return Percentiles(rank(50), rank(90), rank(99), v[-1])


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
        # the four ratios held (cpu, memory, their spreads), until a node or a pod on one changes
        self._held: tuple[float, float, float, float] | None = None
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
        self._waits: list[float] = []
        self._waiting: dict[str, str] = {}  # pod whose last decision was Unschedulable -> reason
        self._pv = [0, 0, 0, 0, 0]  # count, requested, capacity, large taken by small, large

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
        held = self._held
        if held is None:
            cpu, mem = self._ratios()
            held = self._held = (cpu, mem, self._spread[0].stddev(), self._spread[1].stddev())
        area = self._area
        area[0] += held[0] * dt
        area[1] += held[1] * dt
        area[2] += held[2] * dt
        area[3] += held[3] * dt

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
        elif pod.node_name:
            self._created.pop(key, None)
            self._waiting.pop(key, None)
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
        if r.status != "Scheduled" or r.node is None:
            if r.status == "Unschedulable":
                self._waiting[key] = reason
            return
        self._waiting.pop(key, None)
        if key not in self._scheduled:
            self._scheduled.add(key)
            self._first_attempt += r.attempt == 1
            created = self._created.get(key)
            if created is not None and self._now is not None:
                self._waits.append(max(0.0, self._now - created))
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

    def revoke(self, key: str) -> None:
        self._leave(key)

    # ---- live pods on nodes -------------------------------------------------------------------
    def _place(self, key: str, node: str, pod: Pod) -> None:
        cpu, mem = pod.requests.get(CPU, 0), pod.requests.get(MEMORY, 0)
        before = self._node_ratios(node)
        self._on[key] = (node, cpu, mem)
        req = self._req.setdefault(node, [0, 0])
        req[0] += cpu
        req[1] += mem
        self._sum[0] += cpu
        self._sum[1] += mem
        self._node_changed(node, before)

    def _leave(self, key: str) -> None:
        held = self._on.pop(key, None)
        if held is None:
            return
        node, cpu, mem = held
        before = self._node_ratios(node)
        req = self._req[node]
        req[0] -= cpu
        req[1] -= mem
        self._sum[0] -= cpu
        self._sum[1] -= mem
        self._node_changed(node, before)

    def _node_ratios(self, node: str) -> tuple[float | None, float | None]:
        alloc = self._alloc.get(node)
        if alloc is None:
            return None, None
        req = self._req.get(node, (0, 0))
        return (req[0] / alloc[0] if alloc[0] else None), (req[1] / alloc[1] if alloc[1] else None)

    def _node_changed(self, node: str, before: tuple[float | None, float | None]) -> None:
        after = self._node_ratios(node)
        self._held = None
        self._spread[0].change(before[0], after[0])
        self._spread[1].change(before[1], after[1])

    # ---- the result ---------------------------------------------------------------------------
    def result(self, buffers: list[BufferPoint]) -> OverRun:
        span = (self._now - self._first) if self._now is not None and self._first is not None else 0.0
        area = self._area
        cpu, mem = self._ratios()

        def mean(i: int, last: float) -> float:
            return area[i] / span if span > 0 else last

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
            unschedulable_at_end=dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))),
            time_to_schedule=percentiles(self._waits),
            pvs_chosen=pv[0],
            pv_bytes_requested=pv[1],
            pv_bytes_capacity=pv[2],
            large_pvs_taken_by_small_claims=pv[3],
            large_pvs_chosen=pv[4],
            cpu=Usage(mean(0, cpu), self._peak[0]),
            memory=Usage(mean(1, mem), self._peak[1]),
            cpu_spread=mean(2, self._spread[0].stddev()),
            memory_spread=mean(3, self._spread[1].stddev()),
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
