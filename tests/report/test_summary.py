"""The table `berth replay` prints: captured at 120 columns, read back cell by cell."""

from __future__ import annotations

import io

from rich.console import Console

from berth.core.pipeline.stats import RunStats
from berth_cli.summary import render_summary
from tests.report.builders import decisions, sample


def render(runs: list[RunStats], width: int = 120) -> str:
    console = Console(file=io.StringIO(), width=width)
    render_summary(runs, console)
    out = console.file.getvalue()  # type: ignore[attr-defined]
    assert isinstance(out, str)
    return out


def cells(out: str, name: str, section: str = "") -> list[str]:
    """The cells of the first row whose metric is `name` (in `section`, if given)."""
    lines = out.splitlines()
    if section:
        lines = lines[next(i for i, line in enumerate(lines) if section in line) :]
    for line in lines:
        parts = [p.strip() for p in line.split("│")]
        if len(parts) > 2 and parts[1] == name:
            return parts[2:-1]
    raise AssertionError(f"no row {name!r} in\n{out}")


def test_one_run() -> None:
    out = render([sample()])
    assert "capacity-on.yaml" in out
    assert cells(out, "events") == ["1,200"]
    assert cells(out, "events/s") == ["2,400"]
    assert cells(out, "rejected lines") == ["3"]
    assert cells(out, "pods Scheduled") == ["6 (50.0%)"]
    assert cells(out, "pods Unschedulable") == ["5 (41.7%)"]
    assert cells(out, "pods Error") == ["1 (8.3%)"]
    assert cells(out, "node(s) had volume node affinity conflict") == ["3"]
    assert cells(out, "PV capacity wasted (% of chosen)", "Volumes at the end") == ["2.9 TiB (96.3%)"]
    assert cells(out, "large PVs ≥1 TiB taken by claims ≤10 GiB", "Volumes at the end") == ["1 of 2 (50.0%)"]
    assert cells(out, "cpu utilization mean", "Nodes at the end") == ["43.8%"]
    assert cells(out, "stddev", "Nodes at the end") == ["37.0%"]
    assert cells(out, "max", "Nodes at the end") == ["100.0%"]
    assert cells(out, "readyReplicas / replicas at the end") == ["5/6 (83.3%)"]
    assert cells(out, "ns/web") == ["3/4 (75.0%)"]


def test_compare_has_a_column_per_run() -> None:
    off = RunStats(label="capacity-off.yaml", events=1200, seconds=1.0, decisions=decisions(("Scheduled", "", 12)))
    out = render([sample(), off])
    header = next(line for line in out.splitlines() if "metric" in line)
    assert header.index("capacity-on.yaml") < header.index("capacity-off.yaml")
    assert cells(out, "events/s") == ["2,400", "1,200"]
    assert cells(out, "pods Scheduled") == ["6 (50.0%)", "12 (100.0%)"]
    assert cells(out, "node(s) had volume node affinity conflict") == ["3", "0"]
    assert cells(out, "ns/web") == ["3/4 (75.0%)", "-"]


def test_fits_in_120_columns_with_long_reasons_and_labels() -> None:
    reason = "0/5000 nodes are available: 5000 node(s) didn't find available persistent volumes to bind. " * 2
    a = RunStats(label="configs/capacity-priority-on.yaml", decisions=decisions(("Unschedulable", reason, 2)))
    b = RunStats(label="configs/capacity-priority-off.yaml", decisions=decisions(("Unschedulable", reason, 1)))
    out = render([a, b])
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= 120
    assert "configs/capacity-priority-off.yaml" in out  # labels are not cut
    row = next(line for line in lines if "0/5000 nodes" in line)
    assert "…" in row  # the reason is, with an ellipsis
    assert [p.strip() for p in row.split("│")][2:-1] == ["2", "1"]


def test_very_long_labels_fold_and_still_fit() -> None:
    runs = [RunStats(label="x" * 70), RunStats(label="y" * 70), RunStats(label="z" * 70)]
    out = render(runs)
    assert max(len(line) for line in out.splitlines()) <= 120
    assert out.count("x") >= 70


def test_reasons_are_not_markup() -> None:
    run = RunStats(decisions=decisions(("Unschedulable", "[bold]x[/bold] conflict", 1)))
    out = render([run])
    assert cells(out, "[bold]x[/bold] conflict") == ["1"]


def test_empty_run() -> None:
    out = render([RunStats(label="empty")])
    assert cells(out, "decisions") == ["0"]
    assert cells(out, "events/s") == ["-"]
    assert cells(out, "cpu utilization mean", "Nodes at the end") == ["-"]
    assert cells(out, "buffers") == ["0"]
