"""The Grafana dashboard in deploy/dashboards: a well-formed dashboard whose queries use the metrics
(and labels) berth's code defines, with a panel for every one of them."""

from __future__ import annotations

import ast
import json
import re
from functools import cache
from typing import Any

from tests.deploy.helpers import DEPLOY, ROOT

DASHBOARD = DEPLOY / "dashboards" / "berth.json"
METRIC_TYPES = {"Counter", "Gauge", "Histogram", "Summary"}
TARGET_LABELS = {"job", "instance", "namespace", "pod"}  # added by the scrape, not by berth


def _dashboard() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(DASHBOARD.read_text())
    return doc


def _panels() -> list[dict[str, Any]]:
    return [p for p in _dashboard()["panels"] if p["type"] != "row"]


def _exprs() -> list[str]:
    return [t["expr"] for p in _panels() for t in p["targets"]]


@cache
def defined_metrics() -> dict[str, set[str]]:
    """Every series name berth's code exposes (prometheus_client naming) -> its label names."""
    out: dict[str, set[str]] = {}
    for base in (ROOT / "shared", ROOT / "services"):
        for f in base.rglob("*.py"):
            for node in ast.walk(ast.parse(f.read_text())):
                if not (
                    isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in METRIC_TYPES
                ):
                    continue
                if not (node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
                    continue
                name = node.args[0].value
                labels_node = node.args[2] if len(node.args) > 2 else None
                for k in node.keywords:
                    if k.arg == "labelnames":
                        labels_node = k.value
                labels = set(ast.literal_eval(labels_node)) if labels_node is not None else set()
                kind = node.func.id
                if kind == "Counter":
                    series = [name.removesuffix("_total") + "_total"]
                elif kind in ("Histogram", "Summary"):
                    series = [f"{name}_sum", f"{name}_count"]
                    if kind == "Histogram":
                        series.append(f"{name}_bucket")
                else:
                    series = [name]
                for s in series:
                    out[s] = labels | ({"le"} if s.endswith("_bucket") else set())
    return out


def test_dashboard_is_well_formed() -> None:
    d = _dashboard()
    assert d["uid"] == "berth-overview" and d["title"] == "berth"
    assert isinstance(d["schemaVersion"], int)
    (var,) = d["templating"]["list"]
    assert (var["name"], var["type"], var["query"]) == ("datasource", "datasource", "prometheus")
    ids = [p["id"] for p in d["panels"]]
    assert len(ids) == len(set(ids))
    cells: set[tuple[int, int]] = set()
    for p in d["panels"]:
        g = p["gridPos"]
        assert g["x"] >= 0 and g["x"] + g["w"] <= 24, p["title"]
        area = {(x, y) for x in range(g["x"], g["x"] + g["w"]) for y in range(g["y"], g["y"] + g["h"])}
        assert not area & cells, f"{p['title']} overlaps another panel"
        cells |= area
    for p in _panels():
        assert p["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, p["title"]
        assert p["targets"] and p.get("description"), p["title"]
        refs = [t["refId"] for t in p["targets"]]
        assert len(refs) == len(set(refs)), p["title"]
        assert p["fieldConfig"]["defaults"]["unit"], p["title"]


def _balanced(expr: str) -> bool:
    stack = []
    pairs = {")": "(", "]": "[", "}": "{"}
    in_string = False
    for ch in expr:
        if ch == '"':
            in_string = not in_string
        elif in_string:
            continue
        elif ch in "([{":
            stack.append(ch)
        elif ch in pairs and (not stack or stack.pop() != pairs[ch]):
            return False
    return not stack and not in_string


def test_queries_use_what_berth_exposes() -> None:
    metrics = defined_metrics()
    assert "berth_events_total" in metrics, "no berth metrics found in the code"
    for expr in _exprs():
        assert _balanced(expr), expr
        used = set(re.findall(r"\bberth_[a-z0-9_]+", expr))
        assert used, expr
        for name in used:
            assert name in metrics, f"{expr}: berth does not expose {name}"
        labels = set().union(*(metrics[n] for n in used)) | TARGET_LABELS
        for group in re.findall(r"\bby \(([^)]*)\)", expr):
            for label in (x.strip() for x in group.split(",")):
                assert label in labels, f"{expr}: {label} is not a label of {sorted(used)}"
        for label in re.findall(r'[{,]\s*([a-z_]+)\s*=~?"', expr):
            assert label in labels, f"{expr}: {label} is not a label of {sorted(used)}"
        if "histogram_quantile" in expr:
            assert re.search(r"by \([^)]*\ble\b", expr) and "_bucket[" in expr, expr
        for window in re.findall(r"\[([^\]]+)\]", expr):
            assert window == "$__rate_interval", f"{expr}: use $__rate_interval"


def test_every_berth_metric_has_a_panel() -> None:
    text = " ".join(_exprs())
    families = {re.sub(r"_(bucket|sum|count)$", "", n) for n in defined_metrics() if n.startswith("berth_")}
    missing = sorted(f for f in families if f not in text)
    assert not missing, f"metrics without a panel: {missing}"


def test_the_panels_the_issue_asks_for() -> None:
    text = " ".join(_exprs())
    for needle in (
        "sum by (status) (rate(berth_decisions_total",
        "histogram_quantile(0.5, sum by (le) (rate(berth_decision_duration_seconds_bucket",
        "histogram_quantile(0.99, sum by (le) (rate(berth_decision_duration_seconds_bucket",
        "histogram_quantile(0.99, sum by (le, plugin",
        "sum by (service) (rate(berth_events_total",
        "berth_consumer_lag",
        "berth_dead_letters_total",
        "sum by (result) (rate(berth_reservations_total",
        'berth_reservations_total{result="conflict"}',
    ):
        assert needle in text, needle
