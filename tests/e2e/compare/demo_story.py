"""The demo's story against kube: the sample log's pods placed by the real kube-scheduler 1.36 with its own
VolumeBinding, capacity scoring off and on, next to `berth replay` of the same log.

    python -m tests.e2e.compare.demo_story [--log examples/small.jsonl.gz] [--pods N] [--out out/demo-kube]

(`make demo-kube`). For each kube setting a fresh control plane replays the log (tests/e2e/compare/logreplay.py);
berth replays it under the same scoring with its extras off (LoadAwareScheduling disabled, the CapacityBuffers
left out of the log, so no placeholder pods), and as shipped (its default config and capacity priority off, on the
whole log). It writes each run's placements, the figures (figures.json) and a Markdown table (table.md), which
docs/volume-binding.md quotes.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml

from berth.core.api.meta.quantity import ceil_units, parse_nanos
from tests.e2e.compare.logreplay import LogReplay, Placement, cut, key, placements_jsonl, read_log
from tests.e2e.controlplane import REPO, find_assets, start_control_plane

API = "kubescheduler.config.k8s.io/v1"
GATE = "--feature-gates=StorageCapacityScoring=true"
KUBE_SHAPE = [{"utilization": 0, "score": 10}, {"utilization": 100, "score": 0}]  # kube's default with the gate
KEP_SHAPE = [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]  # KEP-1845's, berth's default
# kube's retry backoff (1 s doubling to 10 s) cut to 1 s: the replay waits for retries between events, and
# this changes only when a retry happens, not what it decides
BACKOFF = {"podInitialBackoffSeconds": 1, "podMaxBackoffSeconds": 1}
SMALL, GI, TI = 10 * 2**30, 2**30, 2**40
NO_BUFFERS = ("CapacityBuffer",)  # kinds left out of berth's like-for-like log
LOG = REPO / "examples" / "small.jsonl.gz"
CAPACITY_PRIORITY_OFF = REPO / "examples" / "capacity-priority-off.yaml"


@dataclass(frozen=True)
class Setting:
    """One kube-scheduler setting of VolumeBinding's scoring, and berth's config that scores the same way."""

    name: str
    title: str
    gate: bool
    kube_shape: list[dict[str, int]] | None  # VolumeBindingArgs.shape given to kube; None: kube's default
    berth_shape: list[dict[str, int]] | None  # None: berth's VolumeBinding does not score

    def kube_flags(self) -> tuple[str, ...]:
        return (GATE,) if self.gate else ()

    def kube_config(self) -> dict[str, Any]:
        profile: dict[str, Any] = {"schedulerName": "default-scheduler"}
        if self.kube_shape is not None:
            profile["pluginConfig"] = [{"name": "VolumeBinding", "args": {"shape": self.kube_shape}}]
        return {"apiVersion": API, "kind": "KubeSchedulerConfiguration", **BACKOFF, "profiles": [profile]}

    def berth_config(self) -> dict[str, Any]:
        """berth with kube's profile and this scoring: LoadAwareScheduling (berth's extra) disabled."""
        plugins: dict[str, Any] = {"multiPoint": {"disabled": [{"name": "LoadAwareScheduling"}]}}
        profile: dict[str, Any] = {"schedulerName": "default-scheduler", "plugins": plugins}
        if self.berth_shape is None:
            plugins["score"] = {"disabled": [{"name": "VolumeBinding"}]}
        else:
            profile["pluginConfig"] = [{"name": "VolumeBinding", "args": {"shape": self.berth_shape}}]
        return {"apiVersion": API, "kind": "KubeSchedulerConfiguration", "profiles": [profile]}


SETTINGS = (
    Setting("gate-off", "StorageCapacityScoring off (kube's default)", False, None, None),
    Setting("gate-on", "gate on, kube's default shape (0→10, 100→0)", True, None, KUBE_SHAPE),
    Setting("gate-on-kep", "gate on, KEP-1845's shape (0→0, 100→10)", True, KEP_SHAPE, KEP_SHAPE),
)
# berth as shipped, on the whole log (LoadAwareScheduling on, CapacityBuffers' placeholder pods): name -> config
AS_SHIPPED: dict[str, Path | None] = {"berth-default": None, "berth-capacity-priority-off": CAPACITY_PRIORITY_OFF}


# ---- figures ----------------------------------------------------------------------------------------------


def size(quantity: str) -> int:
    return ceil_units(parse_nanos(quantity, bounded=False))


@dataclass
class Sizes:
    """The claims' requests and the PVs' capacities of a log, in bytes."""

    claims: dict[str, int] = field(default_factory=dict)
    pvs: dict[str, int] = field(default_factory=dict)

    @classmethod
    def of(cls, events: Sequence[Mapping[str, Any]]) -> Sizes:
        out = cls()
        for event in events:
            obj = event["object"]
            if event["type"] != "ADDED":
                continue
            if obj.get("kind") == "PersistentVolumeClaim":
                out.claims[key(obj)] = size(obj["spec"]["resources"]["requests"]["storage"])
            elif obj.get("kind") == "PersistentVolume":
                out.pvs[obj["metadata"]["name"]] = size(obj["spec"]["capacity"]["storage"])
        return out

    def of_pvs(self, volumes: Mapping[str, str]) -> dict[str, int]:
        return {claim: self.pvs[pv] for claim, pv in volumes.items()}


@dataclass
class Outcome:
    """One pod's fate in one run: its node (None: not scheduled) and its claims' PVs."""

    node: str | None
    volumes: dict[str, str] = field(default_factory=dict)
    totals: dict[str, int] = field(default_factory=dict)  # berth: each feasible node's total score


@dataclass
class Figures:
    run: str
    pods: int  # pending pods decided
    scheduled: int
    pvs: int  # claims given a PV over the run
    requested: int  # bytes
    wasted: int  # Σ(PV capacity − request), bytes
    large_ti: tuple[int, int]  # (PVs ≥1 TiB taken by claims ≤10 GiB, PVs ≥1 TiB taken)
    large_100gi: tuple[int, int]  # the same for PVs ≥100 GiB


def figures(run: str, outcomes: Mapping[str, Outcome], sizes: Sizes) -> Figures:
    bindings = [(claim, pv) for o in outcomes.values() if o.node for claim, pv in o.volumes.items()]
    pairs = [(sizes.claims[claim], sizes.pvs[pv]) for claim, pv in bindings]

    def large(at_least: int) -> tuple[int, int]:
        taken = [request for request, capacity in pairs if capacity >= at_least]
        return sum(1 for request in taken if request <= SMALL), len(taken)

    return Figures(
        run,
        pods=len(outcomes),
        scheduled=sum(1 for o in outcomes.values() if o.node),
        pvs=len(pairs),
        requested=sum(r for r, _ in pairs),
        wasted=sum(c - r for r, c in pairs),
        large_ti=large(TI),
        large_100gi=large(100 * GI),
    )


@dataclass
class Agreement:
    """kube's placements against berth's, pod by pod (pods both saw)."""

    same: int = 0  # the same node
    tied: int = 0  # another node, but kube's was among berth's best (equal total score)
    other: int = 0  # a node berth scored lower
    one_side: int = 0  # scheduled by one of them only
    same_sizes: int = 0  # pods with claims, scheduled by both, whose claims got PVs of the same sizes
    with_claims: int = 0  # pods with claims scheduled by both (equal PVs on a node are a tie kube breaks at random)


def agreement(kube: Mapping[str, Outcome], berth: Mapping[str, Outcome], sizes: Sizes) -> Agreement:
    out = Agreement()
    for pod, k in kube.items():
        b = berth.get(pod)
        if b is None:
            continue
        if (k.node is None) != (b.node is None):
            out.one_side += 1
            continue
        if k.node is None:
            continue
        if k.node == b.node:
            out.same += 1
        elif b.totals and b.totals.get(k.node) == max(b.totals.values()):
            out.tied += 1
        else:
            out.other += 1
        if k.volumes:
            out.with_claims += 1
            out.same_sizes += sizes.of_pvs(k.volumes) == sizes.of_pvs(b.volumes)
    return out


# ---- the runs ---------------------------------------------------------------------------------------------


def kube_outcomes(placements: Sequence[Placement]) -> dict[str, Outcome]:
    return {p.pod: Outcome(p.node, dict(p.volumes)) for p in placements}


def berth_outcomes(decisions: Path) -> dict[str, Outcome]:
    """Each pod's last decision in a `berth replay --decisions --all-nodes` file."""
    out: dict[str, Outcome] = {}
    with decisions.open() as f:
        for line in f:
            d = json.loads(line)
            if d.get("kind") != "Decision" or not d.get("pod"):
                continue
            scheduled = d["status"] == "Scheduled"
            volumes = {b["claim"]: b["pv"] for b in d.get("volumeBindings") or [] if b.get("pv")}
            totals = {n: v["total"] for n, v in (d.get("nodes") or {}).items() if v.get("feasible")}
            out[d["pod"]] = Outcome(d["node"] if scheduled else None, volumes if scheduled else {}, totals)
    return out


def berth_replay(log: Path, config: Mapping[str, Any] | Path | None, out: Path, name: str) -> dict[str, Outcome]:
    """`berth replay` of the log under this config (a dict is written next to its decisions)."""
    args = [str(Path(sys.executable).parent / "berth"), "replay", str(log), "--all-nodes", "--no-progress"]
    if isinstance(config, Path):
        args += ["--config", str(config)]
    elif config is not None:
        path = out / f"{name}.yaml"
        path.write_text(yaml.safe_dump(dict(config), sort_keys=False))
        args += ["--config", str(path)]
    decisions = out / f"{name}.jsonl"
    args += ["--decisions", str(decisions), "--rejects", str(out / f"{name}.rejects.jsonl")]
    done = subprocess.run(args, capture_output=True, text=True, check=False, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"berth replay ({name}) exit {done.returncode}: {done.stderr.strip()[-2000:]}")
    return berth_outcomes(decisions)


def write_log(events: Sequence[Mapping[str, Any]], path: Path, drop: Sequence[str] = ()) -> Path:
    with path.open("w") as f:
        for event in events:
            if event["object"].get("kind") not in drop:
                f.write(json.dumps(event, separators=(",", ":")) + "\n")
    return path


def kube_replay(
    assets: Path, setting: Setting, events: list[dict[str, Any]], progress: Callable[[str], None]
) -> tuple[list[Placement], dict[str, Any]]:
    """The log on a fresh control plane running kube-scheduler with this setting; its placements and notes."""
    t0 = time.monotonic()
    plane = start_control_plane(assets, setting.kube_config(), setting.kube_flags())
    try:
        replay = LogReplay(plane, progress)
        placements = replay.run(events)
    except BaseException:
        plane.keep_workdir = True
        progress(plane.logs(20))
        raise
    finally:
        plane.stop()
    notes = {
        "seconds": round(time.monotonic() - t0, 1),
        "late": sum(1 for p in placements if p.late),
        "recycled PVs": replay.recycled,
        "skipped": dict(sorted(replay.skipped.items())),
    }
    return placements, notes


@dataclass
class Story:
    figures: list[Figures]
    agreements: dict[str, Agreement]  # setting name -> kube vs berth like-for-like
    notes: dict[str, Any]


def story(
    assets: Path,
    log: Path,
    out: Path,
    pods: int | None = None,
    settings: Sequence[Setting] = SETTINGS,
    progress: Callable[[str], None] = lambda _: None,
) -> Story:
    out.mkdir(parents=True, exist_ok=True)
    events = read_log(log)
    if pods is not None:
        events = cut(events, pods)
    whole = write_log(events, out / "log.jsonl")
    no_buffers = write_log(events, out / "log-no-buffers.jsonl", NO_BUFFERS)
    sizes = Sizes.of(events)
    notes: dict[str, Any] = {"log": str(log), "events": len(events), "cores": os.cpu_count(),
                             "load before": [round(x, 2) for x in os.getloadavg()]}  # fmt: skip
    rows: list[Figures] = []
    agreements: dict[str, Agreement] = {}
    for setting in settings:
        progress(f"kube-scheduler 1.36, {setting.title}")
        placements, notes[f"kube {setting.name}"] = kube_replay(assets, setting, events, progress)
        (out / f"kube-{setting.name}.jsonl").write_text("".join(line + "\n" for line in placements_jsonl(placements)))
        kube = kube_outcomes(placements)
        berth = berth_replay(no_buffers, setting.berth_config(), out, f"berth-{setting.name}")
        rows += [figures(f"kube {setting.name}", kube, sizes), figures(f"berth {setting.name}", berth, sizes)]
        agreements[setting.name] = agreement(kube, berth, sizes)
    for name, config in AS_SHIPPED.items():
        rows.append(figures(name, berth_replay(whole, config, out, name), sizes))
    notes["load after"] = [round(x, 2) for x in os.getloadavg()]
    result = Story(rows, agreements, notes)
    (out / "figures.json").write_text(json.dumps(asdict(result), indent=2) + "\n")
    (out / "table.md").write_text(table(result, settings))
    return result


# ---- the table --------------------------------------------------------------------------------------------


def tib(n: int) -> str:
    return f"{n / TI:.1f} TiB"


def table(result: Story, settings: Sequence[Setting] = SETTINGS) -> str:
    titles = {f"kube {s.name}": f"kube-scheduler 1.36, {s.title}" for s in settings}
    titles |= {f"berth {s.name}": "berth, the same scoring" for s in settings}
    titles |= {"berth-default": "berth as shipped (default config)",
               "berth-capacity-priority-off": "berth as shipped, capacity priority off"}  # fmt: skip
    lines = [
        "| run | pods scheduled | claims bound | requested | PV capacity wasted | PVs ≥1 TiB to claims ≤10 GiB "
        "| PVs ≥100 GiB to claims ≤10 GiB | kube vs berth: same node / tied / other / one side only / same PV sizes |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for f in result.figures:
        agree = ""
        if f.run.startswith("kube "):
            a = result.agreements[f.run.removeprefix("kube ")]
            agree = f"{a.same} / {a.tied} / {a.other} / {a.one_side} / {a.same_sizes} of {a.with_claims}"
        capacity = f.requested + f.wasted
        waste = f"{tib(f.wasted)} ({100 * f.wasted / capacity:.1f}%)" if capacity else "0"
        lines.append(
            f"| {titles.get(f.run, f.run)} | {f.scheduled} of {f.pods} | {f.pvs} | {tib(f.requested)} | {waste} "
            f"| {f.large_ti[0]} of {f.large_ti[1]} | {f.large_100gi[0]} of {f.large_100gi[1]} | {agree} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.e2e.compare.demo_story", description=__doc__.split("\n")[0])
    parser.add_argument("--log", type=Path, default=LOG, help="the event log (default: the demo's)")
    parser.add_argument("--pods", type=int, help="only the log up to its N-th pending pod")
    parser.add_argument("--out", type=Path, default=REPO / "out" / "demo-kube", help="where the runs go")
    parser.add_argument("--settings", default=",".join(s.name for s in SETTINGS), help="kube settings to run")
    parser.add_argument("-v", "--verbose", action="store_true", help="a line per pod kube placed")
    args = parser.parse_args(argv)
    chosen = [s for s in SETTINGS if s.name in args.settings.split(",")]
    if not chosen or not args.log.is_file():
        print(f"demo_story: no such log {args.log} or no known setting in {args.settings!r}", file=sys.stderr)
        return 2

    def say(line: str) -> None:
        if args.verbose or line.startswith("kube-scheduler"):
            print(line, flush=True)

    result = story(find_assets(), args.log, args.out, args.pods, chosen, say)
    print(table(result, chosen))
    print(json.dumps(result.notes, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
