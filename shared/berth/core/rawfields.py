"""Typed reads from raw Kubernetes JSON that fail with the object and field named.

Two ways to read. `Fields` is the general one: it checks every field and names the object
and field in its errors. The fast-path readers at the end (`text`, `resource_list`, ...)
only handle the common well-formed shapes and raise `Irregular`, with no message, on
anything else; a converter built with `fast_path` then converts that object again with its
general path, which accepts or rejects it with the exact same result and message as before.
"""

from __future__ import annotations

import builtins
import functools
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any, Generic, TypeVar

from berth.core.errors import InputError
from berth.core.quantity import NANO, QuantityError, ceil_milli, ceil_units, parse_nanos

T = TypeVar("T")


def describe(raw: Mapping[str, Any]) -> str:
    """`Kind ns/name` (or `Kind name`) for messages; tolerant of junk."""
    kind = raw.get("kind") if isinstance(raw.get("kind"), str) else "object"
    meta = raw.get("metadata")
    meta = meta if isinstance(meta, Mapping) else {}
    name = meta.get("name") if isinstance(meta.get("name"), str) else "<unnamed>"
    ns = meta.get("namespace")
    return f"{kind} {ns}/{name}" if isinstance(ns, str) and ns else f"{kind} {name}"


_SPLITS: dict[str, tuple[str, ...]] = {}


def _split(path: str) -> tuple[str, ...]:
    parts = _SPLITS.get(path)
    if parts is None:
        parts = tuple(path.split("."))
        if len(_SPLITS) < 4096:  # paths come from the code; the bound is only a guard
            _SPLITS[path] = parts
    return parts


def parse_time(value: str) -> datetime:
    """RFC 3339 to an aware UTC datetime."""
    t = datetime.fromisoformat(value)
    return t.replace(tzinfo=UTC) if t.tzinfo is None else t.astimezone(UTC)


class Fields:
    """Reads dotted paths out of one raw object."""

    def __init__(self, raw: Mapping[builtins.str, Any], what: builtins.str | None = None) -> None:
        self.raw = raw
        self._what = what or None

    @property
    def what(self) -> builtins.str:
        """`Kind ns/name` for messages, worked out only when there is something to say."""
        if self._what is None:
            self._what = describe(self.raw)
        return self._what

    def error(self, path: builtins.str, problem: builtins.str) -> InputError:
        return InputError(self.what, path, problem)

    def get(self, path: builtins.str, base: Any = None) -> Any:
        node: Any = self.raw if base is None else base
        parts = _split(path)
        for i, part in enumerate(parts):
            if node is None:
                return None
            if type(node) is not dict and not isinstance(node, Mapping):
                raise self.error(".".join(parts[:i]), "expected an object")
            node = node.get(part)
        return node

    def str(
        self, path: builtins.str, default: builtins.str = "", base: Any = None, at: builtins.str = ""
    ) -> builtins.str:
        v = self.get(path, base)
        if v is None:
            return default
        if not isinstance(v, builtins.str):
            raise self.error(at or path, f"expected a string, got {type(v).__name__}")
        return v

    def bool(
        self, path: builtins.str, default: builtins.bool = False, base: Any = None, at: builtins.str = ""
    ) -> builtins.bool:
        v = self.get(path, base)
        if v is None:
            return default
        if not isinstance(v, builtins.bool):
            raise self.error(at or path, f"expected true or false, got {v!r}")
        return v

    def int(self, path: builtins.str, base: Any = None, at: builtins.str = "") -> builtins.int | None:
        v = self.get(path, base)
        if v is None:
            return None
        if isinstance(v, builtins.bool) or not isinstance(v, builtins.int):
            raise self.error(at or path, f"expected an integer, got {v!r}")
        return v

    def mapping(self, path: builtins.str, base: Any = None, at: builtins.str = "") -> Mapping[builtins.str, Any]:
        v = self.get(path, base)
        if v is None:
            return {}
        if not isinstance(v, Mapping):
            raise self.error(at or path, "expected an object")
        return v

    def list(self, path: builtins.str, base: Any = None, at: builtins.str = "") -> builtins.list[Any]:
        v = self.get(path, base)
        if v is None:
            return []
        if not isinstance(v, builtins.list):
            raise self.error(at or path, "expected a list")
        return v

    def str_map(self, path: builtins.str, base: Any = None, at: builtins.str = "") -> dict[builtins.str, builtins.str]:
        m = self.mapping(path, base, at)
        for k, v in m.items():
            if not isinstance(v, builtins.str):
                raise self.error(f"{at or path}[{k}]", f"expected a string, got {v!r}")
        return dict(m)

    def str_list(self, path: builtins.str, base: Any = None, at: builtins.str = "") -> tuple[builtins.str, ...]:
        items = self.list(path, base, at)
        for i, v in enumerate(items):
            if not isinstance(v, builtins.str):
                raise self.error(f"{at or path}[{i}]", f"expected a string, got {v!r}")
        return tuple(items)

    def time(self, path: builtins.str, base: Any = None, at: builtins.str = "") -> datetime | None:
        v = self.str(path, base=base, at=at)
        if not v:
            return None
        try:
            return parse_time(v)
        except ValueError:
            raise self.error(at or path, f"invalid RFC 3339 time {v!r}") from None

    def quantity(self, path: builtins.str, base: Any = None, at: builtins.str = "") -> builtins.int | None:
        v = self.get(path, base)
        return None if v is None else self.quantity_value(v, at or path)

    def quantity_value(self, v: Any, at: builtins.str) -> builtins.int:
        try:
            return parse_nanos(v)
        except QuantityError as e:
            raise self.error(at, str(e)) from None

    def resources(
        self, path: builtins.str, base: Any = None, at: builtins.str = ""
    ) -> dict[builtins.str, builtins.int]:
        """A ResourceList: cpu in millicores, the rest in whole units, rounded up."""
        out: dict[builtins.str, builtins.int] = {}
        for name, v in self.mapping(path, base, at).items():
            nanos = self.quantity_value(v, f"{at or path}.{name}")
            out[name] = ceil_milli(nanos) if name == "cpu" else ceil_units(nanos)
        return out


# ---- fast path -----------------------------------------------------------------------
#
# Each reader takes the value found at a field (None when absent or null) and returns what
# the matching `Fields` method returns for it, or raises Irregular. They accept only exact
# JSON types (dict, list, str, int, bool), so anything unusual, including Mapping or str
# subclasses, goes to the general path. Being stricter than `Fields` only costs time; being
# more lenient would change behaviour, so every reader checks at least what `Fields` checks.


class Irregular(Exception):
    """The fast path met a shape it does not handle; the general path decides."""


class FastPath(Generic[T]):
    """A converter: `fast` for the well-formed common case, `general` when it raises Irregular.

    `general` alone defines the behaviour (results and error messages); `fast` must give an
    equal result whenever it returns. tests/core/test_fastpath.py checks that on mutated objects,
    and that `fast` gives up only by raising Irregular (though any exception would do).
    """

    def __init__(
        self, fast: Callable[[dict[builtins.str, Any]], T], general: Callable[[Mapping[builtins.str, Any]], T]
    ) -> None:
        self.fast = fast
        self.general = general
        functools.update_wrapper(self, general)

    def __call__(self, raw: Mapping[builtins.str, Any]) -> T:
        if type(raw) is dict:
            try:
                return self.fast(raw)
            except Exception:  # Irregular, or anything else: the general path decides
                pass
        return self.general(raw)


def fast_path(
    fast: Callable[[dict[builtins.str, Any]], T],
) -> Callable[[Callable[[Mapping[builtins.str, Any]], T]], FastPath[T]]:
    """Decorates a general converter with its fast path."""

    def wrap(general: Callable[[Mapping[builtins.str, Any]], T]) -> FastPath[T]:
        return FastPath(fast, general)

    return wrap


def obj(v: Any) -> dict[builtins.str, Any] | None:
    """An object on the way down a path: None stops there (`Fields.get` returns None)."""
    if v is None or type(v) is dict:
        return v
    raise Irregular


def text(v: Any) -> builtins.str:
    """`Fields.str` with the default ""."""
    if type(v) is builtins.str:
        return v
    if v is None:
        return ""
    raise Irregular


def flag(v: Any) -> builtins.bool:
    """`Fields.bool` with the default False."""
    if v is None:
        return False
    if type(v) is builtins.bool:
        return v
    raise Irregular


def integer(v: Any) -> builtins.int | None:
    """`Fields.int`."""
    if v is None or type(v) is builtins.int:
        return v
    raise Irregular


def items(v: Any) -> builtins.list[Any]:
    """`Fields.list`."""
    if type(v) is builtins.list:
        return v
    if v is None:
        return []
    raise Irregular


def meta_fast(raw: dict[builtins.str, Any]) -> tuple[dict[builtins.str, Any], builtins.str]:
    """(metadata, name) of a well-formed object: metadata an object, name set."""
    meta = raw.get("metadata")
    if type(meta) is not dict:
        raise Irregular
    name = meta.get("name")
    if type(name) is not builtins.str or not name:
        raise Irregular
    return meta, name


def objects(v: Any) -> builtins.list[dict[builtins.str, Any]]:
    """`items` whose every element is an object."""
    out = items(v)
    for x in out:
        if type(x) is not dict:
            raise Irregular
    return out


def text_map(v: Any) -> dict[builtins.str, builtins.str]:
    """`Fields.str_map`."""
    if v is None:
        return {}
    if type(v) is not dict:
        raise Irregular
    for x in v.values():
        if type(x) is not builtins.str:
            raise Irregular
    return dict(v)


def text_list(v: Any) -> tuple[builtins.str, ...]:
    """`Fields.str_list`."""
    if v is None:
        return ()
    if type(v) is not builtins.list:
        raise Irregular
    for x in v:
        if type(x) is not builtins.str:
            raise Irregular
    return tuple(v)


def quantity(v: Any) -> builtins.int:
    """`Fields.quantity_value`: exact nano-units."""
    try:
        return parse_nanos(v)
    except ValueError:  # QuantityError, and int()'s digit limit, which the general path meets too
        raise Irregular from None


_MILLI: dict[builtins.str, builtins.int] = {}  # quantity string -> ceil_milli, for cpu
_UNITS: dict[builtins.str, builtins.int] = {}  # quantity string -> ceil_units, for the rest


def resource_list(v: Any) -> dict[builtins.str, builtins.int]:
    """`Fields.resources`: cpu in millicores, the rest in whole units, rounded up."""
    if v is None:
        return {}
    if type(v) is not dict:
        raise Irregular
    out: dict[builtins.str, builtins.int] = {}
    for name, q in v.items():
        seen = _MILLI if name == "cpu" else _UNITS
        amount = seen.get(q) if type(q) is builtins.str else None
        if amount is None:
            amount = _amount(q, seen)
        out[name] = amount
    return out


def milli_amounts(v: Any) -> dict[builtins.str, builtins.int]:
    """Every quantity of an object in milli-units, rounded up (a buffer's MilliList)."""
    if v is None:
        return {}
    if type(v) is not dict:
        raise Irregular
    out: dict[builtins.str, builtins.int] = {}
    for name, q in v.items():
        amount = _MILLI.get(q) if type(q) is builtins.str else None
        out[name] = _amount(q, _MILLI) if amount is None else amount
    return out


def _amount(q: Any, seen: dict[builtins.str, builtins.int]) -> builtins.int:
    """A quantity in milli-units (`seen` is _MILLI) or whole units, rounded up, and remembered."""
    try:
        nanos = parse_nanos(q)
    except ValueError:  # QuantityError, and int()'s digit limit, which the general path meets too
        raise Irregular from None
    amount = -((-nanos) // 1_000_000) if seen is _MILLI else -((-nanos) // NANO)
    if type(q) is builtins.str:
        if len(seen) >= 16384:  # memory usage and the like rarely repeat: start over
            seen.clear()
        seen[q] = amount
    return amount


_TIMES: dict[builtins.str, datetime] = {}


def moment(v: Any) -> datetime | None:
    """`Fields.time`. Parsed times are kept: the same stamps come back again and again."""
    if type(v) is not builtins.str:
        if v is None:
            return None
        raise Irregular
    t = _TIMES.get(v)
    if t is None:
        if not v:
            return None
        try:
            t = parse_time(v)
        except ValueError:
            raise Irregular from None
        if len(_TIMES) >= 8192:
            _TIMES.clear()
        _TIMES[v] = t
    return t
