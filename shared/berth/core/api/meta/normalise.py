"""Normalisation helpers: quantities through the exact parser with a bounded cache, and times.

A problem raises `Bad` with the field's path relative to where it was read; callers prefix the
path on the way up (only on the error path), and the kind's decoder names the object.
"""

from __future__ import annotations

import re
import sys
from datetime import UTC, datetime
from typing import Any

from berth.core.api.meta import wire as w
from berth.core.api.meta.model import OwnerRef
from berth.core.api.meta.quantity import MAX_MILLI_VALUE, NANO, QuantityError, parse_nanos
from berth.core.api.meta.selectors import LabelSelector, NodeSelector, NodeSelectorTerm, Requirement
from berth.core.api.meta.wire import Quantities, Quantity


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
# Numbers are kept too: 1 and 1.0 are the same key and the same amount.


def nanos(q: Quantity, path: str = "", bounded: bool = True) -> int:
    """Exact nano-units of one quantity (bounded: see berth.core.api.meta.quantity)."""
    try:
        return parse_nanos(q, bounded)
    except ValueError as e:  # QuantityError, and int()'s digit limit
        raise Bad(path, str(e)) from None


# Units per unit of a suffix, for whole numbers with at most one suffix ("8", "250m", "18065245Ki"):
# the common shapes, read without going through nano-units. Anything else takes the exact parser.
_SCALE = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_SCALE |= {"k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18}


def _whole(q: Quantity, milli: bool) -> int | None:
    """The amount of a plain quantity string, or None for the exact parser to decide."""
    if type(q) is not str or len(q) > 15 or not q.isascii():  # short: never near the bound; ASCII digits only
        return None
    if q.isdecimal():
        return int(q) * 1000 if milli else int(q)
    if q[-1:] == "m" and q[:-1].isdecimal():
        return int(q[:-1]) if milli else -(-int(q[:-1]) // 1000)
    scale = _SCALE.get(q[-2:])
    digits = q[:-2]
    if scale is None:
        scale = _SCALE.get(q[-1:])
        digits = q[:-1]
    if scale is None or not digits.isdecimal():
        return None
    units = int(digits) * scale
    if units > MAX_MILLI_VALUE:  # past kube's int64 milli-value: the exact parser rejects it
        return None
    return units * 1000 if milli else units


def _exact(q: Quantity, milli: bool, name: str) -> int:
    """Through the exact parser: nano-units rounded up to milli-units or units."""
    n = nanos(q, name)
    return -((-n) // 1_000_000) if milli else -((-n) // NANO)


def _miss(q: Quantity, seen: dict[Quantity, int], name: str) -> int:
    """A quantity not seen lately: parsed, rounded up to milli-units (`seen` is _MILLI) or units, kept."""
    milli = seen is _MILLI
    amount = _whole(q, milli)
    if amount is None:
        amount = _exact(q, milli, name)
    if len(seen) >= _LIMIT:
        seen.clear()
    seen[q] = amount
    return amount


def resource_list(v: Quantities | None) -> dict[str, int]:
    """A ResourceList: cpu in millicores, the rest in whole units, rounded up (kube's integer form).

    The two shapes nearly every figure has, millicores ("2516m") for cpu and kibibytes
    ("18065245Ki") for the rest, are read in line and not kept (memory figures rarely repeat); the
    rest goes through the caches and `_whole`, or the exact parser."""
    out: dict[str, int] = {}
    if not v:
        return out
    milli, units = _MILLI, _UNITS
    for name, q in v.items():
        if type(q) is str and 1 < len(q) <= 15 and q.isascii():  # ASCII digits only, as the exact parser
            if name == "cpu":
                if q[-1] == "m" and q[:-1].isdecimal():  # at most 14 digits of millicores: under the bound
                    out[name] = int(q[:-1])
                    continue
            elif q[-2:] == "Ki" and q[:-2].isdecimal():
                kib = int(q[:-2]) << 10
                if kib <= MAX_MILLI_VALUE:  # past kube's int64 milli-value the exact parser rejects it
                    out[name] = kib
                    continue
        if name == "cpu":
            amount = milli.get(q)
            out[name] = _miss(q, milli, name) if amount is None else amount
        else:
            amount = units.get(q)
            out[name] = _miss(q, units, name) if amount is None else amount
    return out


# Plain amounts, each certainly within the exact parser's bounds: up to 12 digits, then `m`, `Ki` or
# nothing (possessive: a value that does not match fails at once, without backtracking)
_PLAIN_ONE = r"[0-9]{1,12}+(?:m|Ki)?+"
_PLAIN = re.compile(rf"{_PLAIN_ONE}(?:\x00{_PLAIN_ONE})*+")


def plain(values: list[object]) -> bool:
    """Whether every value is a plain amount (digits, then at most an `m` or `Ki`) that the exact
    parser takes: a check of many quantities at once, for those read only later, or never."""
    try:
        text = "\x00".join(values)  # type: ignore[arg-type]  # a number fails here: not plain
    except TypeError:
        return False
    return text.count("\x00") == len(values) - 1 and _PLAIN.fullmatch(text) is not None


def milli_list(v: Quantities | None) -> dict[str, int]:
    """Every quantity in milli-units, rounded up."""
    out: dict[str, int] = {}
    if not v:
        return out
    for name, q in v.items():
        amount = _MILLI.get(q)
        out[name] = _miss(q, _MILLI, name) if amount is None else amount
    return out


class TimeRangeError(ValueError):
    """A well-formed time outside years 0001..9999 once in UTC."""


_TIMES: dict[str, datetime] = {}  # parsed times are kept: stamps repeat (events' ts, conditions)
kept_time = _TIMES.get  # a time parse_time took lately, or None: the cache alone, without a call around it


def parse_time(value: str) -> datetime:
    """RFC 3339 to an aware UTC datetime, in years 0001..9999 once in UTC (what the API server
    accepts); ValueError otherwise."""
    t = _TIMES.get(value)
    if t is None:
        t = datetime.fromisoformat(value)
        try:
            t = t.replace(tzinfo=UTC) if t.tzinfo is None else t.astimezone(UTC)
        except OverflowError:
            raise TimeRangeError(f"time {value!r} is outside years 0001..9999 in UTC") from None
        if len(_TIMES) >= 8192:
            _TIMES.clear()
        _TIMES[value] = t
    return t


def moment(v: str | None, path: str = "") -> datetime | None:
    """An RFC 3339 time, or None when absent or empty."""
    if not v:
        return None
    try:
        return parse_time(v)
    except TimeRangeError as e:
        raise Bad(path, str(e)) from None
    except (ValueError, TypeError):
        raise Bad(path, f"invalid RFC 3339 time {v!r}") from None


_GOOD_TIMES: dict[str, None] = {}  # metadata times seen well-formed lately (an object's repeat across its events)


_UINT64_DIGITS = 20  # 2**64 - 1 = 18446744073709551615


def check_resource_version(v: str | None) -> None:
    """A resourceVersion, when present, is a decimal uint64: the API server reads one so
    (apiserver/pkg/storage/api_object_versioner.go, ParseResourceVersion: strconv.ParseUint base 10), and
    berth compares them as numbers. Anything else rejects the line, whatever its kind."""
    if not v:
        return
    digits = v.lstrip("0")
    if v.isascii() and v.isdigit() and len(digits) <= _UINT64_DIGITS and int(digits or "0") < 2**64:
        return
    shown = repr(v) if len(v) <= 40 else f"{v[:20]!r}... ({len(v):,} characters)"
    raise Bad("metadata.resourceVersion", f"{shown} is not a decimal uint64 (kube's resourceVersion)")


def check_meta(meta: w.ObjectMeta | None) -> None:
    """What berth reads of every object's metadata is well formed: its resourceVersion (check_resource_version),
    and metadata.creationTimestamp and deletionTimestamp, when present, are RFC 3339 times within years
    1..9999: a line whose object carries a bad one is rejected, whatever its kind, so that it cannot
    move the clock or the order valid objects are read in."""
    if meta is None:
        return
    check_resource_version(meta.resource_version)
    for v, path in (
        (meta.creation_timestamp, "metadata.creationTimestamp"),
        (meta.deletion_timestamp, "metadata.deletionTimestamp"),
    ):
        if v is None or v in _GOOD_TIMES:
            continue
        if not isinstance(v, str):
            raise Bad(path, f"invalid RFC 3339 time {v!r}")
        moment(v, path)
        if len(_GOOD_TIMES) >= _LIMIT:
            _GOOD_TIMES.clear()
        _GOOD_TIMES[v] = None


__all__ = [
    "Bad",
    "QuantityError",
    "TimeRangeError",
    "check_meta",
    "check_resource_version",
    "kept_time",
    "milli_list",
    "moment",
    "nanos",
    "parse_time",
    "plain",
    "resource_list",
]


EMPTY_META = w.ObjectMeta()


def positional(cls: type, *names: str) -> None:
    """The models built most often are made with positional arguments, in this order (msgspec takes
    keywords several times slower); the order is checked against the model's fields on import."""
    fields = getattr(cls, "__struct_fields__", None)
    if fields != names:
        raise TypeError(f"{cls.__name__}'s fields are {fields}; its positional construction here names {names}")


def group_of(api_version: str) -> str:
    return api_version.rpartition("/")[0] if "/" in api_version else ""


def name_of(meta: w.ObjectMeta) -> str:
    """metadata.name, required."""
    if not meta.name:
        raise Bad("metadata.name", "is required")
    return meta.name


def namespace_of(meta: w.ObjectMeta) -> str:
    return meta.namespace or "default"


def _requirements(items: tuple[w.Requirement, ...] | None) -> tuple[Requirement, ...]:
    if not items:
        return ()
    return tuple([Requirement(r.key or "", r.operator or "", r.values or ()) for r in items])


_SELECTORS: dict[w.NodeSelector, NodeSelector] = {}  # local PVs on one node share one selector


def node_selector(v: w.NodeSelector) -> NodeSelector:
    sel = _SELECTORS.get(v)
    if sel is None:
        sel = _node_selector(v)
        if len(_SELECTORS) >= 16384:
            _SELECTORS.clear()
        _SELECTORS[v] = sel
    return sel


def _node_selector(v: w.NodeSelector) -> NodeSelector:
    return NodeSelector(
        terms=tuple(
            NodeSelectorTerm(
                match_expressions=_requirements(t.match_expressions),
                match_fields=_requirements(t.match_fields),
            )
            for t in v.node_selector_terms or ()
        )
    )


def label_selector(v: w.LabelSelector) -> LabelSelector:
    return LabelSelector(
        tuple(sorted(v.match_labels.items())) if v.match_labels else (),  # match_labels
        _requirements(v.match_expressions) if v.match_expressions else (),  # match_expressions
    )


_OWNERS: dict[tuple[w.OwnerReference, ...], tuple[OwnerRef, ...]] = {}  # a workload's pods share one tuple


def owner_refs(meta: w.ObjectMeta) -> tuple[OwnerRef, ...]:
    if not meta.owner_references:
        return ()
    key = tuple(meta.owner_references)  # wire Structs, hashable: every field they have is the model's
    out = _OWNERS.get(key)
    if out is None:
        out = tuple(
            OwnerRef(
                kind=sys.intern(o.kind or ""),
                name=o.name or "",
                uid=o.uid or "",
                api_version=sys.intern(o.api_version or ""),
                controller=bool(o.controller),
            )
            for o in key
        )
        if len(_OWNERS) >= 65536:
            _OWNERS.clear()
        _OWNERS[key] = out
    return out


TEXTS: dict[tuple[tuple[str, str], ...], dict[str, str]] = {}
NO_TEXTS: dict[str, str] = {}


def shared(cache: dict[Any, dict[str, Any]], v: dict[str, Any]) -> dict[str, Any]:
    """One dict for the objects that have equal ones (in the same order), as models never change
    them; `cache` is bounded."""
    key = tuple(v.items())
    out = cache.get(key)
    if out is None:
        if len(cache) >= 65536:
            cache.clear()
        out = cache[key] = v
    return out


def texts(v: dict[str, str] | None) -> dict[str, str]:
    """Labels, annotations, a node selector: shared (a workload's pods, a node's PVs)."""
    return shared(TEXTS, v) if v else NO_TEXTS


_AMOUNTS: dict[tuple[tuple[str, int], ...], dict[str, int]] = {}
_NO_AMOUNTS: dict[str, int] = {}


def amounts(v: dict[str, int]) -> dict[str, int]:
    """A pod's requests, limits or non-zero requests: shared by the pods that have equal ones."""
    return shared(_AMOUNTS, v) if v else _NO_AMOUNTS


MilliList = dict[str, int]


def to_milli(requests: dict[str, int]) -> MilliList:
    """A model ResourceList (cpu in millicores, the rest in whole units) in milli-units."""
    return {k: v if k == "cpu" else v * 1000 for k, v in requests.items()}
