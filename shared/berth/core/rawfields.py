"""Typed reads from raw Kubernetes JSON that fail with the object and field named."""

from __future__ import annotations

import builtins
import functools
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from berth.core.errors import InputError
from berth.core.quantity import QuantityError, ceil_milli, ceil_units, parse_nanos


def describe(raw: Mapping[str, Any]) -> str:
    """`Kind ns/name` (or `Kind name`) for messages; tolerant of junk."""
    kind = raw.get("kind") if isinstance(raw.get("kind"), str) else "object"
    meta = raw.get("metadata")
    meta = meta if isinstance(meta, Mapping) else {}
    name = meta.get("name") if isinstance(meta.get("name"), str) else "<unnamed>"
    ns = meta.get("namespace")
    return f"{kind} {ns}/{name}" if isinstance(ns, str) and ns else f"{kind} {name}"


@functools.lru_cache(maxsize=1024)
def _split(path: str) -> tuple[str, ...]:
    return tuple(path.split("."))


def parse_time(value: str) -> datetime:
    """RFC 3339 to an aware UTC datetime."""
    t = datetime.fromisoformat(value)
    return t.replace(tzinfo=UTC) if t.tzinfo is None else t.astimezone(UTC)


class Fields:
    """Reads dotted paths out of one raw object."""

    def __init__(self, raw: Mapping[builtins.str, Any], what: builtins.str | None = None) -> None:
        self.raw = raw
        self.what = what or describe(raw)

    def error(self, path: builtins.str, problem: builtins.str) -> InputError:
        return InputError(self.what, path, problem)

    def get(self, path: builtins.str, base: Any = None) -> Any:
        node: Any = self.raw if base is None else base
        for i, part in enumerate(_split(path)):
            if node is None:
                return None
            if type(node) is not dict and not isinstance(node, Mapping):
                raise self.error(".".join(_split(path)[:i]), "expected an object")
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
