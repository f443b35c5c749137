"""Rejected nodes' results built from each slot's failures as the bits of one number, against the
per-slot walk they replace (kept as the fallback past 63 failures): the same reasons, in the same
order, and one shared result per set of reasons."""

from __future__ import annotations

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

from berth.core.framework.status import Failure
from berth.core.scheduler import results

REASONS = ["Insufficient cpu", "Too many pods", "node(s) had untolerated taint(s)", "node(s) were unschedulable"]


@st.composite
def cases(draw: st.DrawFn) -> tuple[list[Failure], np.ndarray]:
    n = draw(st.integers(1, 40))
    count = draw(st.integers(0, 8))
    failures = [
        Failure(np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n))), draw(st.sampled_from(REASONS)))
        for _ in range(count)
    ]
    slots = draw(st.lists(st.integers(0, n - 1), unique=True))
    return failures, np.array(slots, dtype=np.int64)


def shared_alike(found: list[results.NodeResult]) -> list[list[bool]]:
    return [[a is b for b in found] for a in found]


def check(failures: list[Failure], slots: np.ndarray) -> None:
    oracle = results._rejections(failures)
    expected = [oracle(s) for s in slots.tolist()]
    got = results._rejected_at(failures, slots)
    assert got == expected
    assert shared_alike(got) == shared_alike(expected)
    assert all(not r.feasible for r in got)


@settings(max_examples=300, deadline=None)
@given(cases())
@example(([], np.array([0, 1])))
@example(
    (
        [Failure(np.array([True, False]), "Too many pods"), Failure(np.array([True, True]), "Insufficient cpu")],
        np.array([1, 0]),
    )
)
def test_rejected_results_by_codes_are_the_per_slot_walk(case: tuple[list[Failure], np.ndarray]) -> None:
    check(*case)


def test_past_63_failures_each_slot_is_walked() -> None:
    rng = np.random.default_rng(36)
    failures = [
        Failure(rng.random(50) < 0.3, REASONS[i % len(REASONS)] + f" {i}") for i in range(results.CODE_BITS + 2)
    ]
    check(failures, np.arange(50, dtype=np.int64))
    check(failures[: results.CODE_BITS], np.arange(50, dtype=np.int64))  # the last one the codes hold
