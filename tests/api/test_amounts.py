"""Normalised amounts: every shortcut in `berth.core.api.meta.normalise` gives the exact parser's answer."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from berth.core.api.meta import normalise as amounts
from berth.core.api.meta.normalise import Bad, moment, parse_time, plain, resource_list
from berth.core.api.meta.quantity import ceil_milli, ceil_units, parse_text

SUFFIXES = ["", "m", "Ki", "Mi", "Gi", "Ei", "k", "M", "G", "E", "n", "u", "e3", ".5", "i", "K"]
DIGITS = "0123456789\u0663\u096f\u00b2"  # other scripts' decimal digits (int() and \d read them), a superscript

texts = st.one_of(
    st.builds(str.__add__, st.text(alphabet=DIGITS, max_size=18), st.sampled_from(["m", "Ki"])),  # in line
    st.builds(str.__add__, st.text(alphabet=DIGITS, max_size=18), st.sampled_from(SUFFIXES)),
    st.builds(
        str.__add__, st.sampled_from(["", "-", "+", "."]), st.text(alphabet=DIGITS, min_size=1, max_size=16)
    ).flatmap(lambda d: st.sampled_from(SUFFIXES).map(lambda s: d + s)),
    st.text(alphabet="0123456789.+-eEKkMmiGn ", max_size=14),
)


def _exact(name: str, q: str) -> int | str:
    """The regular-expression parser's answer, rounded up as kube does, or its error message."""
    try:
        n = parse_text(q)
    except ValueError as e:
        return str(e)
    return ceil_milli(n) if name == "cpu" else ceil_units(n)


@settings(max_examples=500)
@given(st.sampled_from(["cpu", "memory", "nvidia.com/gpu"]), texts, st.booleans())
def test_resource_list_is_the_exact_parser(name: str, q: str, warm: bool) -> None:
    """The in-line shapes (millicores, kibibytes), the cached ones and the rest, cold or cached."""
    amounts._MILLI.clear()
    amounts._UNITS.clear()
    want = _exact(name, q)
    for _ in range(2 if warm else 1):  # a second pass answers from the cache where one was kept
        try:
            got: int | str = resource_list({name: q})[name]
        except Bad as e:
            assert e.path == name
            got = e.problem
        assert got == want


@settings(max_examples=500)
@given(st.lists(st.one_of(texts, st.integers(), st.just("1\x002")), max_size=6))
def test_plain_amounts_are_those_the_exact_parser_takes(values: list[object]) -> None:
    """What `plain` passes, the exact parser takes (its answer is not asked for then: only that it has one)."""
    if plain(values):
        assert values and all(isinstance(_exact("cpu", q), int) for q in values)  # type: ignore[arg-type]
    if any(not isinstance(q, str) or not isinstance(_exact("memory", q), int) for q in values):
        assert not plain(values)


@pytest.mark.parametrize(
    ("values", "want"),
    [
        (["5762m", "44904318Ki", "7", "0"], True),
        (["999999999999", "999999999999Ki", "999999999999m"], True),
        (["1000000000000"], False),  # 13 digits: left to the exact parser
        (["1.5"], False),
        (["47Gi"], False),
        (["1\x002"], False),  # two plain amounts once joined: still one value
        ([5], False),
        (["\u0663"], False),
        ([], False),
    ],
)
def test_plain_examples(values: list[object], want: bool) -> None:
    assert plain(values) is want


@pytest.mark.parametrize(
    ("name", "q", "want"),
    [
        ("cpu", "2516m", 2516),
        ("cpu", "1", 1000),
        ("cpu", "0.5", 500),
        ("cpu", "1n", 1),
        ("memory", "18073052Ki", 18073052 * 1024),
        ("memory", "1500m", 2),
        ("memory", "9007199254740Ki", 9007199254740 * 1024),  # the last KiB under kube's int64 milli-value
        ("memory", 3, 3),
        ("memory", 2.5, 3),
    ],
)
def test_resource_list_examples(name: str, q: str | int | float, want: int) -> None:
    assert resource_list({name: q}) == {name: want}


@pytest.mark.parametrize(
    ("name", "q"),
    [
        ("memory", "9007199254741Ki"),  # in-line length, one KiB past kube's int64 milli-value
        ("memory", "99999999999999999Ki"),
        ("cpu", "\u0663m"),  # Arabic-Indic three: not a digit to kube
        ("memory", "\u0663Ki"),
    ],
)
def test_resource_list_rejects_what_the_exact_parser_rejects(name: str, q: str) -> None:
    with pytest.raises(Bad) as e:
        resource_list({name: q})
    assert e.value.path == name


def test_times_are_the_same_parsed_or_kept() -> None:
    amounts._TIMES.clear()
    first = parse_time("2026-11-02T08:00:00+01:00")
    assert first == datetime(2026, 11, 2, 7, tzinfo=UTC) and first.tzinfo is UTC
    assert parse_time("2026-11-02T08:00:00+01:00") is first
    assert moment("2026-11-02T07:00:00") == first
    with pytest.raises(ValueError):
        parse_time("yesterday")
    with pytest.raises(Bad, match="invalid RFC 3339 time 'yesterday'"):
        moment("yesterday", "status.updateTime")
