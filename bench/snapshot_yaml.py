"""A snapshot at kubectl's sizes, as YAML and as JSON: `berth evaluate` on each.

Builds a 5,000-node, 100,000-PV cluster (the bench preset's t0 objects, with a few pending pods)
as one `kubectl get -o yaml|json`-style List in each format, then runs
`berth evaluate --snapshot FILE` on both under `/usr/bin/time -v` (where there is one) and prints
CPU seconds, wall seconds and max RSS. The target (issue 35): YAML in at most 3x the JSON time and
under 2 GB. Run: `python -m bench snapshot_yaml`. Figures only: no test asserts on them.
"""

from __future__ import annotations

import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from berth.core.generate import PRESETS, generate

NODES = int(os.environ.get("BENCH_SNAPSHOT_NODES", "5000"))
PODS = 50  # pending pods: the figures are about reading the snapshot, not deciding


def objects(nodes: int = NODES) -> list[dict[str, object]]:
    """The cluster at t0 (every object added before the first pending pod), plus PODS pending pods."""
    scale = nodes / 5000
    params = PRESETS["bench"].replace(
        nodes=nodes,
        local_pvs=round(95_000 * scale),
        zonal_pvs=round(5_000 * scale),
        pods=PODS,
        duration=60,
        churn=0.0,
    )
    out: dict[tuple[str, str, str], dict[str, object]] = {}
    for ev in generate(params, 1):
        obj = ev.object
        assert isinstance(obj, dict)  # the generator makes dicts
        meta = obj.get("metadata", {})
        key = (obj.get("kind", ""), meta.get("namespace", ""), meta.get("name", ""))
        if ev.type == "DELETED":
            out.pop(key, None)
        elif ev.type in ("ADDED", "MODIFIED"):
            out[key] = obj
    return list(out.values())


def write(directory: Path, nodes: int = NODES) -> tuple[Path, Path]:
    items = objects(nodes)
    doc = {"apiVersion": "v1", "kind": "List", "items": items}
    as_json, as_yaml = directory / "snapshot.json", directory / "snapshot.yaml"
    as_json.write_text(json.dumps(doc, indent=2))
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    with open(as_yaml, "w") as f:
        yaml.dump(doc, f, Dumper=dumper, default_flow_style=False, sort_keys=False)
    return as_json, as_yaml


def evaluate(path: Path) -> dict[str, float]:
    """CPU s, wall s and max RSS (MB) of one `berth evaluate` run."""
    cmd = [sys.executable, "-m", "berth_cli.main", "evaluate", "--snapshot", str(path), "--now", "2026-11-02T08:00:00Z"]
    if Path("/usr/bin/time").exists():
        started = time.perf_counter()
        done = subprocess.run(["/usr/bin/time", "-v", *cmd], capture_output=True, text=True, check=False)
        wall = time.perf_counter() - started
        text = done.stderr

        def field(name: str) -> float:
            m = re.search(rf"{name}[^:]*: ([0-9.]+)", text)
            return float(m.group(1)) if m else float("nan")

        return {
            "cpu": field("User time") + field("System time"),
            "wall": wall,
            "rss_mb": field("Maximum resident set size") / 1024,
        }
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(cmd, capture_output=True, check=False)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return {"cpu": cpu, "wall": wall, "rss_mb": after.ru_maxrss / 1024}


def run() -> None:
    print(f"== snapshot_yaml: berth evaluate on a {NODES:,}-node snapshot as YAML and as JSON ==")
    with tempfile.TemporaryDirectory() as tmp:
        as_json, as_yaml = write(Path(tmp))
        for path in (as_json, as_yaml):
            print(f"  {path.name}: {path.stat().st_size / 1e6:,.0f} MB")
        figures = {p.suffix[1:]: evaluate(p) for p in (as_json, as_yaml)}
    for fmt, f in figures.items():
        print(f"  {fmt:<5} {f['cpu']:7.1f} s CPU  {f['wall']:7.1f} s wall  {f['rss_mb']:8,.0f} MB max RSS")
    ratio = figures["yaml"]["cpu"] / max(figures["json"]["cpu"], 1e-9)
    print(f"  YAML/JSON CPU: {ratio:.2f}x (target <= 3x; YAML max RSS target < 2,048 MB)")


if __name__ == "__main__":
    if len(sys.argv) > 1:  # python -m bench.snapshot_yaml DIR: only write the two files
        Path(sys.argv[1]).mkdir(parents=True, exist_ok=True)
        print(*write(Path(sys.argv[1])))
    else:
        run()
