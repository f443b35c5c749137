"""`berth replay --report DIR`: one self-contained HTML page of one run, or several compared: the plots
first, then the pods (berth.adapters.files.reportpods), the metrics last.

The PNGs are written next to `index.html` and embedded in it as data URIs, and the CSS and script are
inline, so the page needs nothing else: no network, no CSS, scripts or fonts from anywhere. Figures are drawn on the Agg canvas directly
(no pyplot, no display, no global backend switch), and the PNGs carry no software or date stamp, so the
same runs give the same bytes.

Every plot aggregates before it draws (histograms, one path per series), so 20,000 decisions and
5,000 nodes cost the same handful of artists as twenty.
"""

from __future__ import annotations

import base64
import html
import io
import math
import os
import textwrap
import warnings
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import MaxNLocator, PercentFormatter
from PIL import Image

from berth.adapters.files.reportpods import compare_table, list_css, pod_list, pod_views, reasons_table
from berth.core.api.meta.normalise import parse_time
from berth.core.api.watch import format_time
from berth.core.pipeline.metrics import Section, byte_unit, human_bytes, metric_sections, run_labels
from berth.core.pipeline.podtrace import PodTrace
from berth.core.pipeline.stats import BufferPoint, DecisionPoint, PreemptionPoint, RunStats

DPI = 100
PNG_COLORS = 128  # the PNGs' palette: plots use a few colours and their anti-aliasing
TIME_BUCKETS = 60  # decisions over time: at most this many buckets
FIT_BINS = 20  # PV fit histogram: bins of 5%
MAX_CLASSES = 10  # storage classes with their own bar; the rest are summed as "other"
STEP_NODES = 500  # up to this many nodes, one step per node; more are drawn as a line
MAX_BUFFER_LINES = 8  # buffers drawn one by one; more are drawn as totals
RUN_COLORS = ("#1f77b4", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf")
SERIES_COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf")
STATUS_COLORS = {"Scheduled": "#2ca02c", "Unschedulable": "#d62728", "Error": "#7f7f7f"}
OTHER_STATUS_COLOR = "#bcbd22"


@dataclass(frozen=True)
class Plot:
    name: str  # file stem: <name>.png
    title: str
    caption: str
    png: bytes | None  # None: nothing to draw; the caption says why
    texts: tuple[str, ...] = ()  # the legends' entries and the axes' titles drawn, for the page and its tests
    empty: tuple[str, ...] = ()  # why a drawn plot looks empty (every value 0), said under its caption


def write_report(
    runs: list[RunStats],
    directory: str,
    diff: list[dict[str, Any]] | None = None,
    pods: list[list[PodTrace]] | None = None,
    sources: list[str] | None = None,
) -> str:
    """Write <directory>/index.html and its PNGs for one run or several compared; return the page's path.
    diff: the pods any run placed differently from the first (`berth replay --diff`); the first 100 are shown.
    pods: each run's pods (berth.core.pipeline.podtrace), for the pod list and views; sources: each
    run's config file."""
    if not runs:
        raise ValueError("write_report needs at least one run")
    os.makedirs(directory, exist_ok=True)
    labels = run_labels(runs)
    axis = XAxis(runs)
    plots = [
        _decisions_plot(runs, labels, axis),
        _fit_plot(runs, labels),
        _utilization_plot(runs, labels),
        _buffers_plot(runs, labels, axis),
        _preemptions_plot(runs, labels, axis),
        _waits_plot(runs, labels),
        *(_series_plot(runs, labels, *spec) for spec in SERIES_PLOTS),
        _ready_plot(runs, labels),
        _volumes_plot(runs, labels),
    ]
    for plot in plots:
        path = os.path.join(directory, f"{plot.name}.png")
        if plot.png is not None:
            with open(path, "wb") as f:
                f.write(plot.png)
        elif os.path.exists(path):
            os.remove(path)  # a stale plot from an earlier report in the same directory would mislead
    index = os.path.join(directory, "index.html")
    page = Page(runs, labels, plots, diff or [], pods or [[] for _ in runs], sources or ["" for _ in runs])
    with open(index, "w", encoding="utf-8", newline="\n") as f:
        f.write(render_html(page))
    return index


# --- the page ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Page:
    runs: list[RunStats]
    labels: list[str]
    plots: list[Plot]
    diff: list[dict[str, Any]]
    pods: list[list[PodTrace]]
    sources: list[str]


_CSS = """
[hidden] { display: none !important; }  /* also where a rule below sets display */
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0 auto; max-width: 1150px;
       padding: 0 1em 3em; color: #222; line-height: 1.35; }
h1 { font-size: 1.5em; margin: 0.8em 0 0.3em; } h2 { font-size: 1.2em; margin-top: 2em; border-bottom: 1px solid #ddd; }
h3 { font-size: 1.05em; } h4 { margin: 1.2em 0 0.4em; }
nav { position: sticky; top: 0; background: #fff; padding: 0.4em 0; border-bottom: 1px solid #ddd; z-index: 5;
      font-size: 0.9em; }
nav a { margin-right: 0.9em; white-space: nowrap; }
p.lead { margin: 0.2em 0; }
table { border-collapse: collapse; font-size: 0.9em; }
th, td { padding: 0.2em 0.6em; border-bottom: 1px solid #eee; text-align: left; vertical-align: top; }
th.num, td.num, table.metrics td { text-align: right; }
table.metrics td:first-child { text-align: left; }
tr.section th { text-align: left; background: #f4f4f4; padding-top: 0.6em; }
td.indent-0 { padding-left: 1.2em; } td.indent-1 { padding-left: 2.4em; color: #555; }
img { max-width: 100%; height: auto; }
p.note, p.empty { color: #666; font-style: italic; }
p.empty::before { content: "Why it looks empty: "; font-weight: 600; font-style: normal; }
.scroll { overflow-x: auto; }
table.pods { width: 100%; }
table.pods thead { position: sticky; top: 2.1em; z-index: 1; }
table.pods th { background: #fafafa; }
table.pods tr.cfg th { border-bottom: 1px solid #ccc; }
table.sortable thead tr:last-child th { cursor: pointer; user-select: none; }
th[aria-sort=ascending]::after { content: " ▲"; } th[aria-sort=descending]::after { content: " ▼"; }
td.text { overflow-wrap: anywhere; }
/* the pod list by column: the pod, then per config status, node, attempts, time to schedule, reasons */
table.pods td:first-child { min-width: 10em; }
table.pods td:nth-child(5n+1) { overflow-wrap: break-word; }
table.pods td:nth-child(5n+1):not(:first-child) { min-width: 12em; }
table.pods td:nth-child(5n+2), table.pods td:nth-child(5n+3) { white-space: nowrap; }
table.pods td:nth-child(5n+4), table.pods td:nth-child(5n+5), table.pods th[data-k=n] { text-align: right;
  white-space: nowrap; }
table.pods td:nth-child(5n+2) { color: #1d7a2a; } table.pods td:nth-child(5n+2) a { color: inherit; }
table.pods td[class^=st-] { color: #222; }
table.pods td.ne::before { content: "≠ "; } table.pods td.ne, table.pods td.ne + td { font-weight: 600; }
.why b, table.reasons b { color: #2a4d7a; font-weight: 600; }
.why small, .count { color: #666; }
.st-Unschedulable, table.pods td.st-Unschedulable { color: #b3261e; font-weight: 600; }
.st-Error, table.pods td.st-Error { color: #666; font-weight: 600; }
.st-Scheduled { color: #1d7a2a; }
.controls { margin: 0.6em 0; display: flex; flex-wrap: wrap; gap: 0.6em; align-items: center; }
.controls input[type=search] { min-width: 18em; padding: 0.3em; }
.tabs button { padding: 0.3em 1em; margin-right: 0.3em; border: 1px solid #bbb; background: #f4f4f4; cursor: pointer; }
.tabs button[aria-selected=true] { background: #2a4d7a; color: #fff; border-color: #2a4d7a; }
@media (max-width: 1000px) {  /* narrow: each pod a block, each config a line, its reasons in full width */
  table.pods, table.pods thead, table.pods tbody { display: block; }
  table.pods thead { position: static; }
  table.pods tr.cfg { display: none; }
  table.pods tr { display: flex; flex-wrap: wrap; align-items: baseline; }
  table.pods thead tr { gap: 0 0.4em; }
  table.pods th { border: 0; }
  table.pods tbody tr { border-bottom: 1px solid #ddd; padding: 0.3em 0; }
  table.pods td { border: 0; padding: 0.1em 0.6em 0.1em 0; }
  table.pods td:first-child { flex-basis: 100%; font-weight: 600; }
  table.pods td:nth-child(5n+1):not(:first-child) { flex-basis: 100%; box-sizing: border-box; padding-left: 1em; }
  table.pods td:nth-child(5n+1):empty { padding: 0; }
  table.pods td:nth-child(5n+2)::before, table.pods thead th::before { color: #666; font-weight: 400; }
  table.pods td:nth-child(5n+4)::before { content: "attempts "; color: #666; }
  table.pods td:nth-child(5n+5):not(:empty)::before { content: "scheduled after "; color: #666; }
}
section.pod { display: none; }
section.pod:target { display: block; position: fixed; top: 0; right: 0; bottom: 0; width: min(900px, 100vw);
  overflow: auto; background: #fff; box-shadow: -4px 0 18px rgba(0, 0, 0, 0.3); padding: 0.5em 1.5em 2em;
  box-sizing: border-box; z-index: 10; }
section.pod .close { float: right; margin-top: 1em; }
section.pod dl { display: grid; grid-template-columns: max-content 1fr; gap: 0.2em 1em; }
section.pod dt { color: #666; } section.pod dd { margin: 0; }
table.scores td + td, table.scores th + th, table.steps td:nth-child(2) { text-align: right; }
table.steps td:nth-child(-n+4) { white-space: nowrap; }
table.scores caption { text-align: left; font-weight: 600; padding: 0.4em 0; }
"""

# Search, filter and sort for the pod list, and tabs between configs: plain DOM, no library. Without it
# the list is a plain table, every config's columns side by side, and the controls stay hidden.
_SCRIPT = """
(function () {
  var table = document.querySelector("table.pods");
  if (!table) return;
  var body = table.tBodies[0], heads = table.tHead.rows[table.tHead.rows.length - 1].cells;
  var groups = table.querySelectorAll("tr.cfg th[colspan]");
  var rows = Array.prototype.slice.call(body.rows);
  var states = [], shown = null;
  Array.prototype.forEach.call(heads, function (th, col) { if (th.dataset.k === "s") states.push(col); });
  var controls = document.querySelector(".controls");
  var text = controls.querySelector("input[type=search]");
  var status = controls.querySelector("select");
  var differs = controls.querySelector("input.differs");
  var count = controls.querySelector(".count");
  controls.hidden = false;
  function filter() {
    var q = text.value.toLowerCase(), s = status.value, d = differs && differs.checked, n = 0;
    var cols = shown === null ? states : [states[shown]];
    rows.forEach(function (tr) {
      var ok = (!q || tr.textContent.toLowerCase().indexOf(q) >= 0) &&
        (!s || cols.some(function (c) { return tr.cells[c].textContent === s; })) &&
        (!d || tr.querySelector("td.ne") !== null);
      tr.hidden = !ok;
      if (ok) n++;
    });
    count.textContent = n.toLocaleString("en") + " of " + rows.length.toLocaleString("en") + " pods";
  }
  [text, status, differs].forEach(function (el) { if (el) el.addEventListener("input", filter); });
  var tabs = document.querySelector(".tabs");
  if (tabs) {
    tabs.hidden = false;
    var show = function (v) {
      shown = v === "all" ? null : Number(v);
      table.dataset.show = v;
      Array.prototype.forEach.call(groups, function (th, i) { th.colSpan = shown === null || shown === i ? 5 : 2; });
      tabs.querySelectorAll("button").forEach(function (b) { b.setAttribute("aria-selected", String(b.dataset.show === v)); });
      filter();
    };
    tabs.addEventListener("click", function (ev) { if (ev.target.dataset.show) show(ev.target.dataset.show); });
    show("0");
  } else {
    filter();
  }
  var ORDER = {Unschedulable: 0, Error: 1, Scheduled: 3, "not decided": 4};
  function key(kind, t) {
    if (kind === "s") return t in ORDER ? ORDER[t] : 2;
    if (kind === "n") return t ? parseFloat(t.replace(/,/g, "")) : -1;
    return t.toLowerCase();
  }
  Array.prototype.forEach.call(heads, function (th, col) {
    th.addEventListener("click", function () {
      var up = th.getAttribute("aria-sort") !== "ascending";
      Array.prototype.forEach.call(heads, function (o) { o.removeAttribute("aria-sort"); });
      th.setAttribute("aria-sort", up ? "ascending" : "descending");
      var keyed = Array.prototype.map.call(body.rows, function (tr) {
        return [key(th.dataset.k, tr.cells[col].textContent.trim()), tr];
      });
      keyed.sort(function (a, b) { return (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0) * (up ? 1 : -1); });
      var all = document.createDocumentFragment();
      keyed.forEach(function (p) { all.appendChild(p[1]); });
      body.appendChild(all);
    });
  });
})();
"""


MAX_DIFF_ROWS = 100  # pods placed differently shown in the report


def render_html(page: Page) -> str:
    runs, labels, plots = page.runs, page.labels, page.plots
    e = html.escape
    compare = len(runs) > 1
    title = "berth replay report" + (": " + " vs ".join(labels) if compare else f": {labels[0]}")
    links = [("plots", "Plots"), ("unschedulable", "Why unschedulable"), ("pods", "Pods")]
    links += [("configs", "Configs side by side"), ("diff", "Placed differently")] if compare else []
    links.append(("metrics", "Metrics"))
    nav = " ".join(f'<a href="#{k}">{v}</a>' for k, v in links)
    out = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{e(title)}</title>",
        f"<style>{_CSS}{list_css(labels)}</style>",
        "</head>",
        "<body>",
        f"<h1>{e(title)}</h1>",
        *(f'<p class="lead">{line}</p>' for line in _leads(page)),
        f"<nav>{nav}</nav>",
        '<h2 id="plots">Plots</h2>',
        "<p>" + " · ".join(f'<a href="#{e(p.name)}">{e(p.title)}</a>' for p in plots) + "</p>",
    ]
    for plot in plots:
        out.append(f'<h3 id="{e(plot.name)}" class="plot">{e(plot.title)}</h3>')
        if plot.png is None:
            out.append(f'<p class="note">{e(plot.caption)}</p>')
            continue
        out.append(f"<p>{e(plot.caption)}</p>")
        out += [f'<p class="empty">{e(note)}</p>' for note in plot.empty]
        data = base64.b64encode(plot.png).decode("ascii")
        shows = f' data-shows="{e(" | ".join(plot.texts))}"' if plot.texts else ""
        out.append(f'<img alt="{e(plot.title)}" src="data:image/png;base64,{data}"{shows}>')
    out.append(reasons_table(labels, page.pods))
    out.append(pod_list(labels, page.pods, page.diff))
    if compare:
        out.append(compare_table(runs, labels, page.sources, page.pods, page.diff))
        out.append(_diff_table(page.diff, labels))
    out.append('<h2 id="metrics">Metrics</h2>')
    out.append("<p>The summary berth replay prints: over the whole run, then at the end of the log.</p>")
    out.append(_metrics_table(metric_sections(runs), labels))
    out.append(pod_views(labels, page.pods))
    out += [f"<script>{_SCRIPT}</script>", "</body>", "</html>", ""]
    return "\n".join(out)


def _leads(page: Page) -> list[str]:
    """One line per run: its config, its pods by their last decision."""
    e = html.escape
    out = []
    for run, label, source in zip(page.runs, page.labels, page.sources, strict=True):
        final = run.counts()
        n = {status: sum(by.values()) for status, by in final.items()}
        decided = sum(n.values())
        where = f" ({e(source)})" if source else ""
        text = (
            f"<b>{e(label)}</b>{where}: {run.events:,} events, {len(run.decisions):,} decisions, "
            f"{decided:,} pods decided: {n.get('Scheduled', 0):,} Scheduled, "
            f'<span class="st-Unschedulable">{n.get("Unschedulable", 0):,} Unschedulable</span>'
        )
        if n.get("Error"):
            text += f", {n['Error']:,} Error"
        out.append(text + ".")
    return out


def _diff_table(diff: list[dict[str, Any]], labels: list[str]) -> str:
    e = html.escape
    out = ['<h2 id="diff">Pods placed differently</h2>']
    others = ", ".join(e(label) for label in labels[1:])
    if not diff:
        out.append(f'<p class="note">{others} placed every pod as {e(labels[0])} did.</p>')
        return "\n".join(out)
    shown = diff[:MAX_DIFF_ROWS]
    more = f" (the first {len(shown):,})" if len(diff) > len(shown) else ""
    out.append(f"<p>{len(diff):,} pods placed differently from {e(labels[0])} by {others}{more}.</p>")
    out.append('<table class="diff"><thead><tr><th>pod</th>')
    out += [f"<th>{e(label)}: node</th><th>PVs</th>" for label in labels]
    out.append("</tr></thead><tbody>")
    for d in shown:
        cells = "".join(
            f"<td>{e(r['node'] or '(not placed)')}</td><td>{e(', '.join(r['pvs']))}</td>" for r in d["runs"]
        )
        out.append(f"<tr><td>{e(d['pod'])}</td>{cells}</tr>")
    out.append("</tbody></table>")
    return "\n".join(out)


def _metrics_table(sections: list[Section], labels: list[str]) -> str:
    e = html.escape
    out = ['<table class="metrics">', "<thead><tr><th>metric</th>"]
    out += [f"<th>{e(label)}</th>" for label in labels]
    out.append("</tr></thead>")
    out.append("<tbody>")
    for section in sections:
        out.append(f'<tr class="section"><th colspan="{len(labels) + 1}">{e(section.title)}</th></tr>')
        for row in section.rows:
            cells = "".join(f"<td>{e(v)}</td>" for v in row.values)
            out.append(f'<tr><td class="indent-{min(row.indent, 1)}">{e(row.name)}</td>{cells}</tr>')
    out.append("</tbody></table>")
    return "\n".join(out)


# --- the x axis shared by the plots over time -------------------------------------------------------------


class XAxis:
    """Log time when every decision and buffer point has a `ts`, else the position in the log."""

    def __init__(self, runs: list[RunStats]) -> None:
        self.label = "position in the log"
        self.unit = "positions"
        self.timed = False
        self._offsets: dict[str, float] | None = None
        self.lo, self.hi = self._extent(runs)
        stamps = {d.ts for r in runs for d in r.decisions} | {b.ts for r in runs for b in r.buffers}
        if not stamps or None in stamps:
            return
        try:
            parsed = {ts: parse_time(ts) for ts in stamps if ts is not None}
        except ValueError:
            return  # the engine writes valid stamps; if not, positions still order the log
        t0 = min(parsed.values())
        seconds = {ts: (t - t0).total_seconds() for ts, t in parsed.items()}
        span = max(seconds.values())
        unit, scale = ("s", 1.0) if span <= 180 else ("min", 60.0) if span <= 3 * 3600 else ("h", 3600.0)
        self._offsets = {ts: s / scale for ts, s in seconds.items()}
        self.unit = unit
        self.label = f"{unit} since {format_time(t0)}"
        self.timed = True
        self.lo, self.hi = self._extent(runs)

    def _extent(self, runs: list[RunStats]) -> tuple[float, float]:
        """The first and last x of the log's points, half a unit apart at least."""
        xs = [self.x(p) for r in runs for p in r.decisions] + [self.x(p) for r in runs for p in r.buffers]
        if not xs:
            return 0.0, 1.0
        lo, hi = min(xs), max(xs)
        return (lo, hi) if hi > lo else (lo - 0.5, hi + 0.5)

    def x(self, point: DecisionPoint | BufferPoint | PreemptionPoint) -> float:
        if self._offsets is None or point.ts is None:
            return float(point.position)
        return self._offsets[point.ts]

    def xs(
        self, points: Iterable[DecisionPoint | BufferPoint | PreemptionPoint]
    ) -> np.ndarray[Any, np.dtype[np.float64]]:
        return np.fromiter((self.x(p) for p in points), dtype=np.float64)


# --- plots ------------------------------------------------------------------------------------------------


def _decisions_plot(runs: list[RunStats], labels: list[str], axis: XAxis) -> Plot:
    name, title = "decisions", "Decisions over time"
    if not any(r.decisions for r in runs):
        return Plot(name, title, "No decisions were made in this log.", None)
    known = list(STATUS_COLORS)
    statuses = known + sorted({d.status for r in runs for d in r.decisions} - set(known))
    per_run = [(axis.xs(r.decisions), np.array([d.status for d in r.decisions], dtype=object)) for r in runs]
    # Buckets span the whole log (buffers included), so both plots over time line up.
    lo, hi = axis.lo, axis.hi
    buckets = TIME_BUCKETS if axis.timed else max(1, min(TIME_BUCKETS, math.ceil(hi - lo)))
    edges = np.linspace(lo, hi, buckets + 1)

    fig = _figure(10.0, 1.2 + 2.4 * len(runs))
    axes = _column(fig, len(runs))
    for ax, (x, status), label in zip(axes, per_run, labels, strict=True):
        base = np.zeros(buckets, dtype=np.int64)
        for s in statuses:
            counts, _ = np.histogram(x[status == s], bins=edges)
            if counts.any():
                ax.stairs(base + counts, edges, baseline=base.copy(), fill=True, color=_status_color(s), lw=0)
                base += counts
        ax.set_title(label, fontsize=10, loc="left")
        ax.set_ylabel("decisions per bucket")
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        if not len(x):
            _empty(ax, "no decisions")
    handles = [Patch(color=_status_color(s), label=s) for s in statuses]
    fig.legend(handles=handles, loc="outside upper right", ncols=len(statuses), fontsize=8, frameon=False)
    axes[-1].set_xlabel(axis.label)
    axes[-1].set_xlim(lo, hi)
    width = (hi - lo) / buckets
    caption = f"Decisions per bucket by status, stacked: {buckets} buckets of {width:,.3g} {axis.unit} each."
    return _plot(name, title, caption, fig)


def _preemptions_plot(runs: list[RunStats], labels: list[str], axis: XAxis) -> Plot:
    name, title = "preemptions", "Preemptions over time"
    if not any(r.preemptions for r in runs):
        return Plot(name, title, "No preemptions were carried out in this log.", None)
    lo, hi = axis.lo, axis.hi
    buckets = TIME_BUCKETS if axis.timed else max(1, min(TIME_BUCKETS, math.ceil(hi - lo)))
    edges = np.linspace(lo, hi, buckets + 1)
    fig = _figure(10.0, 1.2 + 2.0 * len(runs))
    axes = _column(fig, len(runs))
    for ax, run, label in zip(axes, runs, labels, strict=True):
        x = axis.xs(run.preemptions)
        weights = np.fromiter((len(p.victims) for p in run.preemptions), dtype=np.float64)
        preempted, _ = np.histogram(x, bins=edges)
        victims, _ = np.histogram(x, bins=edges, weights=weights)
        ax.stairs(preempted, edges, fill=True, color=_run_color(0), lw=0, label="preemptions")
        ax.stairs(victims, edges, color=_run_color(1), lw=1.5, label="victims")
        ax.set_title(label, fontsize=10, loc="left")
        ax.set_ylabel("per bucket")
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        if not len(x):
            _empty(ax, "no preemptions")
    handles = [Patch(color=_run_color(0), label="preemptions"), Patch(color=_run_color(1), label="victims")]
    fig.legend(handles=handles, loc="outside upper right", ncols=2, fontsize=8, frameon=False)
    axes[-1].set_xlabel(axis.label)
    axes[-1].set_xlim(lo, hi)
    width = (hi - lo) / buckets
    caption = (
        f"Preemptions carried out (filled) and their victims (line) per bucket: {buckets} buckets of "
        f"{width:,.3g} {axis.unit} each."
    )
    return Plot(name, title, caption, _png(fig))


def _fit_plot(runs: list[RunStats], labels: list[str]) -> Plot:
    name, title = "pv-fit", "PV fit"
    ratios = [
        np.clip(np.array([b.request / b.capacity for b in r.bindings if b.capacity > 0], dtype=np.float64), 0, 1)
        for r in runs
    ]
    if not any(len(x) for x in ratios):
        return Plot(name, title, "No PVs were chosen in this log.", None)
    fig = _figure(11.0, 4.2)
    ax_hist, ax_class = fig.subplots(1, 2, width_ratios=[3, 2])
    edges = np.linspace(0.0, 1.0, FIT_BINS + 1)
    alpha = 0.8 if len(runs) == 1 else 0.3
    peak = 1
    for i, (x, label) in enumerate(zip(ratios, labels, strict=True)):
        counts, _ = np.histogram(x, bins=edges)
        peak = max(peak, int(counts.max()))
        color = _run_color(i)
        ax_hist.stairs(counts, edges, fill=True, color=color, alpha=alpha, lw=0)
        median = f", median {np.median(x):.0%}" if len(x) else ""
        ax_hist.stairs(counts, edges, color=color, lw=1.5, label=f"{label} ({len(x):,} PVs{median})")
    ax_hist.set_xlim(0.0, 1.0)
    ax_hist.xaxis.set_major_formatter(PercentFormatter(1.0))
    ax_hist.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax_hist.set_xlabel("claim request / PV capacity (100% = exact fit)")
    ax_hist.set_ylabel("PVs chosen")
    ax_hist.set_ylim(0, peak * 1.1)
    handles, texts = ax_hist.get_legend_handles_labels()
    fig.legend(handles, texts, loc="outside upper left", ncols=len(runs), fontsize=8, frameon=False)

    waste = [_waste_by_class(r) for r in runs]
    total: dict[str, int] = {}
    for by in waste:
        for cls, w in by.items():
            total[cls] = total.get(cls, 0) + w
    classes = sorted(total, key=lambda c: (-total[c], c))
    shown, rest = classes[:MAX_CLASSES], classes[MAX_CLASSES:]
    rows = [*shown, "other"] if rest else shown
    values = [[by.get(c, 0) for c in shown] + ([sum(by.get(c, 0) for c in rest)] if rest else []) for by in waste]
    unit, size = byte_unit(max((v for vs in values for v in vs), default=0))
    height = 0.8 / len(runs)
    y = np.arange(len(rows), dtype=np.float64)
    for i, (vs, label) in enumerate(zip(values, labels, strict=True)):
        ax_class.barh(y + i * height, [v / size for v in vs], height=height, color=_run_color(i), label=label)
    ax_class.set_yticks(y + height * (len(runs) - 1) / 2, [c or "(no class)" for c in rows], fontsize=8)
    ax_class.invert_yaxis()
    ax_class.set_xlabel(f"capacity wasted ({unit})")
    ax_class.set_title("by storage class", fontsize=10, loc="left")

    caption = (
        "How well the chosen PVs fit their claims: the share of each PV's capacity the claim requested, "
        "and the capacity left unrequested (Σ capacity − request) per storage class. Wasted: "
        + "; ".join(f"{label} {human_bytes(r.pv_waste())}" for r, label in zip(runs, labels, strict=True))
        + "."
    )
    return _plot(name, title, caption, fig)


def _waste_by_class(run: RunStats) -> dict[str, int]:
    out: dict[str, int] = {}
    for b in run.bindings:
        out[b.storage_class] = out.get(b.storage_class, 0) + b.capacity - b.request
    return out


def _utilization_plot(runs: list[RunStats], labels: list[str]) -> Plot:
    name, title = "node-utilization", "Node utilization"
    if not any(r.nodes for r in runs):
        return Plot(name, title, "No nodes at the end of this log.", None)
    fig = _figure(11.0, 4.2 + 0.2 * len(runs))
    axes = fig.subplots(1, 2, sharey=True)
    top = 1.0
    for ax, resource in zip(axes, ("cpu", "memory"), strict=True):
        for i, (run, label) in enumerate(zip(runs, labels, strict=True)):
            ratios = np.sort(np.array(run.node_ratios(resource), dtype=np.float64))[::-1]
            if not len(ratios):
                continue
            mean, std, peak = run.utilization(resource)
            top = max(top, peak)
            color = _run_color(i)
            text = f"{label}: mean {mean:.0%}, σ {std:.0%}, max {peak:.0%}"
            if len(ratios) <= STEP_NODES:
                ax.stairs(ratios, np.arange(len(ratios) + 1), baseline=None, color=color, lw=1.5, label=text)
            else:  # a line through the steps' midpoints: the same curve, and Agg can simplify it
                ax.plot(np.arange(len(ratios)) + 0.5, ratios, color=color, lw=1.5, label=text)
            ax.axhline(mean, color=color, lw=1, ls=":")
        ax.axhline(1.0, color="black", lw=0.8)
        ax.set_title(f"{resource} requested / allocatable", fontsize=10, loc="left")
        ax.set_xlabel("nodes, most used first")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.yaxis.set_major_formatter(PercentFormatter(1.0))
        if ax.get_legend_handles_labels()[0]:  # under the axes, so it never hides a curve
            ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(0.0, -0.16), frameon=False)
        else:
            _empty(ax, f"no node has {resource} allocatable")
    axes[0].set_ylim(0.0, top * 1.08)
    caption = (
        "Requests (berth's reservations included) against allocatable on every node at the end of the log, "
        "nodes sorted from most to least used; dotted lines are the means. A flat curve is an even spread."
    )
    return _plot(name, title, caption, fig)


def _buffers_plot(runs: list[RunStats], labels: list[str], axis: XAxis) -> Plot:
    name, title = "buffers", "CapacityBuffers: replicas and readyReplicas"
    if not any(r.buffers for r in runs):
        return Plot(name, title, "No CapacityBuffers in this log.", None)
    names = sorted({p.buffer for r in runs for p in r.buffers})
    one_by_one = len(names) <= MAX_BUFFER_LINES
    end = axis.hi
    color = {n: SERIES_COLORS[i % len(SERIES_COLORS)] for i, n in enumerate(names)}

    fig = _figure(10.0, 1.2 + 2.4 * len(runs))
    axes = _column(fig, len(runs))
    peak = 1
    for ax, run, label in zip(axes, runs, labels, strict=True):
        if one_by_one:
            by: dict[str, list[BufferPoint]] = {}
            for p in run.buffers:
                by.setdefault(p.buffer, []).append(p)
            series = [(color[b], *_steps(ps, axis)) for b, ps in by.items()]
        elif run.buffers:
            series = [(SERIES_COLORS[0], *buffer_totals(run.buffers, axis))]
        else:
            series = []
            _empty(ax, "no buffers")
        for c, xs, replicas, ready in series:
            # Each line holds its last value to the end of the log. replicas is a wide pale band and
            # readyReplicas a thin line over it, so a buffer fully ready shows both; the gap is shaded.
            x, rep, rdy = [*xs, end], [*replicas, replicas[-1]], [*ready, ready[-1]]
            ax.step(x, rep, where="post", color=c, lw=5, alpha=0.3, solid_capstyle="butt")
            ax.fill_between(x, rdy, rep, where=[a < b for a, b in zip(rdy, rep, strict=True)], step="post",
                            color=c, alpha=0.12, lw=0)  # fmt: skip
            ax.step(x, rdy, where="post", color=c, lw=1.4)
            peak = max(peak, *replicas, *ready)
        ax.set_title(label, fontsize=10, loc="left")
        ax.set_ylabel("replicas")
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    axes[0].set_ylim(0, peak * 1.1)  # shared by every run's axes
    styles = [
        Line2D([], [], color="black", lw=5, alpha=0.3, label="replicas"),
        Line2D([], [], color="black", lw=1.4, label="readyReplicas"),
    ]
    lines = [Line2D([], [], color=color[n], label=n) for n in names] if one_by_one else []
    fig.legend(
        handles=styles + lines, loc="outside upper right", ncols=min(5, len(styles + lines)), fontsize=8, frameon=False
    )
    axes[-1].set_xlabel(axis.label)
    axes[-1].set_xlim(axis.lo, axis.hi)
    if one_by_one:
        caption = (
            "Each buffer's replicas (wide pale band) and readyReplicas (thin line), as the buffer controller "
            "wrote them; a thin line inside its band is a buffer fully ready, a shaded gap below it one that is not."
        )
    else:
        caption = (
            f"{len(names):,} buffers, so their totals: Σ replicas (wide pale band) and Σ readyReplicas (thin "
            "line), each buffer counted at its latest status; a shaded gap is replicas not ready."
        )
    return _plot(name, title, caption, fig)


def _steps(points: list[BufferPoint], axis: XAxis) -> tuple[list[float], list[int], list[int]]:
    return [axis.x(p) for p in points], [p.replicas for p in points], [p.ready_replicas for p in points]


def buffer_totals(points: list[BufferPoint], axis: XAxis) -> tuple[list[float], list[int], list[int]]:
    """Σ replicas and Σ readyReplicas over all buffers after each point, one entry per distinct x."""
    last: dict[str, tuple[int, int]] = {}
    replicas = ready = 0
    xs: list[float] = []
    reps: list[int] = []
    rdys: list[int] = []
    for p in points:
        old_rep, old_ready = last.get(p.buffer, (0, 0))
        replicas += p.replicas - old_rep
        ready += p.ready_replicas - old_ready
        last[p.buffer] = (p.replicas, p.ready_replicas)
        x = axis.x(p)
        if xs and xs[-1] == x:
            reps[-1], rdys[-1] = replicas, ready
        else:
            xs.append(x)
            reps.append(replicas)
            rdys.append(ready)
    return xs, reps, rdys


# --- plots over the whole run (berth.core.pipeline.overrun) ----------------------------------------------

SERIES_PLOTS = (
    ("requested", "Requested / allocatable over the run", ("cpu", "memory"),
     "Σ requests of the live pods on nodes over Σ allocatable of the live nodes, time-weighted means per bucket."),
    ("spread", "Per-node spread over the run", ("cpu_spread", "memory_spread"),
     "The standard deviation across nodes of each node's requested / allocatable: low is an even spread."),
    ("stranded", "Stranded capacity over the run", ("cpu_stranded", "memory_stranded"),
     "Free cpu on nodes without room for the median live pod's memory, and free memory on nodes without room "
     "for its cpu, as shares of Σ allocatable."),
)  # fmt: skip
# Why a series that is 0% throughout is 0%.
ZERO = {
    "cpu": "no pod on a node requested cpu",
    "memory": "no pod on a node requested memory",
    "cpu_spread": "every node had the same share of its cpu requested",
    "memory_spread": "every node had the same share of its memory requested",
    "cpu_stranded": "every node with free cpu also had room for the median pod's memory",
    "memory_stranded": "every node with free memory also had room for the median pod's cpu",
}
MAX_READY_BARS = 20  # buffers with their own bar in the fully-ready plot (the least ready)


def _series_plot(runs: list[RunStats], labels: list[str], name: str, title: str, fields: tuple[str, str],
                 caption: str) -> Plot:  # fmt: skip
    if not any(r.over_run.series.seconds for r in runs):
        return Plot(name, title, "The log has no log time to draw this over.", None)
    span = max(max(r.over_run.series.seconds, default=0.0) for r in runs)
    unit, scale = _time_unit(span * 1.01)
    fig = _figure(11.0, 3.8)
    axes = fig.subplots(1, 2, sharey=True)
    top = 0.0
    for ax, field in zip(axes, fields, strict=True):
        for i, (run, label) in enumerate(zip(runs, labels, strict=True)):
            series = run.over_run.series
            ys = getattr(series, field)
            if not ys:
                continue
            top = max(top, *ys)
            # earlier runs drawn wider, so a run equal to a later one still shows around it
            width = 1.5 + 1.5 * (len(runs) - 1 - i)
            ax.plot([x / scale for x in series.seconds], ys, color=_run_color(i), lw=width, label=label)
        ax.set_title(field.replace("_", " "), fontsize=10, loc="left")
        ax.set_xlabel(f"{unit} since the first event")
        ax.yaxis.set_major_formatter(PercentFormatter(1.0))
    high = max(top * 1.1, 0.01)
    axes[0].set_ylim(-0.03 * high, high)  # a line at 0% stays clear of the axis
    empty = []
    for ax, field in zip(axes, fields, strict=True):
        if all(not any(getattr(r.over_run.series, field)) for r in runs):
            _empty(ax, "0% throughout:\n" + textwrap.fill(ZERO[field], 44))
            empty.append(f"{field.replace('_', ' ')} is 0% throughout in every run: {ZERO[field]}.")
    handles, texts = axes[0].get_legend_handles_labels()
    fig.legend(handles, texts, loc="outside upper right", ncols=min(len(runs), 4), fontsize=8, frameon=False)
    return Plot(name, title, caption, _png(fig), _texts(fig), tuple(empty))


def _time_unit(span: float) -> tuple[str, float]:
    return ("s", 1.0) if span <= 180 else ("min", 60.0) if span <= 3 * 3600 else ("h", 3600.0)


def _waits_plot(runs: list[RunStats], labels: list[str]) -> Plot:
    name, title = "time-to-schedule", "Pods: time to schedule over the run"
    if not any(r.over_run.wait_quantiles for r in runs):
        return Plot(name, title, "No pod was scheduled with a creation time and a log clock.", None)
    fig = _figure(10.0, 3.8)
    ax = fig.subplots()
    top = 0.0
    for i, (run, label) in enumerate(zip(runs, labels, strict=True)):
        q = run.over_run.wait_quantiles
        if not q:
            continue
        top = max(top, q[-1])
        p = run.over_run.time_to_schedule
        text = f"{label} ({run.over_run.pods_scheduled:,} pods; p50 {p.p50:,.1f} s, p99 {p.p99:,.1f} s)"
        ax.step(np.linspace(0.0, 1.0, len(q)), q, where="post", color=_run_color(i), lw=1.5, label=text)
    if top > 60:
        ax.set_yscale("symlog", linthresh=1.0)
    ax.set_xlim(0.0, 1.0)
    ax.xaxis.set_major_formatter(PercentFormatter(1.0))
    ax.set_xlabel("share of the scheduled pods")
    ax.set_ylabel("seconds from creation to Scheduled")
    fig.legend(loc="outside upper left", ncols=1 if len(runs) > 2 else len(runs), fontsize=8, frameon=False)
    caption = (
        "The time each scheduled pod waited, in log time from its creation to its first Scheduled decision, "
        "pods sorted from quickest to slowest (nearest-rank percentiles)."
    )
    return _plot(name, title, caption, fig)


def _ready_plot(runs: list[RunStats], labels: list[str]) -> Plot:
    name, title = "buffers-ready", "CapacityBuffers: share of log time fully ready"
    shares = [r.over_run.buffers_ready for r in runs]
    names = sorted({b for by in shares for b in by}, key=lambda b: (min(by.get(b, 1.0) for by in shares), b))
    if not names:
        return Plot(name, title, "No CapacityBuffers in this log.", None)
    shown = names[:MAX_READY_BARS]
    fig = _figure(10.0, 1.4 + 0.3 * len(shown) * max(1, len(runs) / 2))
    ax = fig.subplots()
    height = 0.8 / len(runs)
    y = np.arange(len(shown), dtype=np.float64)
    for i, (by, label) in enumerate(zip(shares, labels, strict=True)):
        mean = sum(by.values()) / len(by) if by else 0.0
        ax.barh(y + i * height, [by.get(b, 0.0) for b in shown], height=height, color=_run_color(i),
                label=f"{label} (mean {mean:.0%})")  # fmt: skip
    ax.set_yticks(y + height * (len(runs) - 1) / 2, shown, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0.0, 1.0)
    ax.xaxis.set_major_formatter(PercentFormatter(1.0))
    ax.set_xlabel("share of log time with readyReplicas ≥ replicas")
    fig.legend(loc="outside upper right", ncols=min(len(runs), 3), fontsize=8, frameon=False)
    more = f" The {len(shown)} least ready of {len(names):,} buffers." if len(names) > len(shown) else ""
    caption = "Per buffer, the share of the log time during which its last status was fully ready." + more
    return _plot(name, title, caption, fig)


def _volumes_plot(runs: list[RunStats], labels: list[str]) -> Plot:
    name, title = "volumes", "Volumes over the run: PVs chosen and capacity wasted"
    over = [r.over_run for r in runs]
    if not any(o.pvs_chosen for o in over):
        return Plot(name, title, "No PVs were chosen over this log.", None)
    fig = _figure(11.0, 1.6 + 0.5 * len(runs))
    ax_bytes, ax_count = fig.subplots(1, 2)
    unit, size = byte_unit(max(o.pv_bytes_capacity for o in over))
    y = np.arange(len(runs), dtype=np.float64)
    for i, (o, label) in enumerate(zip(over, labels, strict=True)):
        color = _run_color(i)
        ax_bytes.barh(y[i], o.pv_bytes_requested / size, color=color, label=label)
        ax_bytes.barh(y[i], o.pv_bytes_wasted / size, left=o.pv_bytes_requested / size, color=color, alpha=0.35,
                      hatch="//", edgecolor="white")  # fmt: skip
    ax_bytes.set_yticks(y, labels, fontsize=8)
    ax_bytes.invert_yaxis()
    ax_bytes.set_xlabel(f"capacity of the PVs chosen ({unit}): requested, then wasted (hatched)")
    counts = ("PVs chosen", "large PVs", "large PVs, small claims")
    height = 0.8 / len(runs)
    yc = np.arange(len(counts), dtype=np.float64)
    for i, o in enumerate(over):
        values = (o.pvs_chosen, o.large_pvs_chosen, o.large_pvs_taken_by_small_claims)
        ax_count.barh(yc + i * height, values, height=height, color=_run_color(i))
    ax_count.set_yticks(yc + height * (len(runs) - 1) / 2, counts, fontsize=8)
    ax_count.invert_yaxis()
    ax_count.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax_count.set_xlabel("bindings over the run")
    fig.legend(loc="outside upper right", ncols=min(len(runs), 4), fontsize=8, frameon=False)
    caption = (
        "Every binding to an existing PV made over the run: the claims' requests and the capacity left "
        "unrequested; how many PVs, how many large (≥1 TiB), and how many large ones went to small claims (≤10 GiB)."
    )
    return _plot(name, title, caption, fig)


# --- drawing helpers --------------------------------------------------------------------------------------


def _figure(width: float, height: float) -> Figure:
    fig = Figure(figsize=(width, height), dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)  # Agg, explicitly: no display, and no process-wide backend switch
    return fig


def _column(fig: Figure, n: int) -> list[Axes]:
    axes = fig.subplots(n, 1, sharex=True, sharey=True, squeeze=False)
    return [ax for (ax,) in axes]


def _empty(ax: Axes, text: str) -> None:
    ax.text(0.5, 0.5, text, transform=ax.transAxes, ha="center", va="center", color="#888")


def _texts(fig: Figure) -> tuple[str, ...]:
    """Every legend entry and axes title the figure draws, in order, once each."""
    legends = [*fig.legends, *(ax.get_legend() for ax in fig.axes)]
    texts = [ax.get_title(loc="left") for ax in fig.axes]
    texts += [t.get_text() for legend in legends if legend is not None for t in legend.get_texts()]
    return tuple(dict.fromkeys(t for t in texts if t))


def _plot(name: str, title: str, caption: str, fig: Figure) -> Plot:
    return Plot(name, title, caption, _png(fig), _texts(fig))


def _png(fig: Figure) -> bytes:
    """The figure as a PNG of 128 colours (a third of the bytes of matplotlib's RGBA, the same look)."""
    buf = io.BytesIO()
    with warnings.catch_warnings():
        # Run labels are file names and may hold characters the bundled font lacks; matplotlib draws
        # a box for them, which is fine in a plot, so only that warning is silenced, here only.
        warnings.filterwarnings("ignore", message=r"Glyph \d+ .* missing from font", category=UserWarning)
        fig.savefig(buf, format="rgba", dpi=DPI)
    width, height = (int(v) for v in fig.canvas.get_width_height())
    image = Image.frombytes("RGBA", (width, height), buf.getvalue()).convert("RGB")
    out = io.BytesIO()
    image.quantize(colors=PNG_COLORS, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE).save(
        out, format="PNG", optimize=True
    )
    return out.getvalue()


def _status_color(status: str) -> str:
    return STATUS_COLORS.get(status, OTHER_STATUS_COLOR)


def _run_color(i: int) -> str:
    return RUN_COLORS[i % len(RUN_COLORS)]
