"""Shared benchmark helpers: one core, percentiles, a timer."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager


def one_core() -> str:
    try:
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
        return f"pinned to cpu {min(os.sched_getaffinity(0))}"
    except (AttributeError, OSError):
        return "not pinned"


def percentile(samples: list[float], p: float) -> float:
    s = sorted(samples)
    return s[min(len(s) - 1, round(p / 100 * (len(s) - 1)))]


def repeat(fn: Callable[[], object], times: int, warmup: int = 3) -> list[float]:
    for _ in range(warmup):
        fn()
    out = []
    for _ in range(times):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


@contextmanager
def timed(label: str, results: dict[str, float]) -> Iterator[None]:
    t = time.perf_counter()
    yield
    results[label] = time.perf_counter() - t


def spread(wall: list[float], cpu: list[float]) -> str:
    """p50 and p99 by the wall clock, then by this thread's CPU time (which other processes on a
    shared machine do not inflate)."""
    return (
        f"p50 {ms(percentile(wall, 50))}, p99 {ms(percentile(wall, 99))}"
        f" (cpu p50 {ms(percentile(cpu, 50))}, p99 {ms(percentile(cpu, 99))})"
    )


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f} ms"
