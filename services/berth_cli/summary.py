"""The table `berth replay` prints at the end: one column per run, metrics as rows."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from berth.core.pipeline.metrics import metric_sections, run_labels
from berth.core.pipeline.stats import RunStats

METRIC_WIDTH = 60  # the metric column at most; long reasons end in an ellipsis here, in full in the report
METRIC_MIN = 24  # and at least
LABEL_WIDTH = 40  # a run's column is as wide as its label up to this; longer labels fold


def render_summary(runs: list[RunStats], console: Console) -> None:
    """Print the metric table for one run, or for two (or more) side by side with --compare."""
    labels = run_labels(runs)
    sections = metric_sections(runs)
    names = [("  " * (row.indent + 1) + row.name) for s in sections for row in s.rows]
    widths = [
        max(min(len(label), LABEL_WIDTH), *(len(row.values[i]) for s in sections for row in s.rows))
        for i, label in enumerate(labels)
    ]
    # rich only shrinks columns that may wrap; the metric column must not wrap, so size it here:
    # whatever the run columns and the borders (3 per column, plus 1) leave, within bounds.
    room = console.width - 3 * (len(runs) + 1) - 1 - sum(widths)
    metric_width = max(METRIC_MIN, min(METRIC_WIDTH, max(len(n) for n in names), room))
    fits = room >= METRIC_MIN  # if not (many runs, long labels), let rich fold the run columns

    table = Table(title="berth replay summary", title_justify="left", header_style="bold")
    table.add_column("metric", width=metric_width, no_wrap=True, overflow="ellipsis")
    for label, width in zip(labels, widths, strict=True):
        table.add_column(Text(label), justify="right", overflow="fold", min_width=width if fits else None)
    first = True
    for section in sections:
        if not first:
            table.add_section()
        first = False
        table.add_row(Text(section.title, style="bold"), *[""] * len(runs))
        for row in section.rows:
            # Text, not str: reasons and buffer names must never be read as console markup.
            name = Text("  " * (row.indent + 1) + row.name, no_wrap=True, overflow="ellipsis")
            table.add_row(name, *[Text(v) for v in row.values])
    console.print(table)


def summary_json(runs: list[RunStats]) -> dict[str, Any]:
    """`--summary FILE.json`: the over-the-run metrics, one object per run in column order.
    The keys are a contract for scripts (docs/replay.md)."""
    out = []
    for label, r in zip(run_labels(runs), runs, strict=True):
        o = r.over_run
        out.append(
            {
                "label": label,
                "events": r.events,
                "rejects": r.rejects,
                "podsDecided": o.pods_decided,
                "podsSkipped": r.skipped,
                "podsGated": r.gated,
                "podsRetriedAtEnd": r.retried_at_end,
                "podsScheduled": o.pods_scheduled,
                "podsScheduledFirstAttempt": o.scheduled_first_attempt,
                "podsNeverScheduled": o.never_scheduled,
                "podsUnschedulableAtEnd": o.pods_unschedulable_at_end,
                "unschedulableAtEndByReason": o.unschedulable_at_end,
                "podsErrorAtEnd": o.pods_error_at_end,
                "pvsChosen": o.pvs_chosen,
                "pvBytesRequested": o.pv_bytes_requested,
                "pvBytesWasted": o.pv_bytes_wasted,
                "largePVsTakenBySmallClaims": o.large_pvs_taken_by_small_claims,
                "timeToScheduleSeconds": {k: round(getattr(o.time_to_schedule, k), 3) for k in _PERCENTILES},
                "cpuRequested": {"mean": round(o.cpu.mean, 6), "peak": round(o.cpu.peak, 6)},
                "memoryRequested": {"mean": round(o.memory.mean, 6), "peak": round(o.memory.peak, 6)},
                "cpuSpread": round(o.cpu_spread, 6),
                "memorySpread": round(o.memory_spread, 6),
                "cpuStranded": {"mean": round(o.cpu_stranded.mean, 6), "peak": round(o.cpu_stranded.peak, 6)},
                "memoryStranded": {"mean": round(o.memory_stranded.mean, 6), "peak": round(o.memory_stranded.peak, 6)},
                "buffersFullyReady": {k: round(v, 6) for k, v in o.buffers_ready.items()},
                "logSeconds": o.seconds,
                "preemptions": len(r.preemptions),
                "victims": sum(len(p.victims) for p in r.preemptions),
                "victimsByPriority": {str(k): v for k, v in r.victims_by_priority().items()},
            }
        )
    return {"runs": out}


_PERCENTILES = ("p50", "p90", "p99", "max")


def write_summary(runs: list[RunStats], path: str) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(summary_json(runs), indent=2) + "\n")
