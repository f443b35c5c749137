"""The metric rows the summary table and the report share: numbers worked out by hand."""

from __future__ import annotations

import pytest

from berth.core.pipeline.metrics import byte_unit, human_bytes, metric_sections, run_labels
from berth.core.pipeline.stats import DecisionPoint, RunStats
from tests.report.builders import GI, TI, binding, buffer, decisions, node, sample


def table(runs: list[RunStats], **kwargs: int) -> dict[str, list[str]]:
    """Rows by "Section/name" (names repeat across sections, e.g. stddev under cpu and memory: first wins)."""
    out: dict[str, list[str]] = {}
    for section in metric_sections(runs, **kwargs):
        for row in section.rows:
            out.setdefault(f"{section.title}/{row.name}", row.values)
    return out


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0, "0 B"),
        (512, "512 B"),
        (1024, "1 KiB"),
        (1536, "1.5 KiB"),
        (1288490188, "1.2 GiB"),
        (10 * GI, "10 GiB"),
        (1019 * GI, "1,019 GiB"),
        (TI, "1 TiB"),
        (2038 * GI, "2.0 TiB"),  # not exactly 2 TiB, so it keeps its decimal
        (2967 * GI, "2.9 TiB"),
        (-3 * GI, "-3 GiB"),
    ],
)
def test_human_bytes(value: int, text: str) -> None:
    assert human_bytes(value) == text


@pytest.mark.parametrize(
    ("value", "unit"),
    [
        (0, ("B", 1)),
        (1023, ("B", 1)),
        (1024, ("KiB", 2**10)),
        (5 * GI - 1, ("GiB", GI)),
        (TI, ("TiB", TI)),
        (3 * 2**60, ("EiB", 2**60)),
    ],
)
def test_byte_unit_is_the_largest_not_above(value: int, unit: tuple[str, int]) -> None:
    assert byte_unit(value) == unit


def test_labels_are_made_distinct() -> None:
    runs = [RunStats(label="a.yaml"), RunStats(label="a.yaml"), RunStats(label="b.yaml"), RunStats(label="")]
    assert run_labels(runs) == ["a.yaml #1", "a.yaml #2", "b.yaml", "run"]


def test_sample_numbers() -> None:
    t = table([sample()])
    assert t["Input/events"] == ["1,200"]
    assert t["Input/rejected lines"] == ["3"]
    assert t["Input/events/s"] == ["2,400"]
    assert t["Decisions (each pod by its last)/decisions"] == ["12"]
    assert t["Decisions (each pod by its last)/pods Scheduled"] == ["6 (50.0%)"]
    assert t["Decisions (each pod by its last)/pods Unschedulable"] == ["5 (41.7%)"]
    assert t["Decisions (each pod by its last)/pods Error"] == ["1 (8.3%)"]
    assert t["Decisions (each pod by its last)/node(s) had volume node affinity conflict"] == ["3"]
    assert t["Decisions (each pod by its last)/node(s) didn't find available persistent volumes to bind"] == ["2"]
    assert t["Volumes at the end/PVs chosen"] == ["3"]
    assert t["Volumes at the end/requested"] == ["115 GiB"]
    # (1024 - 5) + (2048 - 100) + 0 = 2967 GiB wasted of 3082 GiB chosen.
    assert t["Volumes at the end/PV capacity wasted (% of chosen)"] == ["2.9 TiB (96.3%)"]
    assert t["Volumes at the end/large PVs ≥1 TiB taken by claims ≤10 GiB"] == ["1 of 2 (50.0%)"]
    # cpu .5, 1, 0, .25: mean .4375, population stddev sqrt(.546875 / 4) = .3698.
    assert t["Nodes at the end/cpu utilization mean"] == ["43.8%"]
    assert t["Nodes at the end/stddev"] == ["37.0%"]
    assert t["Nodes at the end/max"] == ["100.0%"]
    assert t["Nodes at the end/memory utilization mean"] == ["21.9%"]
    assert t["Buffers at the end/buffers"] == ["2"]
    assert t["Buffers at the end/fully ready at the end"] == ["1 of 2"]
    assert t["Buffers at the end/readyReplicas / replicas at the end"] == ["5/6 (83.3%)"]
    assert t["Buffers at the end/ns/web"] == ["3/4 (75.0%)"]  # the last point counts, not the first
    assert t["Buffers at the end/ns/db"] == ["2/2 (100.0%)"]


def test_memory_rows_are_not_the_cpu_rows() -> None:
    rows = next(s for s in metric_sections([sample()]) if s.title == "Nodes at the end").rows
    names = [r.name for r in rows]
    memory = names.index("memory utilization mean")
    assert [r.values for r in rows[memory + 1 : memory + 3]] == [["18.5%"], ["50.0%"]]


def test_reasons_are_ranked_over_both_runs_and_the_rest_summed() -> None:
    a = RunStats(label="a", decisions=decisions(("Unschedulable", "x", 1), ("Unschedulable", "y", 4)))
    b = RunStats(label="b", decisions=decisions(("Unschedulable", "x", 5), ("Unschedulable", "z", 2)))
    sections = metric_sections([a, b], top_reasons=2)
    rows = [r for r in next(s for s in sections if s.title.startswith("Decisions")).rows if r.indent == 1]
    # x: 6 in all, y: 4, z: 2 -> x and y listed, z summed as the rest.
    assert [(r.name, r.values) for r in rows] == [
        ("x", ["1", "5"]),
        ("y", ["4", "0"]),
        ("other reasons", ["0", "2"]),
    ]


def test_many_buffers_are_aggregated() -> None:
    run = RunStats(buffers=[buffer(f"ns/b{i}", i, 2, i % 3) for i in range(12)])
    t = table([run], max_buffer_rows=8)
    assert t["Buffers at the end/buffers"] == ["12"]
    assert t["Buffers at the end/fully ready at the end"] == ["4 of 12"]  # i % 3 == 2 for i = 2, 5, 8, 11
    assert t["Buffers at the end/readyReplicas / replicas at the end"] == ["12/24 (50.0%)"]
    assert not any(k.startswith("Buffers at the end/ns/") for k in t)


def test_compare_columns_follow_the_runs() -> None:
    off = RunStats(
        label="off", bindings=[binding(5 * GI, TI), binding(5 * GI, TI, name="x")], nodes=[node("n", (1, 4))]
    )
    t = table([sample(), off])
    assert t["Volumes at the end/large PVs ≥1 TiB taken by claims ≤10 GiB"] == ["1 of 2 (50.0%)", "2 of 2 (100.0%)"]
    assert t["Volumes at the end/PV capacity wasted (% of chosen)"] == ["2.9 TiB (96.3%)", "2.0 TiB (99.5%)"]
    assert t["Nodes at the end/cpu utilization mean"] == ["43.8%", "25.0%"]
    assert t["Buffers at the end/ns/web"] == ["3/4 (75.0%)", "-"]


def test_empty_run() -> None:
    t = table([RunStats()])
    assert t["Input/events/s"] == ["-"]
    assert t["Decisions (each pod by its last)/pods Scheduled"] == ["0"]
    assert t["Volumes at the end/PV capacity wasted (% of chosen)"] == ["0 B"]
    assert t["Volumes at the end/large PVs ≥1 TiB taken by claims ≤10 GiB"] == ["0 of 0"]
    assert t["Nodes at the end/cpu utilization mean"] == ["-"]
    assert t["Buffers at the end/buffers"] == ["0"]


def test_no_runs_is_a_mistake() -> None:
    with pytest.raises(ValueError, match="at least one run"):
        metric_sections([])


def test_memory_utilization_and_nodes_without_allocatable() -> None:
    run = RunStats(nodes=[node("a", (1, 2), (3 * GI, 4 * GI)), node("b", (0, 0), (0, 0))])
    assert run.node_ratios("cpu") == [0.5]
    assert run.utilization("memory") == (0.75, 0.0, 0.75)
    with pytest.raises(ValueError, match="unknown resource"):
        run.node_ratios("gpu")


def test_a_retried_pod_counts_once_by_its_last_decision() -> None:
    run = RunStats(
        decisions=[
            DecisionPoint(None, 1, "Unschedulable", "no room", "ns/a"),
            DecisionPoint(None, 5, "Scheduled", "", "ns/a"),
            DecisionPoint(None, 6, "Unschedulable", "no room", "ns/b"),
        ]
    )
    t = table([run])
    assert t["Decisions (each pod by its last)/decisions"] == ["3"]
    assert t["Decisions (each pod by its last)/pods decided"] == ["2"]
    assert t["Decisions (each pod by its last)/pods Scheduled"] == ["1 (50.0%)"]
    assert t["Decisions (each pod by its last)/pods Unschedulable"] == ["1 (50.0%)"]
