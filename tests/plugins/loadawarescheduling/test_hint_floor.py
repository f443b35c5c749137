"""Properties of the NodeMetric queueing hint's shortcut: a node's test for one estimate in Python
floats is its numpy test, and rows whose least estimate fails all fail, so the hint over a list of
pods is the numpy test row by row (the plain scan)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from berth.core.plugins.loadawarescheduling import BOUND, Judge

R = 2
# values around the thresholds, and large ones (near and past 2**52, where floats round, and past
# BOUND, where the shortcut steps aside)
value = st.one_of(
    st.integers(0, 400),
    st.integers(0, 10**13),
    st.integers(2**52 - 8, 2**52 + 8),
    st.integers(BOUND - 4, BOUND + 4),
)
node_st = st.tuples(
    st.lists(st.one_of(value, st.integers(-(10**6), 0)), min_size=R, max_size=R),  # existing usage
    st.lists(
        st.one_of(st.integers(1, 400), st.integers(1, 10**13), st.integers(-5, -1)), min_size=R, max_size=R
    ),  # allocatable (0 is read as 1)
    st.lists(st.one_of(st.integers(0, 100).map(lambda t: t + 0.5), st.just(float("inf"))), min_size=R, max_size=R),
)
rows_st = st.lists(st.lists(value, min_size=R, max_size=R), min_size=1, max_size=12)


def _judge(node: tuple[list[int], list[int], list[float]]) -> Judge:
    ex, alloc, half = node
    return Judge(np.array(ex, dtype=np.int64), np.array(alloc, dtype=np.float64), np.array(half))


def _plain(judge: Judge, rows: list[list[int]]) -> list[bool]:
    """The numpy test, one row at a time."""
    return [bool(judge(np.array([r], dtype=np.int64))[0]) for r in rows]


@settings(max_examples=500, deadline=None)
@given(node=node_st, rows=rows_st)
def test_the_python_test_is_the_numpy_test(
    node: tuple[list[int], list[int], list[float]], rows: list[list[int]]
) -> None:
    judge = _judge(node)
    assert [judge.passes(r) for r in rows] == _plain(judge, rows)


@settings(max_examples=500, deadline=None)
@given(node=node_st, rows=rows_st)
def test_rows_whose_least_estimate_fails_all_fail(
    node: tuple[list[int], list[int], list[float]], rows: list[list[int]]
) -> None:
    judge = _judge(node)
    est = np.array(rows, dtype=np.int64)
    if abs(int(est.min())) >= BOUND or abs(int(est.max())) >= BOUND:
        return  # the hint keeps no floor then
    if judge.fails_all(est.min(axis=0).tolist()):
        assert not any(_plain(judge, rows))
    assert judge(est).tolist() == _plain(judge, rows)


@pytest.mark.parametrize(
    ("est", "want"),
    [([100, 0], True), ([101, 0], False), ([0, 10**9], True), ([2**53 + 1, 0], False)],
)
def test_at_the_threshold(est: list[int], want: bool) -> None:
    """101 / 200 * 100 is 50.5, the threshold 50 plus a half: not below it, so it fails."""
    judge = _judge(([0, 0], [200, 200], [50.5, float("inf")]))
    assert judge.passes(est) == want == _plain(judge, [est])[0]
