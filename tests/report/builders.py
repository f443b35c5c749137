"""Small builders for RunStats: just the fields a test cares about."""

from __future__ import annotations

import msgspec

from berth.core.pipeline.records import DecisionRecord
from berth.core.pipeline.stats import (
    Binding,
    BufferPoint,
    DecisionPoint,
    NodeUse,
    OverRun,
    Percentiles,
    RunStats,
    Series,
)
from berth.core.scheduler.results import NodeResult

GI = 2**30
TI = 2**40
T0 = "2026-11-01T10:00:00Z"


def ts(seconds: int) -> str:
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"2026-11-01T{10 + h:02d}:{m:02d}:{s:02d}Z"


def decisions(*spec: tuple[str, str, int], timed: bool = True) -> list[DecisionPoint]:
    """(status, reason, how many) groups, one decision per second of log time (or per position)."""
    out: list[DecisionPoint] = []
    for status, reason, n in spec:
        for _ in range(n):
            i = len(out)
            out.append(DecisionPoint(ts(i) if timed else None, i + 1, status, reason))
    return out


def binding(request: int, capacity: int, storage_class: str = "local", name: str = "") -> Binding:
    name = name or f"{request}-{capacity}"
    return Binding(
        claim=f"ns/claim-{name}", pv=f"pv-{name}", storage_class=storage_class, request=request, capacity=capacity
    )


def node(name: str, cpu: tuple[int, int], memory: tuple[int, int] = (0, 32 * GI)) -> NodeUse:
    return NodeUse(name, cpu[0], cpu[1], memory[0], memory[1])


def buffer(name: str, position: int, replicas: int, ready: int, timed: bool = True) -> BufferPoint:
    return BufferPoint(ts(position) if timed else None, position, name, replicas, ready)


def sample(label: str = "capacity-on.yaml") -> RunStats:
    """A run with a bit of everything, and numbers a test can check by hand."""
    return RunStats(
        label=label,
        events=1200,
        rejects=3,
        seconds=0.5,
        decisions=decisions(
            ("Scheduled", "", 6),
            ("Unschedulable", "node(s) had volume node affinity conflict", 3),
            ("Unschedulable", "node(s) didn't find available persistent volumes to bind", 2),
            ("Error", "running VolumeBinding: boom", 1),
        ),
        bindings=[
            binding(5 * GI, TI, name="a"),  # small claim on a large PV: 1019 GiB wasted
            binding(100 * GI, 2 * TI, name="b"),  # large PV, not a small claim: 1948 GiB
            binding(10 * GI, 10 * GI, storage_class="fast", name="c"),  # exact fit
        ],
        nodes=[
            node("n1", (2000, 4000), (8 * GI, 32 * GI)),  # 50% cpu, 25% memory
            node("n2", (4000, 4000), (16 * GI, 32 * GI)),  # 100%, 50%
            node("n3", (0, 4000), (0, 32 * GI)),  # 0%, 0%
            node("n4", (1000, 4000), (4 * GI, 32 * GI)),  # 25%, 12.5%
        ],
        buffers=[
            buffer("ns/web", 2, 4, 1),
            buffer("ns/db", 3, 2, 2),
            buffer("ns/web", 8, 4, 3),
        ],
    )


def over_run(scale: float = 1.0) -> OverRun:
    """What a run measured over its whole log: enough for every over-the-run plot to draw."""
    ten = [0.1 * scale * i for i in range(10)]
    return OverRun(
        seconds=600.0,
        pods_scheduled=10,
        time_to_schedule=Percentiles(1.0, 9.0, 10.0, 10.0),
        wait_quantiles=[float(1 + i // 10) for i in range(101)],
        pvs_chosen=3,
        pv_bytes_requested=115 * GI,
        pv_bytes_capacity=3 * TI + 10 * GI,
        large_pvs_taken_by_small_claims=1,
        large_pvs_chosen=2,
        series=Series(
            seconds=[60.0 * i + 30 for i in range(10)],
            cpu=ten,
            memory=ten,
            cpu_spread=ten,
            memory_spread=ten,
            cpu_stranded=ten,
            memory_stranded=ten,
        ),
        buffers_ready={"ns/web": 0.5 * scale, "ns/db": 1.0},
    )


def record(
    pod: str,
    status: str,
    position: int,
    attempt: int = 1,
    node: str | None = None,
    reasons: dict[str, int] | None = None,
    nodes: dict[str, NodeResult] | None = None,
    message: str = "",
) -> DecisionRecord:
    """A decision of `pod` at `position` (one second of log time per position)."""
    return DecisionRecord(
        ts=ts(position),
        decision_id=f"{pod}/{attempt}",
        position=position,
        attempt=attempt,
        pod=pod,
        status=status,
        node=node,
        message=message or (f"Successfully assigned {pod} to {node}" if node else f"0/3 nodes are available: {pod}"),
        nodes=nodes or {},
        reasons=reasons or msgspec.UNSET,
    )


def scored(total: int, **scores: int) -> NodeResult:
    return NodeResult(feasible=True, reasons=[], scores=scores, total=total)


def rejected(*reasons: str) -> NodeResult:
    return NodeResult(feasible=False, reasons=list(reasons))
