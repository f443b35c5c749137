"""berth on the same objects: `berth replay` of them as a watch-event log (as fast as possible) and
`berth evaluate` of them as a snapshot (a List), each as its own process, with kube's default profile
(berth's extras off, every node evaluated). The objects are the cluster as the API server listed it
before the pods were created, then the pods as it returned them (admission done: priority resolved,
default tolerations added), in the order it stored them.

Each command runs twice: on the whole log or snapshot, and on the cluster alone (no pending pods), so
that start-up and reading the nodes can be told apart from deciding the pods.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

import yaml

from bench.kube.workloads import Obj

BERTH = str(Path(sys.executable).with_name("berth"))
SOURCES = [str(Path(__file__).resolve().parents[2] / d) for d in ("shared", "services")]
STATUSES = ("Scheduled", "Unschedulable", "Error")
# kube's default profile: berth's extras off (docs/plugins.md), as tests/e2e/compare runs it
PROFILE = {
    "schedulerName": "default-scheduler",
    "plugins": {
        "multiPoint": {"disabled": [{"name": "LoadAwareScheduling"}]},
        "score": {"disabled": [{"name": "VolumeBinding"}]},  # kube 1.36: StorageCapacityScoring is off
    },
}


@dataclass
class BerthRun:
    label: str
    pods: int
    wall: float = 0.0  # seconds, the whole process
    cpu: float = 0.0  # its user + system CPU-seconds
    base_wall: float = 0.0  # the same on the cluster without the pods
    base_cpu: float = 0.0
    scheduled: int = 0  # pods placed
    nominated: int = 0  # pods that preempt (evaluate: nominated, the victims not carried out)
    victims: int = 0

    @property
    def marginal(self) -> float:
        """Wall seconds for the pods alone: the whole run less the run on the cluster without them."""
        return self.wall - self.base_wall


def compile_berth() -> None:
    """berth's bytecode, compiled as pip and the image (Dockerfile) compile it, before anything is
    timed: the tree is installed editable, and with PYTHONDONTWRITEBYTECODE set (as on these machines)
    each `berth` start would compile its 155 modules from source again, 0.4 s that no installed berth
    pays. kube's side is compiled Go."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", *SOURCES], check=True)


def timed(cmd: list[str], out: Path, repeats: int) -> tuple[float, float]:
    """Wall and CPU seconds of a command (its stdout to `out`, stderr beside it), the run with the median
    wall clock of `repeats`: one run of a second or two is at the mercy of whatever else holds the two
    cores at that moment. A failure raises with the end of its stderr."""
    runs = sorted(_once(cmd, out) for _ in range(repeats))
    return runs[len(runs) // 2]


def _once(cmd: list[str], out: Path) -> tuple[float, float]:
    err = out.with_suffix(".err")
    with out.open("wb") as sink, err.open("wb") as errors:
        t = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=sink, stderr=errors, env=os.environ | {"COLUMNS": "200"})
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t
    proc.returncode = code = os.waitstatus_to_exitcode(status)
    if code != 0:
        raise RuntimeError(f"{' '.join(cmd)}: exit {code}: {err.read_text(errors='replace').strip()[-1000:]}")
    return wall, usage.ru_utime + usage.ru_stime


def quiet(idle: float = 0.9, limit: float = 30.0) -> float:
    """Wait until the CPUs were at least `idle` idle over a second, at most `limit` seconds: berth is
    timed after the control plane stopped, not while the machine still settles. Returns the seconds
    waited."""
    t = time.perf_counter()
    while time.perf_counter() - t < limit:
        before = _cpu_times()
        time.sleep(1.0)
        after = _cpu_times()
        total = sum(after) - sum(before)
        if total and (after[3] + after[4] - before[3] - before[4]) / total >= idle:
            break
    return time.perf_counter() - t


def _cpu_times() -> list[int]:
    """The machine's CPU time in jiffies: user, nice, system, idle, iowait, ... (/proc/stat)."""
    return [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]


def write_log(path: Path, objects: list[Obj]) -> None:
    """ADDED events without `ts` (the clock follows the objects' creationTimestamp), then a BOOKMARK a
    minute of log time later: kube's clock runs on while it waits for victims to go, berth's moves only
    with the log, and a preemptor is retried at the first event after its backoff."""
    with path.open("w") as f:
        for obj in objects:
            f.write(json.dumps({"type": "ADDED", "object": obj}, separators=(",", ":")) + "\n")
        last = max(datetime.fromisoformat(o["metadata"]["creationTimestamp"]) for o in objects)
        rv = max(int(o["metadata"]["resourceVersion"]) for o in objects)
        later = (last + timedelta(minutes=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
        mark = {"apiVersion": "v1", "kind": "Pod", "metadata": {"resourceVersion": str(rv)}}
        f.write(json.dumps({"ts": later, "type": "BOOKMARK", "object": mark}) + "\n")


def write_snapshot(path: Path, objects: Iterable[Obj]) -> None:
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": list(objects)}))


def with_kind(pods: list[Obj]) -> list[Obj]:
    return [{"apiVersion": "v1", "kind": "Pod", **p} for p in pods]


def replay(folder: Path, setup: list[Obj], pods: list[Obj], repeats: int) -> BerthRun:
    config = _config(folder)
    run = BerthRun("berth replay", len(pods))
    write_log(folder / "base.jsonl", setup)
    write_log(folder / "log.jsonl", [*setup, *with_kind(pods)])
    common = ["--config", str(config), "--no-progress", "--rejects", str(folder / "rejects.jsonl")]
    run.base_wall, run.base_cpu = timed(
        [BERTH, "replay", str(folder / "base.jsonl"), *common], folder / "base.out", repeats
    )
    decisions = folder / "decisions.jsonl"
    cmd = [BERTH, "replay", str(folder / "log.jsonl"), "--decisions", str(decisions), *common]
    run.wall, run.cpu = timed(cmd, folder / "replay.out", repeats)
    placed, nominated = set(), set()
    for line in decisions.read_text().splitlines():
        d = json.loads(line)
        if d.get("kind") != "Decision":
            continue
        if d.get("status") == "Scheduled":
            placed.add(d["pod"])
        if d.get("nominatedNode"):
            nominated.add(d["pod"])
            run.victims += len(d.get("victims") or [])
    run.scheduled, run.nominated = len(placed), len(nominated)
    return run


def evaluate(folder: Path, setup: list[Obj], pods: list[Obj], repeats: int) -> BerthRun:
    """`-o wide`: a row per pod with its nomination and victims (`-o json` lists every node's scores
    for every pod: a gigabyte at 5,000 nodes and 1,000 pods)."""
    config = _config(folder)
    run = BerthRun("berth evaluate", len(pods))
    write_snapshot(folder / "base.json", setup)
    write_snapshot(folder / "snapshot.json", [*setup, *with_kind(pods)])
    common = ["--config", str(config), "-o", "wide"]
    run.base_wall, run.base_cpu = timed(
        [BERTH, "evaluate", "--snapshot", str(folder / "base.json"), *common], folder / "base-eval.out", repeats
    )
    out = folder / "evaluate.out"
    run.wall, run.cpu = timed([BERTH, "evaluate", "--snapshot", str(folder / "snapshot.json"), *common], out, repeats)
    for line in out.read_text().splitlines():
        cells = [c.strip() for c in line.split("│")]
        if len(cells) > 8 and cells[2] in STATUSES:
            run.scheduled += cells[2] == "Scheduled"
            if cells[7] not in ("", "-"):
                run.nominated += 1
    return run


def _config(folder: Path) -> Path:
    path = folder / "berth-config.yaml"
    config = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [PROFILE],
    }
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path
