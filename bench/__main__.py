"""Run every benchmark: python -m bench [name ...] [--option ...]; options after the names go to a
benchmark whose run() takes them (python -m bench kube --nodes 500)."""

from __future__ import annotations

import importlib
import inspect
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
    "sizing",
    "snapshot_yaml",
    "watcher",
    "kube",  # only when KUBEBUILDER_ASSETS is set (make bench sets it from ../shared/kube/unpack.sh)
]


def main() -> None:
    args = sys.argv[1:]
    cut = next((i for i, a in enumerate(args) if a.startswith("-")), len(args))
    named, options = args[:cut], args[cut:]
    names = named or BENCHES
    cpus = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
    for name in names:
        if cpus is not None:
            os.sched_setaffinity(0, cpus)  # a benchmark may pin this process to one core: not the next one
        try:
            module = importlib.import_module(f"bench.{name}")
        except ModuleNotFoundError as e:
            print(f"== {name}: skipped ({e}) ==")
            continue
        if named and inspect.signature(module.run).parameters:
            module.run(options)  # named on the command line: it runs, with the options given
        else:
            module.run()
        print()


if __name__ == "__main__":
    main()
