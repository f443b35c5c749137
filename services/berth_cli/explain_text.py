"""`berth explain -o text`: the explanation for a terminal (styles only on a terminal; lines never
wrapped by the renderer, so a pipe gets them whole)."""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

from berth.core.scheduler.explain import Explanation


def _shown(items: list[object], most: int) -> int:
    return len(items) if most <= 0 else min(most, len(items))


def lines(x: Explanation, most: int) -> list[Text]:
    d = x.decision
    out: list[Text] = []

    def add(text: str = "", style: str = "", indent: int = 0) -> None:
        out.append(Text(" " * indent + text, style=style))

    add(f"Pod {x.pod}", "bold")
    status_style = {"Scheduled": "green", "Unschedulable": "red"}.get(d.status, "yellow")
    where = f" on {d.node}" if d.node else ""
    out.append(Text.assemble((f"{d.status}{where}", f"bold {status_style}"), f": {d.message}" if not d.node else ""))
    for b in d.volume_bindings:
        add(f"claim {b.claim} -> {b.pv or 'provisioned on ' + (b.provision.node if b.provision else '?')}", indent=2)
    for note in x.notes:
        add(f"note: {note}", "dim", 2)

    if x.rejected:
        add()
        n = _shown(list(x.rejected), most)
        add(f"Why not there: {len(x.rejected)} node(s) rejected", "bold")
        for r in x.rejected[:n]:
            add(r.node, "cyan", 2)
            for rej in r.plugins:
                for reason in rej.reasons or ["(no reason of its own on the decision)"]:
                    out.append(Text.assemble(" " * 4, (f"{rej.plugin or '?'}", "magenta"), f": {reason}"))
                for detail in rej.details:
                    add(detail.text, indent=6)
        if n < len(x.rejected):
            add(
                f"... and {len(x.rejected) - n} more node(s): --nodes 0 shows every one, -o json has them all", "dim", 2
            )

    if x.scores:
        add()
        n = _shown(list(x.scores), most)
        add(f"Scores: {len(x.scores)} feasible node(s); total = sum of score x weight", "bold")
        for s in x.scores[:n]:
            add(f"{s.node}  total {s.total}", "cyan", 2)
            width = max((len(p.plugin) for p in s.parts), default=0)
            for p in s.parts:
                add(
                    f"{p.plugin.ljust(width)}  {p.score:>3} x {p.weight:<2} = {p.weighted:>4}  ({p.share:g}%)", indent=4
                )
        if n < len(x.scores):
            add(f"... and {len(x.scores) - n} more feasible node(s)", "dim", 2)
    if x.margin is not None:
        m = x.margin
        if m.by:
            parts = ", ".join(f"{k} {v:+d}" for k, v in sorted(m.plugins.items(), key=lambda kv: -abs(kv[1])))
            add(f"{m.winner} wins by {m.by} over {m.runner_up}: {parts}", indent=2)
        else:
            add(f"{m.winner} and {m.runner_up} tie at the same total: the tie goes to the node name", indent=2)

    if x.preemption is not None:
        add()
        add("Preemption", "bold")
        pre = x.preemption
        add(f"nominated node {pre.nominated_node}; victims: {', '.join(pre.victims) or 'none'}", indent=2)

    if x.suggestions:
        add()
        add("What would make it fit (each tried on the state: the filters then pass the node)", "bold")
        for sug in x.suggestions:
            add(f"- {sug.text}", "green", 2)
    return out


def render(x: Explanation, most: int) -> None:
    console = Console(highlight=False)
    for line in lines(x, most):
        console.print(line, soft_wrap=True)
