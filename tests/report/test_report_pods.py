"""The report's pods, read from its HTML as elements: the list of every pod (unschedulable first,
reasons by plugin), each pod's view, why pods are unschedulable, the configs side by side, empty
plots that say why, and nothing loaded from anywhere."""

from __future__ import annotations

import json
import re
from pathlib import Path

import msgspec
import pytest

from berth.adapters.files import reportpods
from berth.adapters.files.report import write_report
from berth.core.pipeline.podtrace import MAX_NODES, MAX_STEPS, PodTrace, pod_traces
from berth.core.pipeline.records import Record
from berth.core.pipeline.stats import RunStats
from berth.core.plugins import nodeaffinity, volumebinding
from berth_cli.main import main
from tests.report.builders import over_run, record, rejected, sample, scored
from tests.report.page import Element, parse

NO_PV = volumebinding.BIND_CONFLICT
AFFINITY = nodeaffinity.REASON
CPU = "Insufficient cpu"


def records() -> list[Record]:
    """Four pods: web-0 scheduled on its second attempt, db-0 unschedulable (three plugins' reasons),
    db-1 unschedulable with its reasons on its nodes (--all-nodes), job-0 in error."""
    return [
        record("ns/web-0", "Unschedulable", 2, reasons={CPU: 3}),
        record("ns/db-0", "Unschedulable", 3, reasons={NO_PV: 2, CPU: 1}),
        record("ns/web-0", "Scheduled", 5, attempt=2, node="n2",
               nodes={"n1": scored(180, NodeResourcesFit=80), "n2": scored(190, NodeResourcesFit=90),
                      "n3": scored(120, NodeResourcesFit=20)}),
        record("ns/db-0", "Unschedulable", 6, attempt=3, reasons={NO_PV: 2, AFFINITY: 3, CPU: 1}),
        record("ns/db-1", "Unschedulable", 7, nodes={"n1": rejected(NO_PV, CPU), "n2": rejected(NO_PV)}),
        record("ns/job-0", "Error", 8, message="running VolumeBinding: boom"),
    ]  # fmt: skip


def traces() -> list[PodTrace]:
    return pod_traces(records(), {"ns/web-0": 4.0})


def page_of(tmp_path: Path, runs: list[RunStats], pods: list[list[PodTrace]], **kw: object) -> Element:
    index = write_report(runs, str(tmp_path), pods=pods, **kw)  # type: ignore[arg-type]
    return parse(Path(index).read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def one(tmp_path_factory: pytest.TempPathFactory) -> Element:
    return page_of(tmp_path_factory.mktemp("one"), [sample("default")], [traces()], sources=["kube's default"])


def test_traces_keep_each_pods_story() -> None:
    by = {t.pod: t for t in traces()}
    assert list(by) == ["ns/db-0", "ns/db-1", "ns/job-0", "ns/web-0"]
    web = by["ns/web-0"]
    assert (web.status, web.node, web.attempts, web.decisions, web.wait) == ("Scheduled", "n2", 2, 2, 4.0)
    assert [ns.node for ns in web.last.nodes] == ["n2", "n1", "n3"]  # best first
    assert by["ns/db-0"].last.reasons == {AFFINITY: 3, NO_PV: 2, CPU: 1}
    assert by["ns/db-1"].last.reasons == {NO_PV: 2, CPU: 1}  # counted from its nodes
    assert by["ns/db-1"].wait is None


def test_traces_keep_the_last_steps_and_best_nodes() -> None:
    many = {f"n{i:02d}": scored(i) for i in range(MAX_NODES + 5)}
    recs: list[Record] = [record("ns/p", "Unschedulable", i, attempt=i, reasons={CPU: 1}) for i in range(1, 30)]
    recs.append(record("ns/p", "Scheduled", 30, attempt=30, node="n14", nodes=many))
    (t,) = pod_traces(recs, {})
    assert (t.attempts, t.decisions, len(t.steps)) == (30, 30, MAX_STEPS)
    assert t.steps[0].position == 30 - MAX_STEPS + 1
    assert (len(t.last.nodes), t.last.feasible, t.last.nodes[0].node) == (MAX_NODES, MAX_NODES + 5, "n14")


def pod_rows(page: Element) -> list[Element]:
    return page.one("table", "pods").one("tbody").all("tr")


def cells_of(tr: Element) -> list[Element]:
    """A row's own cells (not those of the tables in a cell)."""
    return [c for c in tr.children if isinstance(c, Element) and c.tag == "td"]


def headings(page: Element) -> list[Element]:
    """The list's column headings: the last row of its head (the first names the configs, when compared)."""
    return page.one("table", "pods").one("thead").all("tr")[-1].all("th")


def test_the_list_has_every_pod_unschedulable_first(one: Element) -> None:
    rows = pod_rows(one)
    cells = [[td.text().strip() for td in cells_of(tr)][:5] for tr in rows]
    assert cells == [
        ["ns/db-0", "Unschedulable", "", "3", ""],
        ["ns/db-1", "Unschedulable", "", "1", ""],
        ["ns/job-0", "Error", "", "1", ""],
        ["ns/web-0", "Scheduled", "n2", "2", "4.0 s"],
    ]
    # styled by column: only the statuses not Scheduled carry a class, and the rows none
    assert [cells_of(tr)[1].attrs.get("class") for tr in rows] == ["st-Unschedulable", "st-Unschedulable",
                                                                   "st-Error", None]  # fmt: skip
    assert all(not tr.attrs for tr in rows)
    assert all("class" not in td.attrs for tr in rows for i, td in enumerate(cells_of(tr)) if i != 1)


def test_the_headings_say_how_the_script_sorts(one: Element) -> None:
    kinds = {th.text(): th.attrs.get("data-k") for th in headings(one)}
    assert kinds == {"pod": None, "status": "s", "node": None, "attempts": "n", "time to schedule": "n",
                     "reasons by plugin (last decision)": None}  # fmt: skip
    assert one.one("table", "pods").one("thead").all("tr", "cfg") == []  # one config: no row of configs


def test_reasons_are_broken_down_by_plugin(one: Element) -> None:
    rows = {tr.all("td")[0].text(): tr for tr in pod_rows(one)}
    why = [(div.one("b").text(), div.text()) for div in rows["ns/db-0"].all("div", "why")]
    # every plugin, most nodes first, each with its reasons and node counts
    assert [plugin for plugin, _ in why] == ["NodeAffinity", "VolumeBinding", "NodeResourcesFit"]
    assert why[0][1] == f"NodeAffinity {AFFINITY} (3 nodes)"
    assert why[2][1] == f"NodeResourcesFit {CPU} (1 node)"
    assert [div.one("b").text() for div in rows["ns/db-1"].all("div", "why")] == ["VolumeBinding", "NodeResourcesFit"]
    assert rows["ns/job-0"].one("span", "msg").text() == "running VolumeBinding: boom"
    assert rows["ns/web-0"].all("div", "why") == []
    # and over all pods: each reason with the pods whose last decision gives it
    table = one.one("table", "reasons")
    assert table.cells() == [
        ["NodeResourcesFit", CPU, "2"],
        ["VolumeBinding", NO_PV, "2"],
        ["NodeAffinity", AFFINITY, "1"],
    ]


def test_each_pod_has_its_view(one: Element) -> None:
    links = {a.text(): a.attrs["href"] for tr in pod_rows(one) for a in tr.all("a")}
    assert set(links) == {"ns/db-0", "ns/db-1", "ns/job-0", "ns/web-0"}
    views = {s.attrs["id"]: s for s in one.all("section", "pod")}
    web = views[(links["ns/web-0"] or "")[1:]]
    assert web.one("h3").text() == "ns/web-0"
    facts = dict(zip((dt.text() for dt in web.all("dt")), (dd.text() for dd in web.all("dd")), strict=True))
    assert facts == {"status": "Scheduled", "node": "n2", "attempts": "2 (2 decisions)", "time to schedule": "4.0 s"}
    steps = web.one("table", "steps").cells()
    assert [row[1:4] for row in steps] == [["1", "Unschedulable", "-"], ["2", "Scheduled", "n2"]]
    assert steps[0][4] == f"NodeResourcesFit {CPU} (3 nodes)"
    scores = web.one("table", "scores")
    assert [th.text() for th in scores.all("th")] == ["plugin", "n2", "n1", "n3"]
    assert scores.cells() == [["total", "190", "180", "120"], ["NodeResourcesFit", "90", "80", "20"]]
    db = views[(links["ns/db-0"] or "")[1:]]
    assert "message" in [dt.text() for dt in db.all("dt")]
    assert db.one("p", "note").text() == "No decision of this pod lists a feasible node."


def test_plots_come_first_and_the_metrics_last(one: Element) -> None:
    order = [el.attrs.get("id") or el.tag for el in one.walk() if el.tag in ("h2", "img") or el.tag == "table"]
    assert order.index("plots") < order.index("img") < order.index("unschedulable") < order.index("pods")
    assert order.index("pods") < order.index("metrics")
    heads = [el.attrs.get("id") for el in one.walk() if el.tag == "h2"]
    assert heads == ["plots", "unschedulable", "pods", "metrics"]


def test_without_script_the_list_is_a_plain_table(one: Element) -> None:
    """The controls are hidden until the script shows them; the views open by CSS :target."""
    assert all("hidden" in c.attrs for c in one.all("div", "controls"))
    style = one.one("style").text()
    assert "section.pod:target" in style


def test_nothing_is_loaded_from_anywhere(one: Element) -> None:
    for el in one.walk():
        for name, value in el.attrs.items():
            if name in ("src", "href", "action", "srcset", "data", "poster"):
                assert value is not None
                assert value.startswith(("data:", "#")), (el.tag, name, value[:60])
    assert one.all("link") == [] and one.all("iframe") == []
    assert all("src" not in s.attrs for s in one.all("script"))
    code = one.one("style").text() + "".join(s.text() for s in one.all("script"))
    assert not re.search(r"url\(|@import|https?:|//[a-z]", code.replace("://", "")), code


def test_stranded_capacity_at_zero_says_why(tmp_path: Path) -> None:
    zero = [0.0] * 10
    run = msgspec.structs.replace(sample(), over_run=over_run())
    run.over_run = msgspec.structs.replace(
        run.over_run, series=msgspec.structs.replace(run.over_run.series, cpu_stranded=zero, memory_stranded=zero)
    )
    page = page_of(tmp_path, [run], [[]])
    notes = {h.attrs["id"]: h for h in page.all("h3", "plot")}
    assert set(notes) >= {"stranded", "requested", "spread"}
    texts = _empty_notes(page)
    assert texts["stranded"] == [
        "cpu stranded is 0% throughout in every run: every node with free cpu also had room for the median "
        "pod's memory.",
        "memory stranded is 0% throughout in every run: every node with free memory also had room for the "
        "median pod's cpu.",
    ]
    assert texts["requested"] == [] and texts["spread"] == []


def _empty_notes(page: Element) -> dict[str, list[str]]:
    """Per plot, the `p.empty` sentences between its heading and the next."""
    out: dict[str, list[str]] = {}
    current = None
    for el in page.walk():
        if el.tag in ("h2", "h3") and "plot" in el.classes():
            current = el.attrs["id"] or ""
            out[current] = []
        elif el.tag in ("h2", "h3"):
            current = None
        elif current and el.tag == "p" and "empty" in el.classes():
            out[current].append(el.text())
    return out


def test_no_pods_says_so(tmp_path: Path) -> None:
    page = page_of(tmp_path, [RunStats()], [[]])
    notes = [p.text() for p in page.all("p", "note")]
    assert "No pod's last decision is Unschedulable." in notes
    assert "No pod was decided in this log." in notes
    assert page.all("table", "pods") == [] and page.all("section", "pod") == []


def test_compare_names_runs_by_config_and_sets_them_side_by_side(tmp_path: Path) -> None:
    other = [t for t in traces() if t.pod != "ns/job-0"]
    other = [msgspec.structs.replace(t, node="n3") if t.pod == "ns/web-0" else t for t in other]
    diff = [{"pod": "ns/web-0", "runs": [{"label": "default", "node": "n2", "pvs": []},
                                         {"label": "most-free", "node": "n3", "pvs": []}]}]  # fmt: skip
    runs = [sample("default"), sample("most-free")]
    page = page_of(tmp_path, runs, [traces(), other], diff=diff, sources=["kube's default", "most-free.yaml"])
    assert page.one("h1").text() == "berth replay report: default vs most-free"
    tabs = page.one("div", "tabs")
    assert [b.text() for b in tabs.all("button")] == ["default", "most-free", "side by side"]
    assert "hidden" in tabs.attrs
    # one list, a row per pod and a group of columns per config, named in the head's first row
    configs = page.one("table", "pods").one("tr", "cfg")
    assert [(th.text(), th.attrs.get("colspan")) for th in configs.all("th")] == [
        ("", None), ("default", "5"), ("most-free", "5")]  # fmt: skip
    assert [th.text() for th in headings(page)] == ["pod", *reportpods.COLUMNS * 2]
    rows = {cells_of(tr)[0].text(): [td.text() for td in cells_of(tr)] for tr in pod_rows(page)}
    assert list(rows) == ["ns/db-0", "ns/db-1", "ns/job-0", "ns/web-0"]
    assert rows["ns/web-0"][1:3] + rows["ns/web-0"][6:8] == ["Scheduled", "n2", "Scheduled", "n3"]
    assert rows["ns/job-0"][6:] == ["not decided", "", "", "", ""]
    # ≠ on the status of the config that placed the pod differently from the first, as --diff says
    marked = {cells_of(tr)[0].text(): [i for i, td in enumerate(cells_of(tr)) if "ne" in td.classes()]
              for tr in pod_rows(page)}  # fmt: skip
    assert marked == {"ns/db-0": [], "ns/db-1": [], "ns/job-0": [], "ns/web-0": [6]}
    # a status opens the pod's view under that config
    web = next(tr for tr in pod_rows(page) if cells_of(tr)[0].text() == "ns/web-0")
    views = {s.attrs["id"]: s for s in page.all("section", "pod")}
    under = [views[(cells_of(web)[i].one("a").attrs["href"] or "")[1:]].attrs["data-run"] for i in (1, 6)]
    assert under == ["default", "most-free"]
    side = page.one("h2", id="configs")
    assert side is not None
    table = next(t for t in page.all("table", "configs"))
    rows = table.cells()
    assert [r[:2] for r in rows] == [["default", "kube's default"], ["most-free", "most-free.yaml"]]
    assert [r[5] for r in rows] == ["-", "1"]  # placed differently from default
    # each view links to the same pod under every config
    view = next(s for s in page.all("section", "pod") if s.attrs["data-pod"] == "ns/job-0")
    assert "most-free: not decided" in view.text()


@pytest.mark.parametrize("configs", [2, 3])
def test_each_tab_hides_the_other_configs_details(configs: int) -> None:
    """Under tab i the list shows the pod, config i's columns and the other configs' status and node."""
    labels = [f"c{i}" for i in range(configs)]
    css = reportpods.list_css(labels)
    heads = ["pod", *reportpods.COLUMNS * configs]
    group = [None, *(j for j in range(configs) for _ in reportpods.COLUMNS)]
    for i in range(configs):
        hidden = {int(n) for n in re.findall(rf'table\.pods\[data-show="{i}"\] tr > :nth-child\((\d+)\)', css)}
        shown = [(heads[c - 1], group[c - 1]) for c in range(1, len(heads) + 1) if c not in hidden]
        assert shown == [("pod", None), *((h, j) for j in range(configs) for h in reportpods.COLUMNS
                                          if j == i or h in ("status", "node"))]  # fmt: skip
    assert reportpods.list_css(["one"]) == ""


@pytest.mark.parametrize(
    ("label", "css"),
    [
        ("most-free: ", '"most-free: "'),
        ('a"b\\c', '"a\\22 b\\5c c"'),
        ("</style>", '"\\3c /style\\3e "'),
        ("a\nb", '"a\\a b"'),
    ],
)
def test_config_names_are_css_strings(label: str, css: str) -> None:
    """A config's name (a file name) leads its columns on a narrow screen, written as a CSS string."""
    assert reportpods.css_string(label) == css


def test_replay_report_lists_every_pod_it_decided(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = str(Path(__file__).parent.parent / "data" / "logs" / "scarce-pvs.jsonl")
    out = tmp_path / "d.jsonl"
    assert main(["replay", log, "--no-progress", "--decisions", str(out), "--report", str(tmp_path / "r")]) == 0
    capsys.readouterr()
    decided = [json.loads(line) for line in out.read_text().splitlines()]
    last = {d["pod"]: d["status"] for d in decided if d["kind"] == "Decision"}
    page = parse((tmp_path / "r" / "index.html").read_text(encoding="utf-8"))
    rows = pod_rows(page)
    assert sorted(tr.all("td")[0].text() for tr in rows) == sorted(last)
    statuses = [cells_of(tr)[1].text() for tr in rows]
    assert statuses == sorted(statuses, key=lambda s: s != "Unschedulable")
    assert "Unschedulable" in statuses
    assert len(page.all("section", "pod")) == len(last)


@pytest.mark.parametrize(
    ("stuck", "scheduled", "runs", "most", "most_sampled", "views", "stuck_views"),
    [
        (3, 20, 1, 12, 4, 7, 3),  # every pod not scheduled, then an evenly spaced sample of the scheduled
        (10, 20, 1, 12, 4, 12, 8),  # more not scheduled than the share leaves: the first ones
        (3, 20, 2, 12, 4, 5, 3),  # two runs: each has half the views and half the sample
        (2, 2, 1, 12, 4, 4, 2),  # fewer pods than the views: every pod, no note
    ],
)
def test_views_for_the_pods_not_scheduled_and_a_sample(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    stuck: int,
    scheduled: int,
    runs: int,
    most: int,
    most_sampled: int,
    views: int,
    stuck_views: int,
) -> None:
    monkeypatch.setattr(reportpods, "MAX_VIEWS", most)
    monkeypatch.setattr(reportpods, "SAMPLE", most_sampled)
    recs: list[Record] = [record(f"ns/u{i:02d}", "Unschedulable", i, reasons={CPU: 1}) for i in range(stuck)]
    recs += [record(f"ns/s{i:02d}", "Scheduled", 100 + i, node="n1") for i in range(scheduled)]
    labels = [f"c{i}" for i in range(runs)]
    page = page_of(tmp_path, [sample(label) for label in labels], [pod_traces(recs, {})] * runs)
    rows = pod_rows(page)
    assert len(rows) == stuck + scheduled  # the list keeps every pod
    for run, label in enumerate(labels):
        status = 1 + run * len(reportpods.COLUMNS)  # the cell that links to the view under a config compared
        linked = [cells_of(tr)[0].text() for tr in rows if cells_of(tr)[status if runs > 1 else 0].all("a")]
        assert (len(linked), sum(1 for p in linked if p.startswith("ns/u"))) == (views, stuck_views)
        assert linked[:stuck_views] == [f"ns/u{i:02d}" for i in range(stuck_views)]
        sampled = [int(p[4:]) for p in linked if p.startswith("ns/s")]
        assert sampled == [i * scheduled // len(sampled) for i in range(len(sampled))]  # evenly spaced
        notes = [p.text() for p in page.all("p", "note") if "own view" in p.text()]
        assert len(notes) == (0 if views == stuck + scheduled else runs)
        if notes:
            under = f" under {label}" if runs > 1 else ""
            assert f"{views:,} of these {stuck + scheduled:,} pods have their own view{under}" in notes[run]
    assert len(page.all("section", "pod")) == views * runs  # a view for each linked name, no more
