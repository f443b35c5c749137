"""What a run measured, for the summary table and the report. Pure data plus the arithmetic."""

from __future__ import annotations

import math
from collections import Counter
from typing import TYPE_CHECKING

import msgspec

if TYPE_CHECKING:
    from berth.core.pipeline.records import DecisionRecord

SMALL_CLAIM = 10 * 2**30  # a claim of at most this many bytes is small
LARGE_PV = 2**40  # a PV of at least this many bytes is large


class DecisionPoint(msgspec.Struct, frozen=True, array_like=True):
    ts: str | None
    position: int
    status: str  # Scheduled | Unschedulable | Error
    reason: str  # "" when scheduled; the most common node reason or the prefilter message otherwise
    pod: str = ""


class PreemptionPoint(msgspec.Struct, frozen=True, array_like=True):
    """A preemption carried out in a replay: when, whose, where, and its victims' priorities."""

    ts: str | None
    position: int
    pod: str
    node: str
    victims: tuple[int, ...]


class Binding(msgspec.Struct, frozen=True, array_like=True):
    claim: str
    pv: str
    storage_class: str
    request: int  # bytes, rounded up
    capacity: int  # bytes, rounded up


class NodeUse(msgspec.Struct, frozen=True, array_like=True):
    node: str
    cpu_requested: int  # millicores, including berth's reservations
    cpu_allocatable: int
    memory_requested: int  # bytes
    memory_allocatable: int


class BufferPoint(msgspec.Struct, frozen=True, array_like=True):
    ts: str | None
    position: int
    buffer: str
    replicas: int
    ready_replicas: int


class Usage(msgspec.Struct, frozen=True):
    mean: float = 0.0
    peak: float = 0.0


class Percentiles(msgspec.Struct, frozen=True):
    p50: float = 0.0
    p90: float = 0.0
    p99: float = 0.0
    max: float = 0.0


class Series(msgspec.Struct, frozen=True, kw_only=True):
    """The over-the-run ratios in time buckets, each the time-weighted mean over its bucket, for plots."""

    seconds: list[float] = []  # each bucket's middle, in seconds since the first event
    cpu: list[float] = []  # Σ requested / Σ allocatable
    memory: list[float] = []
    cpu_spread: list[float] = []  # per-node stddev of requested / allocatable
    memory_spread: list[float] = []
    cpu_stranded: list[float] = []  # share of Σ allocatable cpu stranded (berth.core.pipeline.overrun)
    memory_stranded: list[float] = []


class OverRun(msgspec.Struct, frozen=True, kw_only=True):
    """What one run measured from its first event to its last."""

    seconds: float = 0.0  # log time from the first event with a clock to the last
    pods_decided: int = 0
    pods_scheduled: int = 0
    scheduled_first_attempt: int = 0
    pods_unschedulable_at_end: int = 0
    unschedulable_at_end: dict[str, int] = {}  # by reason
    pods_error_at_end: int = 0  # last decided with an Error (dynamic resource allocation is not modelled, ...)
    time_to_schedule: Percentiles = Percentiles()
    wait_quantiles: list[float] = []  # time to schedule at 0%, 1%, ..., 100% (nearest rank), for the plot
    pvs_chosen: int = 0
    pv_bytes_requested: int = 0
    pv_bytes_capacity: int = 0
    large_pvs_taken_by_small_claims: int = 0
    large_pvs_chosen: int = 0
    cpu: Usage = Usage()
    memory: Usage = Usage()
    cpu_spread: float = 0.0  # per-node stddev of requested/allocatable, mean over log time
    memory_spread: float = 0.0
    cpu_stranded: Usage = Usage()  # free cpu on nodes without room for the median pod's memory, / Σ allocatable
    memory_stranded: Usage = Usage()  # free memory on nodes without room for the median pod's cpu, / Σ allocatable
    series: Series = Series()
    buffers_ready: dict[str, float] = {}  # per buffer, the share of log time it was fully ready

    @property
    def pv_bytes_wasted(self) -> int:
        return self.pv_bytes_capacity - self.pv_bytes_requested

    @property
    def never_scheduled(self) -> int:
        return self.pods_decided - self.pods_scheduled


class RunStats(msgspec.Struct, kw_only=True):
    """Everything one replay under one config measured."""

    label: str = "default"
    events: int = 0
    rejects: int = 0
    seconds: float = 0.0
    decisions: list[DecisionPoint] = []
    bindings: list[Binding] = []  # PVs chosen by Scheduled decisions that still stand at the end
    nodes: list[NodeUse] = []  # at the end of the run
    buffers: list[BufferPoint] = []
    over_run: OverRun = OverRun()  # from the first event to the last (berth.core.pipeline.overrun)
    preemptions: list[PreemptionPoint] = []  # replay only: the evictions it carried out

    def victims_by_priority(self) -> dict[int, int]:
        out: Counter[int] = Counter()
        for p in self.preemptions:
            out.update(p.victims)
        return dict(sorted(out.items()))

    skipped: int = 0  # distinct pods of schedulers the config has no profile for (left alone)
    gated: int = 0  # distinct pods a PreEnqueue plugin held back at least once (scheduling gates)
    retried_at_end: int = 0  # replay: pods due for a retry when the log ended, retried then

    def final(self) -> list[DecisionPoint]:
        """Each pod's last decision (decisions without a pod count on their own)."""
        last: dict[str | int, DecisionPoint] = {}
        for i, d in enumerate(self.decisions):
            last[d.pod or i] = d
        return list(last.values())

    def counts(self) -> dict[str, dict[str, int]]:
        """Pods by their final status, then by reason."""
        out: dict[str, dict[str, int]] = {}
        for d in self.final():
            by = out.setdefault(d.status, {})
            by[d.reason] = by.get(d.reason, 0) + 1
        return out

    def pv_waste(self) -> int:
        """Σ(PV capacity − request) over the chosen PVs, in bytes."""
        return sum(b.capacity - b.request for b in self.bindings)

    def large_taken_by_small(self, small: int = 10 * 2**30, large: int = 2**40) -> tuple[int, int]:
        """(large PVs taken by claims of at most `small` bytes, large PVs taken at all)."""
        taken = [b for b in self.bindings if b.capacity >= large]
        return sum(1 for b in taken if b.request <= small), len(taken)

    def utilization(self, resource: str = "cpu") -> tuple[float, float, float]:
        """(mean, stddev, max) of `resource` ("cpu" or "memory") requested / allocatable across nodes, as fractions."""
        ratios = self.node_ratios(resource)
        if not ratios:
            return 0.0, 0.0, 0.0
        mean = sum(ratios) / len(ratios)
        std = math.sqrt(sum((r - mean) ** 2 for r in ratios) / len(ratios))
        return mean, std, max(ratios)

    def node_ratios(self, resource: str = "cpu") -> list[float]:
        """Per node, `resource` ("cpu" or "memory") requested / allocatable; nodes with none allocatable are left out."""
        if resource == "cpu":
            pairs = [(n.cpu_requested, n.cpu_allocatable) for n in self.nodes]
        elif resource == "memory":
            pairs = [(n.memory_requested, n.memory_allocatable) for n in self.nodes]
        else:
            raise ValueError(f"unknown resource {resource!r}")
        return [req / alloc for req, alloc in pairs if alloc > 0]

    def buffer_readiness(self) -> dict[str, tuple[int, int]]:
        """Per buffer, the last (replicas, readyReplicas)."""
        out: dict[str, tuple[int, int]] = {}
        for b in self.buffers:
            out[b.buffer] = (b.replicas, b.ready_replicas)
        return out


def main_reason(r: DecisionRecord) -> str:
    """ "" when scheduled; else the most common node reason (ties by text), else the message."""
    if r.status == "Scheduled":
        return ""
    counts = r.reasons or Counter(reason for n in r.nodes.values() for reason in n.reasons)  # UNSET is falsy
    if not counts:
        return r.message
    return min(counts.items(), key=lambda kv: (-kv[1], kv[0]))[0]


class StatsObserver:
    """Builds a run's RunStats from what the engine emits: events, rejects and decision records.
    A revoked decision is marked, not searched for: each pod's decisions are indexed as they come,
    and the list is compacted when the stats are next read."""

    def __init__(self, label: str = "default") -> None:
        self._stats = RunStats(label=label)
        self._points: list[DecisionPoint | None] = self._stats.decisions  # type: ignore[assignment]
        self._of_pod: dict[str, list[int]] = {}  # pod -> indexes of its decisions in _points
        self._revoked = 0
        self._skipped: set[str] = set()
        self._gated: set[str] = set()

    def event(self) -> None:
        self._stats.events += 1

    def reject(self) -> None:
        self._stats.rejects += 1

    def skipped(self, pod: str) -> None:
        """A pod of another scheduler, left alone."""
        if pod not in self._skipped:
            self._skipped.add(pod)
            self._stats.skipped += 1

    def gated(self, pod: str) -> None:
        """A pod held back by its profile's PreEnqueue plugins (scheduling gates): not decided."""
        if pod not in self._gated:
            self._gated.add(pod)
            self._stats.gated += 1

    def decided(self, r: DecisionRecord) -> DecisionPoint:
        self._of_pod.setdefault(r.pod, []).append(len(self._points))
        point = DecisionPoint(r.ts, r.position, r.status, main_reason(r), r.pod)
        self._points.append(point)
        return point

    def preempted(self, r: DecisionRecord, node: str, victims: tuple[int, ...]) -> None:
        self._stats.preemptions.append(PreemptionPoint(r.ts, r.position, r.pod, node, victims))

    def revoke(self, pod: str) -> None:
        """Drop the pod's latest decision still counted (another replica's reservation won)."""
        held = self._of_pod.get(pod)
        if held:
            self._points[held.pop()] = None
            self._revoked += 1

    @property
    def stats(self) -> RunStats:
        if self._revoked:
            kept = [p for p in self._points if p is not None]
            self._of_pod = {}
            for i, p in enumerate(kept):
                self._of_pod.setdefault(p.pod, []).append(i)
            self._points = self._stats.decisions = kept  # type: ignore[assignment]
            self._revoked = 0
        return self._stats
