"""Normalisation helpers: quantities through the exact parser with a bounded cache, and times.

A problem raises `Bad` with the field's path relative to where it was read; callers prefix the
path on the way up (only on the error path), and the kind's decoder names the object.
"""

from __future__ import annotations

from datetime import UTC, datetime

from berth.core.quantity import NANO, QuantityError, parse_nanos
from berth.core.wire.common import Quantities, Quantity


class Bad(Exception):
    """A field that does not normalise: its path (dotted, with [i] for list items) and the problem."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(path, problem)
        self.path = path
        self.problem = problem

    def under(self, prefix: str) -> Bad:
        if not self.path:
            return Bad(prefix, self.problem)
        return Bad(f"{prefix}{self.path}" if self.path.startswith("[") else f"{prefix}.{self.path}", self.problem)


_LIMIT = 16384  # distinct strings per cache; memory usage and the like rarely repeat: start over
_MILLI: dict[Quantity, int] = {}  # quantity -> milli-units, rounded up (cpu)
_UNITS: dict[Quantity, int] = {}  # quantity -> whole units, rounded up (the rest)


def nanos(q: Quantity, path: str = "") -> int:
    """Exact nano-units of one quantity."""
    try:
        return parse_nanos(q)
    except ValueError as e:  # QuantityError, and int()'s digit limit
        raise Bad(path, str(e)) from None


def _rounded(q: Quantity, seen: dict[Quantity, int], name: str) -> int:
    if type(q) is str:
        amount = seen.get(q)
        if amount is not None:
            return amount
    n = nanos(q, name)
    amount = -((-n) // 1_000_000) if seen is _MILLI else -((-n) // NANO)
    if type(q) is str:
        if len(seen) >= _LIMIT:
            seen.clear()
        seen[q] = amount
    return amount


def resource_list(v: Quantities | None) -> dict[str, int]:
    """A ResourceList: cpu in millicores, the rest in whole units, rounded up (kube's integer form)."""
    if not v:
        return {}
    return {name: _rounded(q, _MILLI if name == "cpu" else _UNITS, name) for name, q in v.items()}


def milli_list(v: Quantities | None) -> dict[str, int]:
    """Every quantity in milli-units, rounded up."""
    if not v:
        return {}
    return {name: _rounded(q, _MILLI, name) for name, q in v.items()}


def parse_time(value: str) -> datetime:
    """RFC 3339 to an aware UTC datetime."""
    t = datetime.fromisoformat(value)
    return t.replace(tzinfo=UTC) if t.tzinfo is None else t.astimezone(UTC)


_TIMES: dict[str, datetime] = {}


def moment(v: str | None, path: str = "") -> datetime | None:
    """An RFC 3339 time, or None when absent or empty. Parsed times are kept: stamps repeat."""
    if not v:
        return None
    t = _TIMES.get(v)
    if t is None:
        try:
            t = parse_time(v)
        except ValueError:
            raise Bad(path, f"invalid RFC 3339 time {v!r}") from None
        if len(_TIMES) >= 8192:
            _TIMES.clear()
        _TIMES[v] = t
    return t


__all__ = ["Bad", "QuantityError", "milli_list", "moment", "nanos", "parse_time", "resource_list"]
