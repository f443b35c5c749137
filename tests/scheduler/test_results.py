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


class _Table:
    """What rejected_groups reads of a NodeTable: the slots and their names in name order."""

    def __init__(self, names: list[str]) -> None:
        self.order = sorted(range(len(names)), key=lambda s: names[s])
        self.names = names

    def by_name(self) -> tuple[np.ndarray, list[str]]:
        return np.array(self.order, dtype=np.int64), [self.names[s] for s in self.order]


def grouped(failures: list[Failure], filtered: np.ndarray, names: list[str], shown: int) -> list[tuple[object, ...]]:
    """The plain oracle: each rejected node's reasons by the per-slot walk, grouped in name order."""
    oracle = results._rejections(failures)
    groups: dict[tuple[str, ...], list[str]] = {}
    for s in sorted(range(len(names)), key=lambda s: names[s]):
        if not filtered[s]:
            groups.setdefault(tuple(oracle(s).reasons), []).append(names[s])
    return sorted((why, len(got), got[:shown]) for why, got in groups.items())


@settings(max_examples=300, deadline=None)
@given(cases(), st.integers(1, 6), st.randoms(use_true_random=False))
def test_rejected_groups_are_the_rejected_nodes_by_reasons(
    case: tuple[list[Failure], np.ndarray], shown: int, rnd: object
) -> None:
    failures, slots = case
    n = len(failures[0].mask) if failures else 40
    filtered = np.ones(n, dtype=bool)
    filtered[slots[slots < n]] = False  # the drawn slots rejected, whatever their failures
    for f in failures:
        filtered &= ~f.mask
    names = [f"n-{i:02}" for i in range(n)]
    rnd.shuffle(names)  # type: ignore[attr-defined]
    got = results.rejected_groups(_Table(names), failures, filtered, shown)  # type: ignore[arg-type]
    assert sorted(got) == grouped(failures, filtered, names, shown)


def test_rejected_groups_past_63_failures() -> None:
    rng = np.random.default_rng(36)
    failures = [
        Failure(rng.random(50) < 0.3, REASONS[i % len(REASONS)] + f" {i % 3}") for i in range(results.CODE_BITS + 2)
    ]
    filtered = ~np.logical_or.reduce([f.mask for f in failures])
    names = [f"n{i:02}" for i in range(50)][::-1]
    got = results.rejected_groups(_Table(names), failures, filtered, 3)  # type: ignore[arg-type]
    assert sorted(got) == grouped(failures, filtered, names, 3) and len(got) > 1
