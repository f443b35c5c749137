"""Decoding alone: every line of the replay benchmark log through the typed edge.

Reads the log (generated once, see bench/replay.py) as bytes and times only `parse_event`: the line
straight to its kind's wire Struct and then its model, the way the log reader and the workers do it.
Prints microseconds per event for each kind and the total. Run: `python -m bench conversion`.

`python -m bench.conversion --digest OUT` also writes one line per event (a hash of the model, or
the error message) so that two versions can be compared object by object.

`python -m bench.conversion --apply` times decoding and applying together: every line into a
scorer engine's state (no decisions), with the worker loop's garbage-collection policy.
"""

from __future__ import annotations

import hashlib
import sys
import time
from collections import defaultdict

import msgspec

from berth.adapters.files.eventlog import open_log
from berth.core.api.core.model import Pod
from berth.core.api.watch import parse_event
from berth.core.errors import InputError

_encoder = msgspec.json.Encoder()  # insertion order: dict order must not change either


def _hashed(obj: object) -> bytes:
    """The model's encoding without Pod.key (set from namespace and name when the pod is made), so
    that digests compare with those of versions where the key was not a field."""
    if isinstance(obj, Pod):
        return _encoder.encode({f: getattr(obj, f) for f in obj.__struct_fields__ if f != "key"})
    return _encoder.encode(obj)


def measure(path: str, digest_path: str | None = None, batch: int = 1000) -> dict[str, tuple[int, float]]:
    """kind -> (events, CPU seconds spent decoding them).

    Lines are decoded in per-kind batches timed with this thread's CPU clock, so that other
    processes on the machine and the per-call cost of the clock barely show in the figures.
    """
    count: dict[str, int] = defaultdict(int)
    spent: dict[str, float] = defaultdict(float)
    pending: dict[str, list[tuple[int, bytes]]] = defaultdict(list)
    digest = open(digest_path, "w") if digest_path else None  # noqa: SIM115

    def flush(kind: str) -> None:
        items = pending.pop(kind, [])
        results: list[tuple[object, str | None]] = []
        t = time.thread_time()
        for number, line in items:
            try:
                results.append((parse_event(line, number, wire=False).model, None))
            except InputError as e:
                results.append((None, e.line()))
        spent[kind] += time.thread_time() - t
        count[kind] += len(items)
        if digest is not None:
            for (position, _), (obj, error) in zip(items, results, strict=True):
                if error is not None:
                    digest.write(f"{position} error {error}\n")
                else:
                    h = hashlib.blake2b(_hashed(obj), digest_size=12).hexdigest()
                    digest.write(f"{position} {type(obj).__name__} {h}\n")

    try:
        with open_log(path) as f:
            for number, line in enumerate(f, start=1):
                if not line.strip():
                    continue
                kind = _kind_of(line)
                pending[kind].append((number, line))
                if len(pending[kind]) >= batch:
                    flush(kind)
        for kind in list(pending):
            flush(kind)
    finally:
        if digest is not None:
            digest.close()
    return {k: (count[k], spent[k]) for k in count}


class _Kind(msgspec.Struct):
    kind: str = ""


class _KindLine(msgspec.Struct):
    type: str | None = None
    object: _Kind | None = None
    resource: _Kind | None = None  # the simulator's lines


_kind_line = msgspec.json.Decoder(_KindLine)


def _kind_of(line: bytes) -> str:
    """The object's kind, to group the figures (not timed). Read on its own, not through
    `parse_event`: a first decode of every line would warm the caches the timed one reads."""
    try:
        head = _kind_line.decode(line)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return "(unreadable)"
    if head.type == "BOOKMARK":
        return "BOOKMARK"
    obj = head.object or head.resource
    return obj.kind if obj is not None and obj.kind else "(no kind)"


def report(results: dict[str, tuple[int, float]]) -> None:
    total_n = sum(n for n, _ in results.values())
    total_s = sum(s for _, s in results.values())
    print(f"{'kind':<24}{'events':>10}{'us/event':>12}{'cpu s':>10}")
    for kind, (n, s) in sorted(results.items(), key=lambda kv: -kv[1][1]):
        print(f"{kind:<24}{n:>10,}{s / n * 1e6:>12.1f}{s:>10.2f}")
    print(f"{'total':<24}{total_n:>10,}{total_s / total_n * 1e6:>12.1f}{total_s:>10.2f}")


def apply_all(path: str) -> tuple[int, float]:
    """(events, CPU seconds) to decode every line and apply it to a scorer engine's state, in order."""
    import gc

    from berth.adapters.runtime.collector import Collector
    from berth.core.config.kubeschedulerconfig import parse_config
    from berth.core.pipeline.scorer import ScorerEngine

    engine = ScorerEngine(parse_config(None))
    with open_log(path) as f:
        lines = [(n, line) for n, line in enumerate(f, start=1) if line.strip()]
    apply = engine.applier.apply
    collector = Collector()  # as the worker loop does: what survives is left out of collections
    gc.freeze()
    t = time.thread_time()
    for number, line in lines:
        apply(parse_event(line, number, wire=False))
        collector.handled(1)
    spent = time.thread_time() - t
    collector.close()
    return len(lines), spent


def run() -> None:
    from bench.replay import log_path

    # Not pinned: the figures are this thread's CPU time, and a shared core only adds noise.
    print("== decoding, event lines to model objects (CPU time of the decoding thread) ==")
    report(measure(log_path()))


if __name__ == "__main__":
    args = sys.argv[1:]
    if args == ["--apply"]:
        from bench.replay import log_path

        n, s = apply_all(log_path())
        print(f"decode + apply to state: {n:,} events, {s:.2f} CPU s = {s / n * 1e6:.1f} us per event")
    elif args[:1] == ["--digest"] and len(args) == 2:
        from bench.replay import log_path

        report(measure(log_path(), args[1]))
    else:
        run()
