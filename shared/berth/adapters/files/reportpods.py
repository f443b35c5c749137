"""The report's pods: why pods are unschedulable (by plugin), the list of every pod (searchable and
sortable with a little inline script, a plain table without it), each pod's own view (shown by CSS
:target, so it opens without the script too), and the configs side by side."""

from __future__ import annotations

import html
from collections.abc import Iterable
from typing import Any

from berth.core.pipeline.metrics import human_bytes
from berth.core.pipeline.podtrace import PodTrace, Step
from berth.core.pipeline.stats import RunStats
from berth.core.plugins.registry import plugin_of

# Pods with their own view, over every run of the page (each run an equal share), so that a log of
# tens of thousands of pods still gives a page a browser opens: the pods not scheduled first, then a
# sample of the scheduled ones, evenly spaced in the list's order. The list keeps every pod.
MAX_VIEWS = 3000
SAMPLE = 300  # of those, scheduled pods at most
OTHER = "(plugin not known)"
STATUS_ORDER = {"Unschedulable": 0, "Error": 1, "Scheduled": 3}  # other statuses: 2

e = html.escape


def ordered(traces: list[PodTrace]) -> list[PodTrace]:
    """Unschedulable pods first, then errors, then the rest; by pod within each."""
    return sorted(traces, key=lambda t: (STATUS_ORDER.get(t.status, 2), t.pod))


def with_views(traces: list[PodTrace], runs: int) -> set[int]:
    """The places, in ordered(traces), of the pods that get their own view: the pods not scheduled (as
    many as the run's share allows, in order), then up to its share of SAMPLE scheduled pods, evenly spaced."""
    budget, sample = MAX_VIEWS // runs, SAMPLE // runs
    scheduled = [n for n, t in enumerate(traces) if t.status == "Scheduled"]
    others = [n for n, t in enumerate(traces) if t.status != "Scheduled"]
    sampled = min(sample, len(scheduled))
    kept = others[: budget - sampled]
    picked = [scheduled[i * len(scheduled) // sampled] for i in range(sampled)]
    return set(kept) | set(picked)


def views_note(traces: list[PodTrace], views: set[int], label: str = "") -> str:
    """What the page holds views of, when not of every pod (under config label, when compared)."""
    if len(views) == len(traces):
        return ""
    stuck = sum(1 for t in traces if t.status != "Scheduled")
    stuck_views = sum(1 for n in views if traces[n].status != "Scheduled")
    scheduled = len(traces) - stuck
    first = "every one" if stuck_views == stuck else f"the first {stuck_views:,}"
    under = f" under {e(label)} (a linked status)" if label else " (a linked name)"
    return (
        f'<p class="note">So that the page stays light, {len(views):,} of these {len(traces):,} pods have their '
        f"own view{under}: {first} of the {stuck:,} not scheduled, and a sample of "
        f"{len(views) - stuck_views:,} of the {scheduled:,} scheduled, evenly spaced in this order. Every pod is in "
        "the list; every decision is in the decisions file (--decisions).</p>"
    )


def by_plugin(reasons: dict[str, int]) -> list[tuple[str, list[tuple[str, int]]]]:
    """Reasons (reason -> nodes) grouped by the plugin that gives them, the plugin with most nodes first."""
    groups: dict[str, list[tuple[str, int]]] = {}
    for reason, n in reasons.items():
        groups.setdefault(plugin_of(reason) or OTHER, []).append((reason, n))
    return sorted(groups.items(), key=lambda g: (-sum(n for _, n in g[1]), g[0]))


def why(step: Step) -> str:
    """A decision's reasons as HTML, one line per plugin; the message when no node gave a reason."""
    if step.status == "Scheduled":
        return ""
    groups = by_plugin(step.reasons)
    if not groups:
        return f'<span class="msg">{e(step.message)}</span>'
    lines = []
    for plugin, reasons in groups:
        text = "; ".join(f"{e(r)} <small>({n:,} node{'s' if n != 1 else ''})</small>" for r, n in reasons)
        lines.append(f'<div class="why"><b>{e(plugin)}</b> {text}</div>')
    return "".join(lines)


def seconds(value: float | None) -> str:
    return "" if value is None else f"{value:,.1f} s"


# --- why pods are unschedulable ---------------------------------------------------------------------------


def reasons_table(labels: list[str], pods: list[list[PodTrace]]) -> str:
    """Pods whose last decision is Unschedulable, by plugin and reason: a pod counts once under each
    reason its last decision gives (so the rows add up to more than the pods)."""
    counts: dict[tuple[str, str], list[int]] = {}
    stuck = [0] * len(labels)
    for i, traces in enumerate(pods):
        for t in traces:
            if t.status != "Unschedulable":
                continue
            stuck[i] += 1
            for plugin, reasons in by_plugin(t.last.reasons) or [(OTHER, [(t.last.message, 0)])]:
                for reason, _ in reasons:
                    counts.setdefault((plugin, reason), [0] * len(labels))[i] += 1
    out = ['<h2 id="unschedulable">Why pods are unschedulable, by plugin</h2>']
    if not any(stuck):
        out.append('<p class="note">No pod\'s last decision is Unschedulable.</p>')
        return "\n".join(out)
    pods_text = ", ".join(f"{e(label)}: {n:,}" for label, n in zip(labels, stuck, strict=True))
    out.append(
        f"<p>Pods whose last decision is Unschedulable ({pods_text}), by each reason their last decision "
        "gives and the plugin that gives it. A pod is counted under every reason its nodes gave, so a "
        "column adds up to more than its pods. The pods are the first rows of the list below.</p>"
    )
    out.append('<table class="reasons"><thead><tr><th>plugin</th><th>reason</th>')
    out += [f"<th>{e(label)}: pods</th>" for label in labels]
    out.append("</tr></thead><tbody>")
    rows = sorted(counts.items(), key=lambda kv: (-max(kv[1]), kv[0]))
    for (plugin, reason), ns in rows:
        cells = "".join(f'<td class="num">{n:,}</td>' for n in ns)
        out.append(f'<tr><td><b>{e(plugin)}</b></td><td class="text">{e(reason)}</td>{cells}</tr>')
    out.append("</tbody></table>")
    return "\n".join(out)


# --- the pod list -----------------------------------------------------------------------------------------

# The list's columns: the pod, then these for each config. Its CSS styles them by position (list_css), so
# the rows carry no attribute but a status class on the cells not Scheduled.
COLUMNS = ("status", "node", "attempts", "time to schedule", "reasons by plugin (last decision)")


def pod_list(labels: list[str], pods: list[list[PodTrace]], diff: list[dict[str, Any]]) -> str:
    """One list of every pod, one row each with a group of columns per config (shown side by side, or
    one config's whole group and the others' status and node, by tabs)."""
    out = ['<h2 id="pods">Pods</h2>']
    rows = merged(pods)
    if not rows:
        out.append('<p class="note">No pod was decided in this log.</p>')
        return "\n".join(out)
    compare = len(labels) > 1
    out.append(
        "<p>Every pod decided, by its last decision: unschedulable pods first"
        + (" (under any config)" if compare else "")
        + ". A pod's name opens its "
        "decisions over time and the node scores they carry: each plugin's score (0–100) on the best "
        "feasible nodes, as many as the decisions keep (--top-nodes, --all-nodes; at most 10 here), and the "
        "total, their sum weighted by the profile's weights. Attempts are the pod's scheduling attempts; "
        "time to schedule is log time from its creation to its first Scheduled decision."
        + (
            f" One row per pod and columns per config: the tabs show one config's, with the others' status "
            f"and node, or all side by side. ≠ marks a config that placed the pod differently from "
            f"{e(labels[0])} (node or PVs), and a status opens the pod's view under that config."
            if compare
            else ""
        )
        + "</p>"
    )
    if compare:
        buttons = "".join(
            f'<button type="button" data-show="{i}">{e(label)}</button>' for i, label in enumerate(labels)
        )
        out.append(
            f'<div class="tabs" hidden>{buttons}<button type="button" data-show="all">side by side</button></div>'
        )
    out.append(_controls(labels))
    listed = [ordered(p) for p in pods]
    views = [with_views(traces, len(pods)) for traces in listed]
    linked = [
        {traces[n].pod: view_id(run, n) for n in v} for run, (traces, v) in enumerate(zip(listed, views, strict=True))
    ]
    moved = _moved(diff)
    out.append(_table(labels, rows, linked, moved))
    for label, traces, v in zip(labels, listed, views, strict=True):
        note = views_note(traces, v, label if compare else "")
        if note:
            out.append(note)
    return "\n".join(out)


def merged(pods: list[list[PodTrace]]) -> list[tuple[str, list[PodTrace | None]]]:
    """Every pod with its trace under each config (None: not decided there), the pods not scheduled under
    some config first (unschedulable, then errors), by pod within each."""
    by = [{t.pod: t for t in traces} for traces in pods]
    names = {t.pod for traces in pods for t in traces}
    rows = [(pod, [of.get(pod) for of in by]) for pod in names]
    return sorted(rows, key=lambda r: (min(STATUS_ORDER.get(t.status, 2) for t in r[1] if t is not None), r[0]))


def _moved(diff: list[dict[str, Any]]) -> dict[str, set[int]]:
    """Per pod, the configs that placed it differently from the first (node or PVs), as --diff says."""
    out: dict[str, set[int]] = {}
    for d in diff:
        first = _placed(d["runs"][0])
        out[d["pod"]] = {j for j, r in enumerate(d["runs"]) if j and _placed(r) != first}
    return out


def _controls(labels: list[str]) -> str:
    statuses = "".join(f'<option value="{s}">{s}</option>' for s in ("Unschedulable", "Error", "Scheduled"))
    differs = (
        f'<label><input type="checkbox" class="differs"> placed differently from {e(labels[0])}</label>'
        if len(labels) > 1
        else ""
    )
    return (
        '<div class="controls" hidden><input type="search" placeholder="search pods, nodes, reasons" '
        'aria-label="search"> <select aria-label="status"><option value="">every status</option>'
        f'{statuses}</select> {differs} <span class="count"></span></div>'
    )


def _table(
    labels: list[str],
    rows: list[tuple[str, list[PodTrace | None]]],
    linked: list[dict[str, str]],
    moved: dict[str, set[int]],
) -> str:
    """The list: its header names each column (and how the script sorts it: data-k s by status, n as
    numbers); a cell carries only its text, and a class where its status is not Scheduled or differs."""
    compare = len(labels) > 1
    kinds = {"status": ' data-k="s"', "attempts": ' data-k="n"', "time to schedule": ' data-k="n"'}
    ths = "".join(f"<th{kinds.get(h, '')}>{e(h)}</th>" for h in COLUMNS)
    head = f"<tr><th>pod</th>{ths * len(labels)}</tr>"
    if compare:
        groups = "".join(f'<th colspan="{len(COLUMNS)}">{e(label)}</th>' for label in labels)
        head = f'<tr class="cfg"><th></th>{groups}</tr>{head}'
    out = [f'<table class="pods sortable"><thead>{head}</thead><tbody>']
    for pod, traces in rows:
        first = next((links[pod] for links in linked if pod in links), None)
        name = f'<a href="#{first}">{e(pod)}</a>' if first else e(pod)
        cells = [f"<td>{name}</td>"]
        for run, t in enumerate(traces):
            differs = run in moved.get(pod, ())
            cells.append(_cells(t, linked[run].get(pod) if compare else None, differs))
        out.append(f"<tr>{''.join(cells)}</tr>")
    out.append("</tbody></table>")
    return "\n".join(out)


def _cells(t: PodTrace | None, view: str | None, differs: bool) -> str:
    """A pod's cells under one config: status (linking to its view there), node, attempts, time, reasons."""
    classes = [] if t is None or t.status == "Scheduled" else [f"st-{t.status}"]
    classes += ["ne"] if differs else []
    attr = f' class="{e(" ".join(classes))}"' if classes else ""
    if t is None:
        return f"<td{attr}>not decided</td><td></td><td></td><td></td><td></td>"
    status = f'<a href="#{view}">{e(t.status)}</a>' if view else e(t.status)
    return (
        f"<td{attr}>{status}</td><td>{e(t.node or '')}</td><td>{t.attempts:,}</td><td>{seconds(t.wait)}</td>"
        f"<td>{why(t.last)}</td>"
    )


def list_css(labels: list[str]) -> str:
    """The CSS the list's tabs and narrow layout need for these configs: under tab i (data-show="i"), the
    other configs' attempts, time and reasons are hidden; on a narrow screen each group is led by its
    config's name."""
    if len(labels) < 2:
        return ""
    width = len(COLUMNS)
    hidden = [
        f'table.pods[data-show="{i}"] tr > :nth-child({2 + width * j + k})'
        for i in range(len(labels))
        for j in range(len(labels))
        if j != i
        for k in range(2, width)
    ]
    named = "\n".join(
        f"  table.pods td:nth-child({2 + width * j})::before, table.pods thead tr:last-child th:nth-child({2 + width * j})"
        f"::before {{ content: {css_string(label + ': ')}; }}\n"
        f"  table.pods td.ne:nth-child({2 + width * j})::before {{ content: {css_string(label + ': ≠ ')}; }}"
        for j, label in enumerate(labels)
    )
    return f"{', '.join(hidden)} {{ display: none; }}\n@media (max-width: 1000px) {{\n{named}\n}}\n"


def css_string(text: str) -> str:
    """text as a CSS string: quotes, backslashes, < and controls escaped (so no </style> either)."""
    return '"' + "".join(c if c.isprintable() and c not in '"\\<>' else f"\\{ord(c):x} " for c in text) + '"'


def view_id(run: int, n: int) -> str:
    return f"p{run}-{n}"


# --- each pod's view --------------------------------------------------------------------------------------


def pod_views(labels: list[str], pods: list[list[PodTrace]]) -> str:
    out = []
    listed = [ordered(p) for p in pods]
    views = [with_views(traces, len(pods)) for traces in listed]
    ids = [
        {t.pod: (n if n in v else None, t) for n, t in enumerate(traces)}
        for traces, v in zip(listed, views, strict=True)
    ]
    for run, traces in enumerate(listed):
        for n, t in enumerate(traces):
            if n in views[run]:
                out.append(_view(run, n, t, labels, ids))
    return "\n".join(out)


def _view(run: int, n: int, t: PodTrace, labels: list[str], ids: list[dict[str, tuple[int | None, PodTrace]]]) -> str:
    under = f" <small>under {e(labels[run])}</small>" if len(labels) > 1 else ""
    last = t.last
    facts = [
        ("status", f'<span class="st-{e(t.status)}">{e(t.status)}</span>'),
        ("node", e(t.node or "-")),
        ("attempts", f"{t.attempts:,} ({t.decisions:,} decision{'s' if t.decisions != 1 else ''})"),
        ("time to schedule", seconds(t.wait) or "-"),
    ]
    if t.status != "Scheduled":
        facts.append(("message", e(last.message)))
    if last.volumes:
        facts.append(("volumes", "<br>".join(e(v) for v in last.volumes)))
    if last.nominated:
        facts.append(("nominated node", e(last.nominated)))
    if last.victims:
        facts.append(("victims", "<br>".join(e(v) for v in last.victims)))
    if len(labels) > 1:
        facts.append(("under each config", _configs_of(t.pod, labels, ids)))
    dl = "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in facts)
    return (
        f'<section class="pod" id="{view_id(run, n)}" data-pod="{e(t.pod)}" data-run="{e(labels[run])}">'
        f'<a class="close" href="#pods">× close</a><h3>{e(t.pod)}{under}</h3><dl>{dl}</dl>\n'
        f"{_steps(t)}\n{_scores(t)}</section>"
    )


def _configs_of(pod: str, labels: list[str], ids: list[dict[str, tuple[int | None, PodTrace]]]) -> str:
    """The pod under every config, each linking to its view there (where it has one)."""
    parts = []
    for run, (label, of) in enumerate(zip(labels, ids, strict=True)):
        got = of.get(pod)
        if got is None:
            parts.append(f"{e(label)}: not decided")
            continue
        n, o = got
        name = e(label) if n is None else f'<a href="#{view_id(run, n)}">{e(label)}</a>'
        parts.append(f"{name}: {e(o.node or o.status)}")
    return " · ".join(parts)


def _when(s: Step) -> str:
    return e(s.ts) if s.ts else f"line {s.position:,}"


def _steps(t: PodTrace) -> str:
    cut = t.decisions - len(t.steps)
    note = f'<p class="note">The last {len(t.steps)} of {t.decisions:,} decisions.</p>' if cut > 0 else ""
    rows = []
    for s in t.steps:
        best = ", ".join(f"{e(ns.node)} ({ns.total:,})" for ns in s.nodes)
        detail = why(s) if s.status != "Scheduled" else (f"best: {best}" if best else "")
        if s.nominated:
            detail += f"<div>nominated {e(s.nominated)}; victims: {e(', '.join(s.victims)) or 'none'}</div>"
        rows.append(
            f'<tr><td>{_when(s)}</td><td>{s.attempt}</td><td class="st-{e(s.status)}">{e(s.status)}</td>'
            f"<td>{e(s.node or '-')}</td><td>{detail}</td></tr>"
        )
    return (
        f'<h4>Decisions over time</h4>{note}<table class="steps"><thead><tr><th>log time</th><th>attempt</th>'
        f"<th>status</th><th>node</th><th>reasons by plugin, or the best nodes (total)</th></tr></thead><tbody>"
        f"{''.join(rows)}</tbody></table>"
    )


def _scores(t: PodTrace) -> str:
    """Each decision's best nodes with every plugin's score, as the decision carries them."""
    listed = [s for s in t.steps if s.nodes]
    if not listed:
        return '<h4>Node scores</h4><p class="note">No decision of this pod lists a feasible node.</p>'
    out = ["<h4>Node scores</h4>"]
    out.append('<div class="scroll">')
    for s in listed:
        plugins = sorted({p for ns in s.nodes for p in ns.scores})
        more = f", {s.feasible:,} feasible" if s.feasible > len(s.nodes) else ""
        head = "".join(f"<th>{e(ns.node)}</th>" for ns in s.nodes)
        total = "".join(f"<td><b>{ns.total:,}</b></td>" for ns in s.nodes)
        rows = "".join(
            f"<tr><td>{e(p)}</td>" + "".join(f"<td>{ns.scores.get(p, '')}</td>" for ns in s.nodes) + "</tr>"
            for p in plugins
        )
        out.append(
            f'<table class="scores"><caption>attempt {s.attempt} at {_when(s)}: {e(s.status)}{more}</caption>'
            f"<thead><tr><th>plugin</th>{head}</tr></thead><tbody><tr><td><b>total</b></td>{total}</tr>{rows}"
            "</tbody></table>"
        )
    out.append("</div>")
    return "\n".join(out)


# --- the configs side by side -----------------------------------------------------------------------------


def compare_table(runs: list[RunStats], labels: list[str], sources: list[str], pods: list[list[PodTrace]],
                  diff: list[dict[str, Any]]) -> str:  # fmt: skip
    """One row per config: where it comes from, how its pods ended, and how it differs from the first."""
    first = {t.pod: t for t in pods[0]}
    heads = ["config", "file", "pods Scheduled", "Unschedulable", "Error", "placed differently from "
             + labels[0], "scheduled only here", f"scheduled only by {labels[0]}", "time to schedule p50 / p99",
             "PV capacity wasted"]  # fmt: skip
    out = ['<h2 id="configs">The configs side by side</h2>']
    out.append(
        "<p>Each run is the same log under one config, named by its file. Pods count by their last "
        f"decision; “placed differently” compares each pod's last placement (node and PVs) with {e(labels[0])}'s, "
        "as --diff does.</p>"
    )
    out.append(
        '<div class="scroll"><table class="configs"><thead><tr>'
        + "".join(f"<th>{e(h)}</th>" for h in heads)
        + "</tr></thead><tbody>"
    )
    for i, (run, label, source, traces) in enumerate(zip(runs, labels, sources, pods, strict=True)):
        status = _statuses(traces)
        here = {t.pod for t in traces if t.status == "Scheduled"}
        there = {p for p, t in first.items() if t.status == "Scheduled"}
        moved = sum(1 for d in diff if _placed(d["runs"][i]) != _placed(d["runs"][0]))
        p = run.over_run.time_to_schedule
        cells = [
            e(label),
            e(source),
            f"{status.get('Scheduled', 0):,}",
            f"{status.get('Unschedulable', 0):,}",
            f"{status.get('Error', 0):,}",
            "-" if i == 0 else f"{moved:,}",
            "-" if i == 0 else f"{len(here - there):,}",
            "-" if i == 0 else f"{len(there - here):,}",
            f"{p.p50:,.1f} s / {p.p99:,.1f} s",
            e(human_bytes(run.over_run.pv_bytes_wasted)),
        ]
        out.append(
            "<tr>" + "".join(f"<td{' class=text' if j < 2 else ''}>{c}</td>" for j, c in enumerate(cells)) + "</tr>"
        )
    out.append("</tbody></table></div>")
    return "\n".join(out)


def _statuses(traces: Iterable[PodTrace]) -> dict[str, int]:
    out: dict[str, int] = {}
    for t in traces:
        out[t.status] = out.get(t.status, 0) + 1
    return out


def _placed(run: dict[str, Any]) -> tuple[Any, Any]:
    return run["node"], run["pvs"]
