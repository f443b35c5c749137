"""berth against the real kube-scheduler 1.36, side by side, on scheduler_perf-style workloads (issue 36).

  python -m bench kube                                   # every workload at 500 and 5,000 nodes, 1,000 pods
  python -m bench kube --nodes 500 --workloads basic,preemption
  python -m bench kube --nodes 20 --pods 20 --workloads basic --configs default   # a quick look

For each workload and size: kube-scheduler in a fresh control plane with kube's default profile, and
again with percentageOfNodesToScore 100 (bench/kube/kubeside.py); then `berth replay` and `berth
evaluate` of the same objects (bench/kube/berthside.py). Prints pods/s of each, berth's over kube's,
the CPU-seconds of each process, the 1-minute load average while kube ran, and how many pods each
placed. Needs the binaries (KUBEBUILDER_ASSETS, or ../shared/kube/unpack.sh); `make bench` runs this
only when KUBEBUILDER_ASSETS is set. Figures only, never assertions.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from tests.e2e.controlplane import MissingBinaries, find_assets

from bench.kube import berthside, kubeside
from bench.kube.workloads import WORKLOADS

NOISE = 0.05  # seconds: a difference of two berth runs smaller than this is not shown
CONFIGS = {"default": False, "all-nodes": True}  # name -> percentageOfNodesToScore 100


@dataclass
class Result:
    workload: str
    nodes: int
    pods: int
    kube: list[kubeside.KubeRun] = field(default_factory=list)
    berth: list[berthside.BerthRun] = field(default_factory=list)


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench kube", description=__doc__.splitlines()[0])
    p.add_argument("--nodes", default="500,5000", help="node counts, comma-separated (default 500,5000)")
    p.add_argument("--pods", type=int, default=1000, help="pods to schedule (default 1000)")
    p.add_argument("--workloads", default=",".join(WORKLOADS), help=f"comma-separated, of {', '.join(WORKLOADS)}")
    p.add_argument("--configs", default=",".join(CONFIGS), help="kube runs: default, all-nodes or both")
    p.add_argument("--timeout", type=float, default=900.0, help="seconds kube gets per run (default 900)")
    p.add_argument("--repeat", type=int, default=3, help="runs of each berth command, the median kept (default 3)")
    p.add_argument(
        "--settle", type=float, default=30.0, help="seconds at most to wait for idle CPUs before berth (default 30)"
    )
    p.add_argument("--keep", metavar="DIR", help="keep the logs, snapshots and berth's outputs here")
    args = p.parse_args(argv)
    for name in args.workloads.split(","):
        if name not in WORKLOADS:
            p.error(f"--workloads: unknown {name!r}; known: {', '.join(WORKLOADS)}")
    for name in args.configs.split(","):
        if name not in CONFIGS:
            p.error(f"--configs: unknown {name!r}; known: {', '.join(CONFIGS)}")
    return args


def run(argv: list[str] | None = None) -> list[Result]:
    args = parse(argv)
    if argv is None and not os.environ.get("KUBEBUILDER_ASSETS"):
        print("== kube: skipped (KUBEBUILDER_ASSETS is unset; make bench sets it from ../shared/kube/unpack.sh) ==")
        return []
    try:
        assets = find_assets()
    except MissingBinaries as err:
        print(f"== kube: skipped ({err}) ==")
        return []
    berthside.compile_berth()
    results = []
    for n in (int(x) for x in args.nodes.split(",")):
        for name in args.workloads.split(","):
            results.append(one(assets, name, n, args))
    return results


def one(assets: Path, name: str, n: int, args: argparse.Namespace) -> Result:
    workload = WORKLOADS[name](n, args.pods)
    result = Result(workload.name, n, workload.pods)
    print(f"== kube: {workload.name}, {n:,} nodes, {workload.pods:,} pods ==", flush=True)
    for config in args.configs.split(","):
        result.kube.append(kubeside.run_kube(assets, workload, CONFIGS[config], args.timeout))
        show_kube(result.kube[-1])
    folder = Path(args.keep or tempfile.mkdtemp(prefix="berth-bench-kube-")) / f"{name}-{n}"
    folder.mkdir(parents=True, exist_ok=True)
    first = result.kube[0]
    waited = berthside.quiet(limit=args.settle)
    print(f"  (berth after {waited:.0f} s for the CPUs to be idle; each command run {args.repeat}x, the median)")
    for side in (berthside.replay, berthside.evaluate):
        result.berth.append(side(folder, first.setup, first.created, args.repeat))
        show_berth(result.berth[-1])
    ratios(result)
    if not args.keep:
        shutil.rmtree(folder.parent, ignore_errors=True)
    print(flush=True)
    return result


def rate(pods: int, seconds: float) -> str:
    return f"{pods / seconds:,.1f} pods/s" if seconds > 0 else "-"


def show_kube(r: kubeside.KubeRun) -> None:
    cpu = ", ".join(f"{k.removeprefix('kube-')} {v:.2f}" for k, v in r.cpu.items())
    out = f"{r.bound} bound, {r.unschedulable} unschedulable" + (f", {r.victims} victims" if r.victims else "")
    late = (" TIMED OUT" if r.timed_out else "") + (f" (watch resumed {r.rewatches}x)" if r.rewatches else "")
    late += f" (creates retried {r.retried}x)" if r.retried else ""
    print(
        f"  {r.label:<36} {r.wall:8.2f} s  {rate(r.settled, r.wall):>16}  (created in {r.created_in:.2f} s)"
        f"  CPU s: {cpu}  load {r.load[0]:.1f}->{r.load[1]:.1f}  {out}{late}",
        flush=True,
    )


def show_berth(r: berthside.BerthRun) -> None:
    out = f"{r.scheduled} scheduled" + (f", {r.nominated} nominated" if r.nominated else "")
    out += f", {r.victims} victims" if r.victims else ""
    print(
        f"  {r.label:<36} {r.wall:8.2f} s  {rate(r.pods, r.wall):>16}  CPU s: berth {r.cpu:.2f}"
        f"  (without the pods: {r.base_wall:.2f} s, CPU {r.base_cpu:.2f}; the pods alone:"
        f" {alone(r)})  {out}  load {os.getloadavg()[0]:.1f}",
        flush=True,
    )


def alone(r: berthside.BerthRun) -> str:
    if r.marginal < NOISE:
        return "within the noise"
    return f"{r.marginal:.2f} s, {rate(r.pods, r.marginal)}"


def ratios(result: Result) -> None:
    for b in result.berth:
        parts = []
        for k in result.kube:
            if k.wall > 0 and k.settled:
                per = k.wall / k.settled * b.pods  # kube's seconds for berth's number of pods
                pods_alone = f" ({per / b.marginal:.1f}x the pods alone)" if b.marginal >= NOISE else ""
                cpu = sum(k.cpu.values()) / b.cpu if b.cpu > 0 else 0.0
                parts.append(f"{per / b.wall:.1f}x{pods_alone}, CPU-seconds kube/berth {cpu:.1f}x, over {k.label}")
        print(f"  {b.label} pods/s: " + "; ".join(parts))
