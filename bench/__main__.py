"""Run every benchmark: python -m bench [name ...]."""

from __future__ import annotations

import importlib
import sys

BENCHES = ["volume_binding", "loadaware", "combined", "replay", "streaming"]


def main() -> None:
    names = sys.argv[1:] or BENCHES
    for name in names:
        try:
            module = importlib.import_module(f"bench.{name}")
        except ModuleNotFoundError as e:
            print(f"== {name}: skipped ({e}) ==")
            continue
        module.run()
        print()


if __name__ == "__main__":
    main()
