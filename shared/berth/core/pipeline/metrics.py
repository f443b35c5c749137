"""The metric table of one or more runs, as text: the rows the summary table and the report both show.

One function builds the rows so the terminal and the HTML page can never disagree on a number.
"""

from __future__ import annotations

import msgspec

from berth.core.api.meta.quantity import BINARY
from berth.core.pipeline.stats import LARGE_PV, SMALL_CLAIM, RunStats

TOP_REASONS = 5  # unschedulable reasons listed one per row; the rest are summed
MAX_BUFFER_ROWS = 8  # up to this many buffers get one row each; more are aggregated

_BYTE_UNITS = [(f"{suffix}B", size) for suffix, size in reversed(BINARY.items())]  # largest first


class Row(msgspec.Struct, frozen=True):
    name: str
    values: list[str]  # one per run, in run order
    indent: int = 0  # 1 for a breakdown of the row above


class Section(msgspec.Struct, frozen=True):
    title: str
    rows: list[Row]


def run_labels(runs: list[RunStats]) -> list[str]:
    """The runs' labels, made distinct (`a`, `a` -> `a #1`, `a #2`) so columns and legends can be told apart."""
    return distinct([r.label or "run" for r in runs])


def distinct(labels: list[str]) -> list[str]:
    """`a`, `a`, `b` -> `a #1`, `a #2`, `b`."""
    seen: dict[str, int] = {}
    for label in labels:
        seen[label] = seen.get(label, 0) + 1
    counter: dict[str, int] = {}
    out = []
    for label in labels:
        if seen[label] > 1:
            counter[label] = counter.get(label, 0) + 1
            out.append(f"{label} #{counter[label]}")
        else:
            out.append(label)
    return out


def human_bytes(value: int) -> str:
    """1288490188 -> "1.2 GiB"; exact multiples have no decimal: "10 GiB", "1,019 GiB"; below 1 KiB: "512 B"."""
    sign = "-" if value < 0 else ""
    value = abs(value)
    unit, size = byte_unit(value)
    text = f"{value // size:,}" if value % size == 0 else f"{value / size:,.1f}"
    return f"{sign}{text} {unit}"


def byte_unit(value: int) -> tuple[str, int]:
    """The largest binary unit not above a byte count, and its size: ("GiB", 2**30); ("B", 1) below 1 KiB."""
    return next(((unit, size) for unit, size in _BYTE_UNITS if value >= size), ("B", 1))


def percent(part: float, whole: float) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "-"


def rate(events: int, seconds: float) -> str:
    if seconds <= 0:
        return "-"
    per = events / seconds
    return f"{per:,.0f}" if per >= 100 else f"{per:.1f}"


def top_reasons(runs: list[RunStats], top: int = TOP_REASONS, status: str = "Unschedulable") -> tuple[list[str], bool]:
    """The most common reasons of a status over all runs (count, then text), and whether others exist."""
    total: dict[str, int] = {}
    for run in runs:
        for reason, n in run.counts().get(status, {}).items():
            total[reason] = total.get(reason, 0) + n
    ranked = sorted(total, key=lambda r: (-total[r], r))
    return ranked[:top], len(ranked) > top


def metric_sections(
    runs: list[RunStats],
    *,
    top_reasons: int = TOP_REASONS,
    max_buffer_rows: int = MAX_BUFFER_ROWS,
    small: int = SMALL_CLAIM,
    large: int = LARGE_PV,
) -> list[Section]:
    """The metric table: sections of rows, one value per run."""
    if not runs:
        raise ValueError("metric_sections needs at least one run")
    return [
        _input(runs),
        _pods(runs, top_reasons),
        _volumes_over_run(runs),
        _nodes_over_run(runs),
        _buffers_over_run(runs, max_buffer_rows),
        _decisions(runs, top_reasons),
        _volumes(runs, small, large),
        _nodes(runs),
        _buffers(runs, max_buffer_rows),
    ]


def _pods(runs: list[RunStats], top: int) -> Section:
    """Pods over the whole run (berth.core.pipeline.overrun)."""
    over = [r.over_run for r in runs]
    rows = [
        Row("pods decided", [f"{o.pods_decided:,}" for o in over]),
        Row("scheduled", [_n_of(o.pods_scheduled, o.pods_decided) for o in over]),
        Row("on the first attempt", [f"{o.scheduled_first_attempt:,}" for o in over], indent=1),
        Row("after retries", [f"{o.pods_scheduled - o.scheduled_first_attempt:,}" for o in over], indent=1),
        Row("retried at the end of the log", [f"{r.retried_at_end:,}" for r in runs]),
        Row("never scheduled", [_n_of(o.never_scheduled, o.pods_decided) for o in over]),
        Row("unschedulable at the end", [f"{o.pods_unschedulable_at_end:,}" for o in over]),
    ]
    total: dict[str, int] = {}
    for o in over:
        for reason, n in o.unschedulable_at_end.items():
            total[reason] = total.get(reason, 0) + n
    ranked = sorted(total, key=lambda r: (-total[r], r))
    for reason in ranked[:top]:
        rows.append(
            Row(reason or "(no reason)", [f"{o.unschedulable_at_end.get(reason, 0):,}" for o in over], indent=1)
        )
    if len(ranked) > top:
        listed = set(ranked[:top])
        rows.append(
            Row(
                "other reasons",
                [f"{sum(n for k, n in o.unschedulable_at_end.items() if k not in listed):,}" for o in over],
                indent=1,
            )
        )
    rows.append(Row("in error at the end (see Decisions)", [f"{o.pods_error_at_end:,}" for o in over]))
    rows += _preemptions(runs)
    waits = [o.time_to_schedule for o in over]
    rows.append(Row("time to schedule p50", [_seconds(w.p50) for w in waits]))
    rows.extend(Row(name, [_seconds(getattr(w, name)) for w in waits], indent=1) for name in ("p90", "p99", "max"))
    return Section("Pods over the run", rows)


def _preemptions(runs: list[RunStats]) -> list[Row]:
    """Preemptions carried out and their victims by priority; no rows when no run preempted."""
    if not any(r.preemptions for r in runs):
        return []
    by = [r.victims_by_priority() for r in runs]
    rows = [
        Row("preemptions", [f"{len(r.preemptions):,}" for r in runs]),
        Row("victims", [f"{sum(b.values()):,}" for b in by]),
    ]
    for priority in sorted({p for b in by for p in b}):
        rows.append(Row(f"of priority {priority}", [f"{b.get(priority, 0):,}" for b in by], indent=1))
    return rows


def _seconds(value: float) -> str:
    return f"{value:,.1f} s"


def _volumes_over_run(runs: list[RunStats]) -> Section:
    over = [r.over_run for r in runs]
    return Section(
        "Volumes over the run",
        [
            Row("PVs chosen", [f"{o.pvs_chosen:,}" for o in over]),
            Row("requested", [human_bytes(o.pv_bytes_requested) for o in over]),
            Row(
                "PV capacity wasted (% of chosen)",
                [f"{human_bytes(o.pv_bytes_wasted)} ({percent(o.pv_bytes_wasted, o.pv_bytes_capacity)})" for o in over],
            ),
            Row(
                f"large PVs ≥{human_bytes(LARGE_PV)} taken by claims ≤{human_bytes(SMALL_CLAIM)}",
                [
                    f"{o.large_pvs_taken_by_small_claims:,} of {o.large_pvs_chosen:,} "
                    f"({percent(o.large_pvs_taken_by_small_claims, o.large_pvs_chosen)})"
                    for o in over
                ],
            ),
        ],
    )


def _nodes_over_run(runs: list[RunStats]) -> Section:
    over = [r.over_run for r in runs]

    def pct(x: float) -> str:
        return f"{100 * x:.1f}%"

    return Section(
        "Nodes over the run (weighted by log time)",
        [
            Row("cpu requested / allocatable mean", [pct(o.cpu.mean) for o in over]),
            Row("peak", [pct(o.cpu.peak) for o in over], indent=1),
            Row("per-node stddev", [pct(o.cpu_spread) for o in over], indent=1),
            Row("memory requested / allocatable mean", [pct(o.memory.mean) for o in over]),
            Row("peak", [pct(o.memory.peak) for o in over], indent=1),
            Row("per-node stddev", [pct(o.memory_spread) for o in over], indent=1),
            Row("cpu stranded (no room for the median pod's memory) mean", [pct(o.cpu_stranded.mean) for o in over]),
            Row("peak", [pct(o.cpu_stranded.peak) for o in over], indent=1),
            Row("memory stranded (no room for the median pod's cpu) mean", [pct(o.memory_stranded.mean) for o in over]),
            Row("peak", [pct(o.memory_stranded.peak) for o in over], indent=1),
        ],
    )


def _buffers_over_run(runs: list[RunStats], max_rows: int) -> Section:
    ready = [r.over_run.buffers_ready for r in runs]
    names = sorted({name for by in ready for name in by})
    rows = [
        Row(
            "fully ready, share of log time (mean)",
            [f"{100 * sum(by.values()) / len(by):.1f}%" if by else "-" for by in ready],
        )
    ]
    if len(names) <= max_rows:
        for name in names:
            rows.append(Row(name, [f"{100 * by[name]:.1f}%" if name in by else "-" for by in ready], indent=1))
    return Section("Buffers over the run", rows)


def _input(runs: list[RunStats]) -> Section:
    return Section(
        "Input",
        [
            Row("events", [f"{r.events:,}" for r in runs]),
            Row("rejected lines", [f"{r.rejects:,}" for r in runs]),
            Row("replay time", [f"{r.seconds:.1f} s" for r in runs]),
            Row("events/s", [rate(r.events, r.seconds) for r in runs]),
        ],
    )


def _decisions(runs: list[RunStats], top: int) -> Section:
    counts = [r.counts() for r in runs]
    totals = [{status: sum(by.values()) for status, by in c.items()} for c in counts]
    pods = [len(r.final()) for r in runs]
    rows = [Row("decisions", [f"{len(r.decisions):,}" for r in runs]), Row("pods decided", [f"{n:,}" for n in pods])]
    rows.append(Row("pods skipped (other schedulers)", [f"{r.skipped:,}" for r in runs]))
    rows.append(Row("pods held by scheduling gates", [f"{r.gated:,}" for r in runs]))
    for status in ("Scheduled", "Unschedulable", "Error"):
        rows.append(Row(f"pods {status}", [_n_of(t.get(status, 0), n) for t, n in zip(totals, pods, strict=True)]))
        if status != "Scheduled":  # an Error's reason is its message (dynamic resource allocation, ...)
            reasons, more = top_reasons(runs, top, status)
            for reason in reasons:
                rows.append(
                    Row(reason or "(no reason)", [f"{c.get(status, {}).get(reason, 0):,}" for c in counts], indent=1)
                )
            if more:
                listed = set(reasons)
                rows.append(
                    Row(
                        "other reasons",
                        [f"{sum(n for k, n in c.get(status, {}).items() if k not in listed):,}" for c in counts],
                        indent=1,
                    )
                )
    # Statuses berth does not emit today would otherwise vanish from the table.
    others = sorted({s for t in totals for s in t} - {"Scheduled", "Unschedulable", "Error"})
    rows.extend(Row(s, [_n_of(t.get(s, 0), n) for t, n in zip(totals, pods, strict=True)]) for s in others)
    return Section("Decisions (each pod by its last)", rows)


def _n_of(n: int, total: int) -> str:
    return f"{n:,} ({percent(n, total)})" if total else f"{n:,}"


def _volumes(runs: list[RunStats], small: int, large: int) -> Section:
    waste = []
    for r in runs:
        w = r.pv_waste()
        capacity = sum(b.capacity for b in r.bindings)
        waste.append(f"{human_bytes(w)} ({percent(w, capacity)})" if capacity else human_bytes(w))
    taken = []
    for r in runs:
        n, m = r.large_taken_by_small(small, large)
        taken.append(f"{n:,} of {m:,} ({percent(n, m)})" if m else "0 of 0")
    return Section(
        "Volumes at the end",
        [
            Row("PVs chosen", [f"{len(r.bindings):,}" for r in runs]),
            Row("requested", [human_bytes(sum(b.request for b in r.bindings)) for r in runs]),
            Row("PV capacity wasted (% of chosen)", waste),
            Row(f"large PVs ≥{human_bytes(large)} taken by claims ≤{human_bytes(small)}", taken),
        ],
    )


def _nodes(runs: list[RunStats]) -> Section:
    cpu = [r.utilization() for r in runs]
    memory = [r.utilization("memory") for r in runs]
    return Section(
        "Nodes at the end",
        [
            Row("nodes", [f"{len(r.nodes):,}" for r in runs]),
            Row("cpu utilization mean", [_pct(u[0], r) for u, r in zip(cpu, runs, strict=True)]),
            Row("stddev", [_pct(u[1], r) for u, r in zip(cpu, runs, strict=True)], indent=1),
            Row("max", [_pct(u[2], r) for u, r in zip(cpu, runs, strict=True)], indent=1),
            Row("memory utilization mean", [_pct(u[0], r) for u, r in zip(memory, runs, strict=True)]),
            Row("stddev", [_pct(u[1], r) for u, r in zip(memory, runs, strict=True)], indent=1),
            Row("max", [_pct(u[2], r) for u, r in zip(memory, runs, strict=True)], indent=1),
        ],
    )


def _pct(fraction: float, run: RunStats) -> str:
    return f"{100 * fraction:.1f}%" if run.nodes else "-"


def _buffers(runs: list[RunStats], max_rows: int) -> Section:
    ready = [r.buffer_readiness() for r in runs]
    names = sorted({name for by in ready for name in by})
    if not names:
        return Section("Buffers at the end", [Row("buffers", ["0"] * len(runs))])
    rows = [
        Row("buffers", [f"{len(by):,}" for by in ready]),
        Row(
            "fully ready at the end",
            [f"{sum(1 for rep, rdy in by.values() if rdy >= rep):,} of {len(by):,}" for by in ready],
        ),
        Row(
            "readyReplicas / replicas at the end",
            [_ready(sum(rdy for _, rdy in by.values()), sum(rep for rep, _ in by.values())) for by in ready],
        ),
    ]
    if len(names) <= max_rows:
        for name in names:
            rows.append(Row(name, [_ready(by[name][1], by[name][0]) if name in by else "-" for by in ready], indent=1))
    return Section("Buffers at the end", rows)


def _ready(ready: int, replicas: int) -> str:
    return f"{ready:,}/{replicas:,} ({percent(ready, replicas)})" if replicas else f"{ready:,}/{replicas:,}"
