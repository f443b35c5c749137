"""Run every benchmark: python -m bench [name ...]."""

from __future__ import annotations

import importlib
import os
import sys

BENCHES = [
    "volume_binding",
    "loadaware",
    "combined",
    "replay",
    "incremental",
    "compare",
    "steady",
    "streaming",
    "bootstrap",
    "interpod",
    "decide50k",
    "preemption",
    "memory",
    "snapshot_yaml",
]


def main() -> None:
    names = sys.argv[1:] or BENCHES
    cpus = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
    for name in names:
        if cpus is not None:
            os.sched_setaffinity(0, cpus)  # a benchmark may pin this process to one core: not the next one
        try:
            module = importlib.import_module(f"bench.{name}")
        except ModuleNotFoundError as e:
            print(f"== {name}: skipped ({e}) ==")
            continue
        module.run()
        print()


if __name__ == "__main__":
    main()
