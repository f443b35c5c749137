"""Issue 18 benchmark: a 3-way `berth replay --compare` against one replay of the bench log, each run
as users run it (a `berth replay` process of its own), one after the other. Prints the wall clock and
the CPU time of each (every process of the run), the CPUs and the load average, and what the compare
would take on idle CPUs, estimated from CPU time: on a shared machine the wall clock is the others'.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.replay import TOP_NODES, log_path

EXAMPLES = Path(__file__).parent.parent / "examples"
CONFIGS = [str(EXAMPLES / "most-free.yaml"), str(EXAMPLES / "capacity-priority-off.yaml")]
# what a compare does before its replays fork: start, import berth, read and decode the log
READ = "import sys; from berth_cli.replay import events; sum(1 for _ in events(sys.argv[1:], [], False, None, []))"


def run() -> None:
    cpus = len(os.sched_getaffinity(0))
    print(f"== compare: 3 configs against one replay ({cpus} CPUs, load average {_load()}) ==")
    path = log_path()
    with tempfile.TemporaryDirectory() as tmp:
        replay = ["-m", "berth_cli.main", "replay", path, "--top-nodes", str(TOP_NODES), "--no-progress"]
        one = _measured([*replay, "--summary", f"{tmp}/one.json"])
        three = _measured([*replay, "--summary", f"{tmp}/three.json", "--compare", *CONFIGS])
    serial = _measured(["-c", READ, path])
    print(f"one replay:      {one[0]:7.1f} s wall, {one[1]:7.1f} s CPU")
    print(f"3-way --compare: {three[0]:7.1f} s wall, {three[1]:7.1f} s CPU ({three[1] / one[1]:.2f}x one replay's)")
    print(f"  wall clock {three[0] / one[0]:.2f}x one replay's (target < 2x); load average now {_load()}")
    # On idle CPUs a replay takes its CPU time. The compare reads the log in one process, then its
    # three replays (at once, by default) share the CPUs.
    parallel = max(three[1] - serial[1], 0.0)
    idle = serial[1] + parallel / min(cpus, 3)
    print(
        f"  on {cpus} idle CPUs, from CPU time: {idle:.1f} s = {idle / one[1]:.2f}x one replay "
        f"(start and read the log {serial[1]:.1f} s, then {parallel:.1f} s over {min(cpus, 3)} CPUs)"
    )


def _measured(argv: list[str]) -> tuple[float, float]:
    """Wall clock and CPU time (user + system, every process it ran) of one Python command."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run([sys.executable, *argv], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def _load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


if __name__ == "__main__":
    run()
