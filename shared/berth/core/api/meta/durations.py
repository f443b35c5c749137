"""Go duration strings ("5m", "1h30m", "1.5s") to integer nanoseconds, as time.ParseDuration."""

from __future__ import annotations

_UNITS = {
    "ns": 1,
    "us": 1_000,
    "µs": 1_000,  # U+00B5
    "μs": 1_000,  # U+03BC
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60_000_000_000,
    "h": 3_600_000_000_000,
}
_MAX = 2**63 - 1
SECOND = 1_000_000_000


class DurationError(ValueError):
    pass


def parse_duration(text: str) -> int:
    """Nanoseconds; raises DurationError with Go's message shape."""
    bad = DurationError(f"time: invalid duration {text!r}")
    s = text
    neg = False
    if s[:1] in ("+", "-"):
        neg = s[0] == "-"
        s = s[1:]
    if s == "0":
        return 0
    if not s:
        raise bad
    total = 0
    while s:
        i = 0
        while i < len(s) and s[i].isdigit() and s[i].isascii():
            i += 1
        whole, s = s[:i], s[i:]
        frac = ""
        if s.startswith("."):
            j = 1
            while j < len(s) and s[j].isdigit() and s[j].isascii():
                j += 1
            frac, s = s[1:j], s[j:]
        if not whole and not frac:
            raise bad
        j = 0
        while j < len(s) and s[j] != "." and not (s[j].isdigit() and s[j].isascii()):
            j += 1
        unit_name, s = s[:j], s[j:]
        if not unit_name:
            raise DurationError(f"time: missing unit in duration {text!r}")
        unit = _UNITS.get(unit_name)
        if unit is None:
            raise DurationError(f"time: unknown unit {unit_name!r} in duration {text!r}")
        v = int(whole or "0")
        if v > _MAX // unit:
            raise bad
        v *= unit
        if frac:
            # Go scales the fraction in float64 and truncates.
            digits = frac[:18]
            v += int(float(int(digits)) * (unit / 10 ** len(digits)))
        total += v
        if total > _MAX:
            raise bad
    return -total if neg else total
