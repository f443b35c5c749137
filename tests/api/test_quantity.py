from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from berth.core.api.meta.quantity import MAX_MILLI_VALUE, NANO, QuantityError, ceil_milli, ceil_units, parse_nanos

G = 10**9


@pytest.mark.parametrize(
    ("text", "nanos"),
    [
        ("0", 0),
        ("1", 1 * NANO),
        ("1Ki", 1024 * NANO),
        ("1Mi", 2**20 * NANO),
        ("10Gi", 10 * 2**30 * NANO),
        ("1Ti", 2**40 * NANO),
        ("8Pi", 2**53 * NANO),
        ("1k", 1000 * NANO),
        ("1G", G * NANO),
        ("9P", 9 * 10**15 * NANO),
        ("100m", 100 * 10**6),
        ("1.5Gi", 3 * 2**29 * NANO),
        ("0.5", NANO // 2),
        (".5", NANO // 2),
        ("1e3", 1000 * NANO),
        ("1E3", 1000 * NANO),
        ("12e-3", 12 * 10**6),
        ("1n", 1),
        ("1u", 1000),
        ("+2", 2 * NANO),
        ("-2", -2 * NANO),
        ("0.1n", 1),  # finer than nano rounds up, as the API server does
        ("1.0000000001", NANO + 1),
        (3, 3 * NANO),
        (0.25, NANO // 4),
    ],
)
def test_parse(text: object, nanos: int) -> None:
    assert parse_nanos(text) == nanos


@pytest.mark.parametrize("text", ["", "Gi", "1GB", "1 Gi", "1.2.3", "abc", "1Ki1", "--1", "1e", "0x10", " 1"])
def test_malformed(text: str) -> None:
    with pytest.raises(QuantityError):
        parse_nanos(text)


def test_bool_is_not_a_quantity() -> None:
    with pytest.raises(QuantityError):
        parse_nanos(True)


@pytest.mark.parametrize(
    "value",
    [
        "100Ei",
        "1Ei",
        "1E",
        "1e30",
        "-1e30",
        1e30,
        2**70,
        "9223372036854776",
        "99999999999999k",
        "1" + "0" * 4300 + "Gi",
        "nan",
        "inf",
        float("nan"),
        float("inf"),
        "\u0661\u0662",  # Arabic-Indic digits: int() reads them, kube does not
        "\u00b2",
    ],
)
def test_rejected_beyond_kube(value: object) -> None:
    """Past kube's int64 milli-value (resource.MaxMilliValue), too long, not finite, not ASCII digits."""
    with pytest.raises(QuantityError):
        parse_nanos(value)


def test_largest_milli_value() -> None:
    assert parse_nanos(str(MAX_MILLI_VALUE)) == MAX_MILLI_VALUE * NANO
    assert ceil_milli(parse_nanos(str(MAX_MILLI_VALUE))) == MAX_MILLI_VALUE * 1000 < 2**63


@pytest.mark.parametrize(
    ("text", "units", "milli"), [("1500m", 2, 1500), ("0.1", 1, 100), ("1n", 1, 1), ("2", 2, 2000)]
)
def test_rounding_up(text: str, units: int, milli: int) -> None:
    assert ceil_units(parse_nanos(text)) == units
    assert ceil_milli(parse_nanos(text)) == milli


def test_exact_comparisons() -> None:
    assert parse_nanos("1Gi") > parse_nanos("1G")
    assert parse_nanos("1000Mi") < parse_nanos("1Gi")
    assert parse_nanos("1024Mi") == parse_nanos("1Gi")
    assert parse_nanos("1000M") == parse_nanos("1G")


@given(st.integers(min_value=0, max_value=2**40), st.sampled_from(["", "Ki", "Mi", "Gi", "k", "M", "G"]))
def test_suffix_scales_exactly(n: int, suffix: str) -> None:
    scale = {"": 1, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "k": 10**3, "M": 10**6, "G": 10**9}[suffix]
    if n * scale > MAX_MILLI_VALUE:
        with pytest.raises(QuantityError):
            parse_nanos(f"{n}{suffix}")
    else:
        assert parse_nanos(f"{n}{suffix}") == n * scale * NANO


@given(st.integers(min_value=0, max_value=10**12), st.integers(min_value=0, max_value=10**12))
def test_order_is_preserved(a: int, b: int) -> None:
    assert (parse_nanos(f"{a}m") < parse_nanos(f"{b}m")) == (a < b)
