"""The size check of a snapshot's objects (berth.adapters.files.snapshot): the bound from an object's
compact JSON decides exactly as the walk does."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from berth.adapters.files.snapshot import json_size, within

SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=20),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=12) | st.dictionaries(st.text(max_size=8), inner, max_size=8),
    max_leaves=60,
)


@settings(max_examples=400, deadline=None)
@given(obj=st.dictionaries(st.text(max_size=8), VALUES, max_size=6), limit=st.integers(0, 4000))
def test_within_agrees_with_the_walk(obj: dict[str, Any], limit: int) -> None:
    assert within(obj, limit, aliases=False) == (json_size(obj, limit) <= limit)


@settings(max_examples=100, deadline=None)
@given(n=st.integers(1, 300), digit=st.integers(0, 9))
def test_within_agrees_on_lists_of_one_digit_numbers(n: int, digit: int) -> None:
    # the walk's largest count per byte of JSON: 8 for a one-digit number and its comma
    obj = {"a": [digit] * n}
    for limit in range(8 * n - 8, 8 * n + 40):
        assert within(obj, limit, aliases=False) == (json_size(obj, limit) <= limit)
