"""Kubernetes resource quantities, parsed exactly.

A quantity is held as an integer count of nano-units (10^-9), which is exactly
what the API server keeps: finer precision is rounded up to 1n. Comparisons on
nano-units are therefore exact.

Bounds: a quantity is at most MAX_LENGTH characters of ASCII and its exponent at most 400. A
storage size (a PV's capacity, a claim's request, a CSIStorageCapacity) is otherwise of any size,
compared exactly, as kube's Quantity.Cmp does (`parse_nanos(..., bounded=False)`). Every other
quantity is at most MAX_MILLI_VALUE units, so that its milli-value fits kube's int64
(apimachinery's resource.MaxMilliValue, what MilliValue() can hold): kube's NodeInfo holds cpu and
memory as int64, and a larger one wraps or reads as 0 there, so berth rejects it. NaN and
infinities are not quantities.
"""

from __future__ import annotations

import functools
import math
import re
from fractions import Fraction

NANO = 10**9
MAX_MILLI_VALUE = (2**63 - 1) // 1000  # kube's resource.MaxMilliValue
MAX_LENGTH = 100  # characters in one quantity string
_MAX_UNITS = MAX_MILLI_VALUE

# kube's binary suffixes, smallest first; the report prints bytes in them too (KiB, MiB, ...)
BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 10**3),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}
_RE = re.compile(r"^([+-]?)(\d+(?:\.\d*)?|\.\d+)(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?)$", re.ASCII)


class QuantityError(ValueError):
    pass


def _too_large(value: object) -> QuantityError:
    return QuantityError(f"{value!r}: must be no more than {MAX_MILLI_VALUE} in magnitude (kube's int64 milli-value)")


@functools.lru_cache(maxsize=4096)
def parse_text(value: str, bounded: bool = True) -> int:
    if len(value) > MAX_LENGTH:
        raise QuantityError(f"quantities are at most {MAX_LENGTH} characters: got {len(value)}")
    m = _RE.match(value)
    if m is None:
        raise QuantityError(
            f"quantities must match the regular expression "
            f"'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$': got {value!r}"
        )
    sign, number, exponent, suffix = m.groups()
    whole, _, frac = number.partition(".")
    # value = digits / 10^len(frac) * scale, in exact integers: scale = num / den
    digits = int((whole or "0") + frac)
    num: int = 1
    den: int = 10 ** len(frac)
    if exponent:
        exp = int(exponent[1:])
        if abs(exp) > 400:
            raise QuantityError(f"exponent out of range in {value!r}")
        num, den = (num * int(10**exp), den) if exp >= 0 else (num, den * int(10**-exp))
    elif suffix in BINARY:
        num *= BINARY[suffix]
    else:
        scale = _DECIMAL[suffix or ""]
        num, den = num * scale.numerator, den * scale.denominator
    top = -digits * num if sign == "-" else digits * num
    if (top * NANO) % den == 0:  # the common case: whole nano-units, integers only
        nanos = top * NANO // den
        if bounded and abs(nanos) > _MAX_NANOS:
            raise _too_large(value)
        return nanos
    return _to_nanos(Fraction(top, den), value, bounded)


# Nano-units per unit of a suffix, for the fast path: whole numbers of a suffix are whole nanos.
_WHOLE_SCALE = {
    **{suffix: scale * NANO for suffix, scale in BINARY.items()},
    **{suffix: int(scale * NANO) for suffix, scale in _DECIMAL.items() if suffix},
}
_MAX_NANOS = _MAX_UNITS * NANO
_FAST_LENGTH = 15  # longer strings take the exact parser, which bounds their length


def parse_nanos(value: object, bounded: bool = True) -> int:
    """Parse a quantity (string or number) to exact nano-units, rounding up like the API server.
    bounded: at most MAX_MILLI_VALUE units (kube's int64 milli-value); a storage size is not."""
    if type(value) is str:
        # Fast path for the usual shapes, "8", "250m", "18065245Ki": digits and at most one suffix.
        # ASCII digits only, as in kube (str.isdecimal() alone takes other scripts' digits).
        if len(value) > _FAST_LENGTH or not value.isascii():
            return parse_text(value, bounded)
        if value.isdecimal():
            nanos = int(value) * NANO
        else:
            scale = _WHOLE_SCALE.get(value[-2:])
            if scale is not None:
                digits = value[:-2]
            else:
                scale = _WHOLE_SCALE.get(value[-1:])
                digits = value[:-1]
            if scale is None or not digits.isdecimal():
                return parse_text(value, bounded)  # signs, fractions, exponents and everything malformed
            nanos = int(digits) * scale
        if bounded and nanos > _MAX_NANOS:
            raise _too_large(value)
        return nanos
    if isinstance(value, str):
        return parse_text(value, bounded)
    if isinstance(value, bool):
        raise QuantityError(f"quantities must match the regular expression: got {value!r}")
    if isinstance(value, int):
        return _to_nanos(Fraction(value), value, bounded)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise QuantityError(f"quantities are finite numbers: got {value!r}")
        return _to_nanos(Fraction(str(value)), value, bounded)
    raise QuantityError(f"expected a quantity string, got {type(value).__name__}")


def _to_nanos(amount: Fraction, value: object, bounded: bool = True) -> int:
    if bounded and abs(amount) > _MAX_UNITS:
        raise _too_large(value)
    scaled = amount * NANO
    # Round away from zero to the next nano, as the API server does (inf.RoundUp).
    whole = scaled.numerator // scaled.denominator  # floor: already away from zero below 0
    if scaled > 0 and whole * scaled.denominator != scaled.numerator:
        whole += 1
    return whole


# A size in bytes as int64 arrays hold it: capped just below int64's largest value (a sentinel
# there). Past the cap, exact comparisons go through the Python ints.
SIZE_CAP = 2**63 - 2


def bytes_capped(n: int) -> int:
    return n if n < SIZE_CAP else SIZE_CAP


def ceil_units(nanos: int) -> int:
    """Whole units, rounded up (kube's Quantity.Value)."""
    return -((-nanos) // NANO)


def ceil_milli(nanos: int) -> int:
    """Milli-units, rounded up (kube's Quantity.MilliValue)."""
    return -((-nanos) // 10**6)
