"""`write_report`: one self-contained page, its PNGs, the same numbers as the summary."""

from __future__ import annotations

import base64
import re
import struct
from pathlib import Path

import pytest

from berth.adapters.files.report import XAxis, buffer_totals, write_report
from berth.core.pipeline.stats import Binding, DecisionPoint, NodeUse, RunStats
from tests.report.builders import GI, buffer, decisions, node, over_run, sample

PLOTS = ("decisions", "pv-fit", "node-utilization", "buffers")
DATA_URI = re.compile(r'<img alt="[^"]*" src="data:image/png;base64,([A-Za-z0-9+/=]+)"[^>]*>')


def images(page: str) -> list[bytes]:
    return [base64.b64decode(m) for m in DATA_URI.findall(page)]


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def off_run() -> RunStats:
    return RunStats(
        label="capacity-off.yaml",
        decisions=decisions(("Scheduled", "", 12)),
        bindings=[Binding("ns/c", "pv", "local", 5 * GI, 2**40)],
        nodes=[node("n1", (1000, 4000))],
    )


@pytest.fixture(scope="module")
def one(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample run's report (drawing takes a while: shared by the tests that only read it)."""
    return Path(write_report([sample()], str(tmp_path_factory.mktemp("one") / "out")))


@pytest.fixture(scope="module")
def compare(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return Path(write_report([sample(), off_run()], str(tmp_path_factory.mktemp("compare"))))


def test_one_run(one: Path) -> None:
    assert one.name == "index.html" and one.parent.name == "out"
    page = one.read_text(encoding="utf-8")
    embedded = images(page)
    assert page.count('<img alt="') == len(PLOTS) == len(embedded)
    for name, data in zip(PLOTS, embedded, strict=True):
        # the file next to the page is the very PNG the page embeds
        assert (one.parent / f"{name}.png").read_bytes() == data
        assert png_size(data)[0] >= 900
    assert "http://" not in page and "https://" not in page
    assert "<link" not in page and "<script src" not in page
    # the metrics table carries the summary's numbers
    for text in ("1,200", "2,400", "6 (50.0%)", "2.9 TiB (96.3%)", "1 of 2 (50.0%)", "43.8%", "37.0%", "5/6 (83.3%)"):
        assert f"<td>{text}</td>" in page, text
    assert "<td>3/4 (75.0%)</td>" in page


def test_png_has_no_software_or_date_stamp(one: Path) -> None:
    for name in PLOTS:
        data = (one.parent / f"{name}.png").read_bytes()
        assert b"Software" not in data and b"matplotlib" not in data and b"tIME" not in data


def test_same_runs_same_bytes(compare: Path, tmp_path: Path) -> None:
    again = Path(write_report([sample(), off_run()], str(tmp_path)))
    assert again.read_bytes() == compare.read_bytes()


def test_compare_shows_both(compare: Path, one: Path) -> None:
    page = compare.read_text(encoding="utf-8")
    assert "<th>capacity-on.yaml</th>" in page and "<th>capacity-off.yaml</th>" in page
    assert "<td>6 (50.0%)</td><td>12 (100.0%)</td>" in page
    assert "<td>1 of 2 (50.0%)</td><td>1 of 1 (100.0%)</td>" in page
    embedded = images(page)
    assert len(embedded) == len(PLOTS)
    single = images(one.read_text(encoding="utf-8"))
    # decisions and buffers get a row of axes per run: taller than the single run's
    assert png_size(embedded[0])[1] > png_size(single[0])[1]
    assert png_size(embedded[3])[1] > png_size(single[3])[1]


def test_empty_runs(tmp_path: Path) -> None:
    for name in PLOTS:  # an earlier report in the same directory
        (tmp_path / f"{name}.png").write_bytes(b"old")
    page = Path(write_report([RunStats(), RunStats(label="other")], str(tmp_path))).read_text(encoding="utf-8")
    assert images(page) == []
    assert "No decisions were made in this log." in page
    assert "No PVs were chosen in this log." in page
    assert "No nodes at the end of this log." in page
    assert "No CapacityBuffers in this log." in page
    assert sorted(p.name for p in tmp_path.iterdir()) == ["index.html"]  # stale plots removed


def test_no_buffers_is_a_note(tmp_path: Path) -> None:
    run = sample()
    run.buffers = []
    page = Path(write_report([run], str(tmp_path))).read_text(encoding="utf-8")
    assert len(images(page)) == 3
    assert "No CapacityBuffers in this log." in page
    assert not (tmp_path / "buffers.png").exists()


def test_one_run_empty_in_a_compare(tmp_path: Path) -> None:
    page = Path(write_report([sample(), RunStats(label="nothing")], str(tmp_path))).read_text(encoding="utf-8")
    assert len(images(page)) == len(PLOTS)


def test_labels_are_escaped(tmp_path: Path) -> None:
    page = Path(write_report([RunStats(label="<b>&x</b>")], str(tmp_path))).read_text(encoding="utf-8")
    assert "<b>&x" not in page
    assert "<th>&lt;b&gt;&amp;x&lt;/b&gt;</th>" in page


def test_odd_inputs_draw_without_warnings(tmp_path: Path) -> None:
    # one decision (a zero-width time range), an unknown status, nodes with nothing allocatable,
    # a zero-replica buffer and a label the bundled font cannot draw; warnings are errors here.
    run = RunStats(
        label="配置.yaml",
        decisions=[DecisionPoint(None, 5, "Preempted", "")],
        bindings=[Binding("ns/c", "pv", "", GI, GI)],
        nodes=[NodeUse("a", 0, 0, 0, 0), NodeUse("b", 1, 2, 0, 0)],
        buffers=[buffer("ns/b", 5, 0, 0, timed=False)],
    )
    page = Path(write_report([run], str(tmp_path))).read_text(encoding="utf-8")
    assert len(images(page)) == len(PLOTS)
    assert "<td>Preempted</td>" not in page  # a status row, not a cell value
    assert ">Preempted</td><td>1 (100.0%)</td>" in page


def test_time_axis_when_every_point_has_a_timestamp() -> None:
    run = RunStats(decisions=decisions(("Scheduled", "", 241)), buffers=[buffer("ns/b", 30, 1, 0)])
    axis = XAxis([run])
    assert axis.label == "min since 2026-11-01T10:00:00Z"  # 240 s: beyond 180 s, minutes
    assert axis.x(run.decisions[-1]) == pytest.approx(4.0)
    assert axis.x(run.buffers[0]) == pytest.approx(0.5)


def test_seconds_for_short_logs() -> None:
    run = RunStats(decisions=decisions(("Scheduled", "", 121)))
    axis = XAxis([run])
    assert axis.label == "s since 2026-11-01T10:00:00Z"
    assert axis.x(run.decisions[-1]) == pytest.approx(120.0)


def test_position_axis_when_a_timestamp_is_missing() -> None:
    run = RunStats(decisions=decisions(("Scheduled", "", 3)), buffers=[buffer("ns/b", 30, 1, 0, timed=False)])
    axis = XAxis([run])
    assert axis.label == "position in the log"
    assert [axis.x(d) for d in run.decisions] == [1.0, 2.0, 3.0]


def test_buffer_totals_count_each_buffer_once() -> None:
    points = [
        buffer("a", 1, 2, 0, timed=False),
        buffer("b", 2, 3, 1, timed=False),
        buffer("a", 3, 2, 2, timed=False),
        buffer("b", 3, 1, 1, timed=False),  # same position: one entry, the later value
    ]
    axis = XAxis([RunStats(buffers=points)])
    assert buffer_totals(points, axis) == ([1.0, 2.0, 3.0], [2, 5, 3], [0, 1, 3])


def test_many_buffers_are_drawn_as_totals(tmp_path: Path) -> None:
    run = RunStats(buffers=[buffer(f"ns/b{i}", i, 2, 1) for i in range(20)])
    page = Path(write_report([run], str(tmp_path))).read_text(encoding="utf-8")
    assert "20 buffers, so their totals" in page


def test_large_runs(tmp_path: Path) -> None:
    """20,000 decisions and 5,000 nodes, twice: the plots aggregate first (timings are for `make bench`)."""
    runs = []
    for label in ("on", "off"):
        runs.append(
            RunStats(
                label=label,
                decisions=decisions(("Scheduled", "", 15_000), ("Unschedulable", "r", 5_000)),
                bindings=[Binding(f"c{i}", f"pv{i}", f"sc{i % 12}", GI * (1 + i % 50), 64 * GI) for i in range(10_000)],
                nodes=[NodeUse(f"n{i}", i % 4000, 4000, i * GI % (32 * GI), 32 * GI) for i in range(5_000)],
                buffers=[buffer(f"ns/b{i % 50}", i * 7, 4, i % 5) for i in range(2_000)],
            )
        )
    page = Path(write_report(runs, str(tmp_path))).read_text(encoding="utf-8")
    assert len(images(page)) == len(PLOTS)
    assert "<td>15,000 (75.0%)</td><td>15,000 (75.0%)</td>" in page


def test_axis_spans_decisions_and_buffers() -> None:
    run = RunStats(decisions=decisions(("Scheduled", "", 1)), buffers=[buffer("ns/b", 240, 1, 0)])
    axis = XAxis([run])
    assert (axis.lo, axis.hi) == (0.0, 4.0)  # minutes: the decision at 0 s, the buffer at 240 s
    alone = XAxis([RunStats(decisions=decisions(("Scheduled", "", 1)))])
    assert (alone.lo, alone.hi) == (-0.5, 0.5)  # one instant still gets a width


OVER_RUN_PLOTS = ("time-to-schedule", "requested", "spread", "stranded", "buffers-ready", "volumes")
SHOWS = re.compile(
    r'<h3 id="([^"]+)" class="plot">.*?\n<p>.*?</p>\n(?:<p class="empty">.*?</p>\n)*<img alt="[^"]*" src="[^"]*" data-shows="([^"]*)">'
)


@pytest.mark.parametrize("n", [1, 3])
def test_every_over_the_run_plot_shows_every_run(n: int, tmp_path: Path) -> None:
    """Each plot of a figure over the run is drawn, and its legend or titles name every run."""
    import html

    import msgspec

    runs = [msgspec.structs.replace(sample(f"config-{i}.yaml"), over_run=over_run(1.0 - 0.2 * i)) for i in range(n)]
    page = Path(write_report(runs, str(tmp_path))).read_text(encoding="utf-8")
    shows = {name: html.unescape(texts).split(" | ") for name, texts in SHOWS.findall(page)}
    for plot in OVER_RUN_PLOTS:
        assert plot in shows, plot
        assert (tmp_path / f"{plot}.png").is_file()
        for i in range(n):
            assert any(t.startswith(f"config-{i}") for t in shows[plot]), (plot, i, shows[plot])


def test_over_the_run_plots_say_when_there_is_nothing(one: Path) -> None:
    page = one.read_text(encoding="utf-8")
    for plot in OVER_RUN_PLOTS:
        assert f'<h3 id="{plot}" class="plot">' in page
        assert not (one.parent / f"{plot}.png").exists()
