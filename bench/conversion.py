"""Conversion alone: every object in the replay benchmark log through the converter table.

Reads the log (generated once, see bench/replay.py), times only the raw dict -> model step,
the way the applier does it (`kind_key` then `berth.core.kinds.CONVERTERS`), and prints
microseconds per object for each kind and the total. Run: `python -m bench conversion`.

`python -m bench.conversion --digest OUT` also writes one line per event (a hash of the
converted object, or the error message) so that two versions can be compared object by object.
"""

from __future__ import annotations

import hashlib
import sys
import time
from collections import defaultdict
from typing import Any

import msgspec

from berth.adapters.eventlog import read_events
from berth.core.convert import kind_key
from berth.core.errors import InputError
from berth.core.kinds import CONVERTERS

_encoder = msgspec.json.Encoder()  # insertion order: dict order must not change either


def measure(path: str, digest_path: str | None = None, batch: int = 1000) -> dict[str, tuple[int, float]]:
    """kind -> (objects, CPU seconds spent converting them).

    Objects are converted in per-kind batches timed with this thread's CPU clock, so that other
    processes on the machine and the per-call cost of the clock barely show in the figures.
    """
    count: dict[str, int] = defaultdict(int)
    spent: dict[str, float] = defaultdict(float)
    pending: dict[str, list[tuple[int, dict[str, Any]]]] = defaultdict(list)
    digest = open(digest_path, "w") if digest_path else None  # noqa: SIM115

    def flush(kind: str) -> None:
        items = pending.pop(kind, [])
        results: list[tuple[Any, str | None]] = []
        t = time.thread_time()
        for _, raw in items:
            try:
                fn = CONVERTERS.get(kind_key(raw))
                results.append((None if fn is None else fn(raw), None))
            except InputError as e:
                results.append((None, e.line()))
        spent[kind] += time.thread_time() - t
        count[kind] += len(items)
        if digest is not None:
            for (position, _), (obj, error) in zip(items, results, strict=True):
                if error is not None:
                    digest.write(f"{position} error {error}\n")
                else:
                    h = hashlib.blake2b(_encoder.encode(obj), digest_size=12).hexdigest()
                    digest.write(f"{position} {type(obj).__name__} {h}\n")

    try:
        for ev in read_events(path):
            if ev.type == "BOOKMARK":
                continue
            kind = str(ev.object.get("kind"))
            pending[kind].append((ev.position, ev.object))
            if len(pending[kind]) >= batch:
                flush(kind)
        for kind in list(pending):
            flush(kind)
    finally:
        if digest is not None:
            digest.close()
    return {k: (count[k], spent[k]) for k in count}


def report(results: dict[str, tuple[int, float]]) -> None:
    total_n = sum(n for n, _ in results.values())
    total_s = sum(s for _, s in results.values())
    print(f"{'kind':<24}{'objects':>10}{'us/object':>12}{'cpu s':>10}")
    for kind, (n, s) in sorted(results.items(), key=lambda kv: -kv[1][1]):
        print(f"{kind:<24}{n:>10,}{s / n * 1e6:>12.1f}{s:>10.2f}")
    print(f"{'total':<24}{total_n:>10,}{total_s / total_n * 1e6:>12.1f}{total_s:>10.2f}")


def run() -> None:
    from bench.replay import log_path

    # Not pinned: the figures are this thread's CPU time, and a shared core only adds noise.
    print("== conversion, raw objects to model objects (CPU time of the converting thread) ==")
    report(measure(log_path()))


if __name__ == "__main__":
    args = sys.argv[1:]
    if args[:1] == ["--digest"] and len(args) == 2:
        from bench.replay import log_path

        report(measure(log_path(), args[1]))
    else:
        run()
