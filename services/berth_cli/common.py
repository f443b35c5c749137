"""Helpers shared by subcommands: the clock, config and snapshot loading, output."""

from __future__ import annotations

import argparse
import gc
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec

from berth.adapters.files.snapshot import load_snapshot, parse_documents, read_text
from berth.core.api.meta.normalise import TimeRangeError, parse_time
from berth.core.cache.snapshot import build_state
from berth.core.cache.state import ClusterState
from berth.core.config.kubeschedulerconfig import SchedulerConfig, parse_config
from berth.core.errors import InputError


def rfc3339(value: str) -> datetime:
    try:
        return parse_time(value)
    except TimeRangeError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid RFC 3339 time {value!r}") from None


SPEEDS = (1e-3, 1e6)  # --speed: a thousand times slower than the log to a million times faster


def speed(text: str) -> float:
    """argparse type: a replay speed within SPEEDS (a tiny one would sleep for ever)."""
    low, high = SPEEDS
    value = positive_float(text)
    if not low <= value <= high:
        raise argparse.ArgumentTypeError(f"want a number from {low:g} to {high:g}, got {text!r}")
    return value


def positive_float(text: str) -> float:
    """argparse type: a number above zero."""
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if value <= 0:
        raise argparse.ArgumentTypeError(f"want a positive number, got {text!r}")
    return value


def non_negative_float(text: str) -> float:
    """argparse type: a number, zero or more."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"want a number of seconds, zero or more, got {text!r}")
    return value


def non_negative_int(text: str) -> int:
    """argparse type: a whole number, zero or more."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"want a whole number, zero or more, got {text!r}")
    return value


def check_file_target(path: str) -> None:
    """Fail before any work when a file cannot be written at path: it is a directory, or a file
    stands where a parent directory has to be."""
    target = Path(path)
    if target.is_dir():
        raise InputError(path, "", "is a directory, not a file")
    check_dir_target(str(target.parent))


def check_dir_target(path: str) -> None:
    """Fail before any work when a directory cannot be made at path (a file is in the way)."""
    for p in (Path(path), *Path(path).parents):
        if p.exists():
            if not p.is_dir():
                raise InputError(path, "", f"{p} is a file, not a directory")
            return


def now_or(value: datetime | None) -> datetime:
    return value if value is not None else datetime.now(UTC)


STRICT_HELP = "plugins berth does not implement (and their args) are errors, not warnings"


def load_config(path: str | None, strict: bool = False, warn: bool = True) -> SchedulerConfig:
    """The config at path (None: the defaults); its warnings, one line each on stderr."""
    if path is None:
        return parse_config(None)
    docs = parse_documents(read_text(path), path)
    if len(docs) != 1:
        raise InputError(path, "", f"expected one KubeSchedulerConfiguration document, found {len(docs)}")
    config = parse_config(docs[0], strict=strict)
    for w in config.warnings if warn else ():
        print(f"warning: {path}: {w}", file=sys.stderr)
    return config


def load_state(path: str, state: ClusterState | None = None) -> ClusterState:
    source = "<stdin>" if path == "-" else path
    try:
        state, warnings = build_state(load_snapshot(path), state)
    except InputError as e:
        if e.obj == source:
            raise
        raise InputError(source, e.obj, f"{e.field}: {e.problem}" if e.field else e.problem) from None
    for w in warnings:
        print(f"warning: {source}: {w}", file=sys.stderr)
    gc.collect()
    gc.freeze()  # the snapshot lives for the whole run: keep it out of every GC pass
    return state


def hint(command: str, text: str) -> None:
    """One line on stderr: what the user most likely meant."""
    print(f"berth {command}: hint: {text}", file=sys.stderr)


def print_json(value: Any) -> None:
    sys.stdout.write(msgspec.json.format(msgspec.json.encode(value), indent=2).decode())
    sys.stdout.write("\n")


def config_label(path: str | None) -> str:
    """A run's name: its config file's stem (the default config: `default`)."""
    return Path(path).stem if path else "default"


def placement_diff(labels: list[str], runs: list[dict[str, tuple[str, list[str]] | None]]) -> list[dict[str, Any]]:
    """Pods that any run placed differently from the first (by each pod's last decision), in pod
    order, with every run's placement."""
    out = []
    for pod in sorted(set().union(*runs)):
        placed = [r.get(pod) for r in runs]
        if any(p != placed[0] for p in placed[1:]):
            rows = [
                {"label": label, "node": p[0] if p else None, "pvs": p[1] if p else []}
                for label, p in zip(labels, placed, strict=True)
            ]
            out.append({"pod": pod, "runs": rows})
    return out
