"""How `berth evaluate` shows its decisions: -o json|yaml|table|wide, and the reasons' plugins.

Only the showing: the decisions are the scheduler's, unchanged."""

from __future__ import annotations

import sys
from typing import Any

import msgspec
import yaml
from rich.console import Console
from rich.table import Table
from rich.text import Text

from berth.core.plugins.registry import plugin_of
from berth.core.scheduler.results import Decision, NodeResult, RejectedGroup
from berth_cli import boxtable

OUTPUTS = ("json", "yaml", "table", "wide")
NODES_SHOWN = 5  # node names listed per group of rejected nodes in -o wide; the rest are counted
BEST_SHOWN = 3  # feasible nodes shown per pod in the table, the best first


def named(reason: str) -> str:
    """`Plugin: reason` (the reason alone where its plugin is not known)."""
    plugin = plugin_of(reason)
    return f"{plugin}: {reason}" if plugin else reason


def to_builtins(out: dict[str, Any]) -> Any:
    return msgspec.to_builtins(out)


def print_yaml(out: dict[str, Any]) -> None:
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    sys.stdout.write(yaml.dump(to_builtins(out), Dumper=dumper, sort_keys=False, default_flow_style=False))


def _best(d: Decision, top: int) -> list[tuple[str, NodeResult]]:
    return sorted(
        ((n, r) for n, r in d.nodes.items() if r.feasible),
        key=lambda x: (-(x[1].total or 0), x[0]),
    )[:top]


def _volumes(d: Decision) -> str:
    return "\n".join(
        f"{b.claim} -> {b.pv}" if b.pv else f"{b.claim} -> provision on {b.provision.node if b.provision else '?'}"
        for b in d.volume_bindings
    )


def _rejected(groups: list[RejectedGroup]) -> str:
    """Rejected nodes grouped by their reasons, each reason naming its plugin."""
    lines = []
    for g in sorted(groups, key=lambda g: (-g.size, g.reasons)):
        shown = ", ".join(g.first[:NODES_SHOWN]) + (f" +{g.size - NODES_SHOWN} more" if g.size > NODES_SHOWN else "")
        lines.append(f"{g.size} node(s) ({shown}):")
        lines += [f"  {named(reason)}" for reason in g.reasons] or ["  (no reason given)"]
    return "\n".join(lines)


def _scores(r: NodeResult) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted((r.scores or {}).items(), key=lambda kv: (-kv[1], kv[0])) if v)


def render_table(
    decisions: list[Decision], rejected: list[list[RejectedGroup]], wide: bool = False, top: int = BEST_SHOWN
) -> None:
    """rejected: each decision's rejected nodes by their reasons (Scheduler's rejected_groups)."""
    title = f"berth evaluate: {len(decisions)} pending pod(s)"
    columns = ["pod", "status", "node", "volumes", "best nodes (total)", "message"]
    if wide:
        columns[4] = "best nodes (total: plugin scores)"
        columns += ["nominated", "victims", "rejected nodes (plugin: reason)"]
    rows = []
    for d, groups in zip(decisions, rejected, strict=True):
        if wide:
            best = "\n".join(f"{n} ({r.total or 0}: {_scores(r) or 'all 0'})" for n, r in _best(d, top))
        else:
            best = "\n".join(f"{n} ({r.total or 0})" for n, r in _best(d, top))
        row = [d.pod, d.status, d.node or "-", _volumes(d), best, "" if d.node else d.message]
        if wide:
            nominated = d.nominated_node if isinstance(d.nominated_node, str) else ""
            victims = "\n".join(d.victims) if isinstance(d.victims, list) else ""
            row += [nominated or "-", victims or "-", _rejected(groups)]
        rows.append(row)
    console = Console()
    if not console.is_terminal:
        console = Console(width=220 if wide else 160)
        drawn = boxtable.draw(console, title, columns, rows)  # rich's bytes, without its per-cell cost
        if drawn is not None:
            console.file.write(drawn)
            return
    table = Table(title=title, title_justify="left")
    for col in columns:
        table.add_column(col, overflow="fold")
    for row in rows:
        table.add_row(*(Text(c) for c in row))
    console.print(table)
