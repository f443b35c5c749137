"""The over-the-run metrics of `berth replay --summary`, recomputed plainly from the decisions file and the log.

The log is a generated churn log in which every pod leaves before the end, so the end-of-log view
is empty while the over-the-run figures are not.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from berth.adapters.files.eventlog import EventWriter
from berth.core.api.meta.normalise import parse_time
from berth.core.api.meta.quantity import ceil_units, parse_nanos
from berth.core.generate import PRESETS, generate
from berth.core.generate.params import NodeShape
from berth.core.pipeline.overrun import percentiles
from berth_cli.main import main

GI, TI = 2**30, 2**40
SHAPES = (NodeShape(2, 64), NodeShape(16, 4))  # lopsided nodes: some capacity is stranded


@pytest.fixture(scope="module")
def churn(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[dict], list[dict], dict, str]:
    d = tmp_path_factory.mktemp("churn")
    log = d / "churn.jsonl"
    params = PRESETS["small-churn"].replace(
        buffers=0, daemonset=False, pods=60, duration=900, nodes=6, node_shapes=SHAPES
    )
    with EventWriter(str(log)) as w:
        for ev in generate(params, 3):
            w.write(ev)
    decisions, summary = d / "d.jsonl", d / "s.json"
    code = main(["replay", str(log), "--no-progress", "--decisions", str(decisions), "--summary", str(summary)])
    assert code == 0
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    records = [json.loads(line) for line in decisions.read_text().splitlines()]
    return lines, [r for r in records if r["kind"] == "Decision"], json.loads(summary.read_text())["runs"][0], str(log)


def bytes_of(q: str) -> int:
    return ceil_units(parse_nanos(q))


def test_pods(churn: tuple[list[dict], list[dict], dict, str]) -> None:
    lines, decisions, run, _ = churn
    scheduled = [d for d in decisions if d["status"] == "Scheduled"]
    assert run["events"] == len(lines)
    assert run["podsDecided"] == len({d["pod"] for d in decisions}) > 0
    assert run["podsScheduled"] == len({d["pod"] for d in scheduled}) > 0
    deleted = {
        f"{o['metadata']['namespace']}/{o['metadata']['name']}": i + 1
        for i, line in enumerate(lines)
        if line["type"] == "DELETED" and (o := line["object"])["kind"] == "Pod"
    }
    last = {d["pod"]: d for d in decisions}
    waiting = [p for p, d in last.items() if d["status"] == "Unschedulable" and deleted.get(p, 0) <= d["position"]]
    assert run["podsUnschedulableAtEnd"] == len(waiting)
    created = {
        f"{o['metadata']['namespace']}/{o['metadata']['name']}": parse_time(o["metadata"]["creationTimestamp"])
        for line in lines
        if (o := line["object"]).get("kind") == "Pod"
    }
    first: dict[str, float] = {}
    for d in scheduled:
        first.setdefault(d["pod"], (parse_time(d["ts"]) - created[d["pod"]]).total_seconds())
    want = percentiles(list(first.values()))
    assert run["timeToScheduleSeconds"] == {k: round(getattr(want, k), 3) for k in ("p50", "p90", "p99", "max")}
    ranked = sorted(first.values())
    assert run["timeToScheduleSeconds"]["p50"] == round(ranked[math.ceil(len(ranked) / 2) - 1], 3)
    assert run["preemptions"] == run["victims"] == 0


def test_volumes(churn: tuple[list[dict], list[dict], dict, str]) -> None:
    lines, decisions, run, _ = churn
    claims = {
        f"{o['metadata']['namespace']}/{o['metadata']['name']}": bytes_of(o["spec"]["resources"]["requests"]["storage"])
        for line in lines
        if (o := line["object"]).get("kind") == "PersistentVolumeClaim"
    }
    pvs = {
        o["metadata"]["name"]: bytes_of(o["spec"]["capacity"]["storage"])
        for line in lines
        if (o := line["object"]).get("kind") == "PersistentVolume"
    }
    chosen = [
        (claims[b["claim"]], pvs[b["pv"]])
        for d in decisions
        if d["status"] == "Scheduled"
        for b in d["volumeBindings"]
        if b.get("pv")
    ]
    assert run["pvsChosen"] == len(chosen) > 0
    assert run["pvBytesRequested"] == sum(r for r, _ in chosen)
    assert run["pvBytesWasted"] == sum(c - r for r, c in chosen)
    assert run["largePVsTakenBySmallClaims"] == sum(1 for r, c in chosen if c >= TI and r <= 10 * GI)


def test_nodes(churn: tuple[list[dict], list[dict], dict, str]) -> None:
    """Σ requests of live pods on nodes over Σ allocatable of live nodes, the per-node spread and the
    stranded capacity, each held from one line to the next; recomputed from scratch at every line."""
    lines, decisions, run, _ = churn
    at: dict[int, list[dict]] = {}
    for d in decisions:
        at.setdefault(d["position"], []).append(d)
    requests: dict[str, tuple[int, int]] = {}
    alloc: dict[str, tuple[int, int]] = {}
    live: dict[str, tuple[str, int, int]] = {}  # pod -> (node, cpu, memory)
    figures = ("cpu", "memory", "cpuSpread", "memorySpread", "cpuStranded", "memoryStranded")
    area = dict.fromkeys(figures, 0.0)
    peak = dict.fromkeys(figures, 0.0)
    start = now = None

    def values() -> dict[str, float]:
        used = {n: [0, 0] for n in alloc}
        for n, cpu, mem in live.values():
            if n in used:
                used[n][0] += cpu
                used[n][1] += mem
        out: dict[str, float] = {}
        for i, name in enumerate(("cpu", "memory")):
            total = sum(a[i] for a in alloc.values())
            out[name] = sum(p[i + 1] for p in live.values()) / total if total else 0.0
            ratios = [used[n][i] / a[i] for n, a in alloc.items() if a[i]]
            mean = sum(ratios) / len(ratios) if ratios else 0.0
            out[name + "Spread"] = math.sqrt(sum((r - mean) ** 2 for r in ratios) / len(ratios)) if ratios else 0.0
        free = {n: (max(0, a[0] - used[n][0]), max(0, a[1] - used[n][1])) for n, a in alloc.items()}
        cpus = sorted(p[1] for p in live.values())
        mems = sorted(p[2] for p in live.values())
        median = (cpus[(len(cpus) + 1) // 2 - 1], mems[(len(mems) + 1) // 2 - 1]) if live else (0, 0)
        for i, name in enumerate(("cpuStranded", "memoryStranded")):
            total = sum(a[i] for a in alloc.values())
            stuck = sum(f[i] for f in free.values() if f[1 - i] < median[1 - i])
            out[name] = stuck / total if total else 0.0
        return out

    for position, line in enumerate(lines, 1):
        t = parse_time(line["ts"]).timestamp()
        if now is not None and t > now:
            for k, v in values().items():
                area[k] += v * (t - now)
                if k.endswith("Stranded"):  # the peak of a value held for some log time
                    peak[k] = max(peak[k], v)
        start = t if start is None else start
        now = t if now is None else max(now, t)
        o = line["object"]
        kind, key = o.get("kind"), f"{o['metadata'].get('namespace', '')}/{o['metadata']['name']}"
        if kind == "Node":
            a, key = o["status"]["allocatable"], o["metadata"]["name"]
            alloc.pop(key, None)
            if line["type"] != "DELETED":
                alloc[key] = (parse_nanos(a["cpu"]) // 10**6, ceil_units(parse_nanos(a["memory"])))
        elif kind == "Pod":
            r = {k: v for c in o["spec"]["containers"] for k, v in c.get("resources", {}).get("requests", {}).items()}
            requests[key] = (parse_nanos(r.get("cpu", "0")) // 10**6, ceil_units(parse_nanos(r.get("memory", "0"))))
            if line["type"] == "DELETED" or o.get("status", {}).get("phase") in ("Succeeded", "Failed"):
                live.pop(key, None)
        for d in at.get(position, []):
            if d["status"] == "Scheduled":
                live[d["pod"]] = (d["node"], *requests[d["pod"]])
        v = values()
        peak["cpu"], peak["memory"] = max(peak["cpu"], v["cpu"]), max(peak["memory"], v["memory"])
    assert start is not None and now is not None
    for k, v in values().items():
        peak[k] = max(peak[k], v) if k.endswith("Stranded") else peak[k]
    mean = {k: a / (now - start) for k, a in area.items()}
    assert run["cpuRequested"] == {"mean": round(mean["cpu"], 6), "peak": round(peak["cpu"], 6)}
    assert run["memoryRequested"] == {"mean": round(mean["memory"], 6), "peak": round(peak["memory"], 6)}
    assert run["cpuSpread"] == pytest.approx(mean["cpuSpread"], abs=2e-6)
    assert run["memorySpread"] == pytest.approx(mean["memorySpread"], abs=2e-6)
    for k in ("cpuStranded", "memoryStranded"):
        assert run[k]["mean"] == pytest.approx(mean[k], abs=2e-6), k
        assert run[k]["peak"] == pytest.approx(peak[k], abs=2e-6), k
    assert peak["cpu"] > 0 and not live  # every pod left before the end
    assert peak["cpuStranded"] + peak["memoryStranded"] > 0  # the figures are not trivially zero


def test_buffers_fully_ready(tmp_path: Path) -> None:
    """A churn log with buffers: each buffer's share of log time fully ready, from its status lines."""
    log = tmp_path / "churn.jsonl"
    params = PRESETS["small-churn"].replace(pods=40, duration=600)
    with EventWriter(str(log)) as w:
        for ev in generate(params, 5):
            w.write(ev)
    decisions, summary = tmp_path / "d.jsonl", tmp_path / "s.json"
    assert main(["replay", str(log), "--no-progress", "--decisions", str(decisions), "--summary", str(summary)]) == 0
    run = json.loads(summary.read_text())["runs"][0]
    times = [parse_time(json.loads(line)["ts"]).timestamp() for line in log.read_text().splitlines()]
    first, last = times[0], max(times)
    since: dict[str, float | None] = {}
    ready: dict[str, float] = {}
    for r in map(json.loads, decisions.read_text().splitlines()):
        if r["kind"] != "BufferStatus":
            continue
        t = min(max(parse_time(r["ts"]).timestamp(), first), last)
        if since.get(r["buffer"]) is not None:
            ready[r["buffer"]] = ready.get(r["buffer"], 0.0) + t - since[r["buffer"]]
        ready.setdefault(r["buffer"], 0.0)
        since[r["buffer"]] = t if r["readyReplicas"] >= r["status"].get("replicas", 0) else None
    for name, t in since.items():
        if t is not None:
            ready[name] += last - t
    assert ready, "the log has buffers"
    assert run["buffersFullyReady"] == {k: round(v / (last - first), 6) for k, v in sorted(ready.items())}


def test_the_end_of_log_view_is_empty(churn: tuple[list[dict], list[dict], dict, str], tmp_path: Path) -> None:
    *_, log = churn
    import io

    from rich.console import Console

    from berth.core.api.watch import parse_event
    from berth.core.config.kubeschedulerconfig import parse_config
    from berth.core.pipeline.scorer import ScorerEngine
    from berth_cli.summary import render_summary

    engine = ScorerEngine(parse_config(None))
    for i, line in enumerate(Path(log).read_bytes().splitlines(), 1):
        engine.handle(parse_event(line, i))
    stats = engine.finish()
    assert stats.bindings == []
    assert all(n.cpu_requested == 0 and n.memory_requested == 0 for n in stats.nodes)
    console = Console(file=io.StringIO(), width=160)
    render_summary([stats], console)
    assert "Volumes at the end" in console.file.getvalue()  # type: ignore[attr-defined]
