"""Typed reads from a part of an object that stays untyped on the wire (a CapacityBuffer's spec and
status, which must never fail the buffer's decode), failing with the object and field named."""

from __future__ import annotations

import builtins
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from berth.core.api.meta.normalise import parse_time
from berth.core.api.meta.quantity import QuantityError, parse_nanos
from berth.core.errors import InputError

_SPLITS: dict[str, tuple[str, ...]] = {}


def _split(path: str) -> tuple[str, ...]:
    parts = _SPLITS.get(path)
    if parts is None:
        parts = tuple(path.split("."))
        if len(_SPLITS) < 4096:  # paths come from the code; the bound is only a guard
            _SPLITS[path] = parts
    return parts


class Fields:
    """Reads dotted paths out of one raw object."""

    def __init__(self, raw: Mapping[builtins.str, Any], what: builtins.str) -> None:
        self.raw = raw
        self.what = what

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

    def int(
        self, path: builtins.str, base: Any = None, at: builtins.str = "", bits: builtins.int = 0
    ) -> builtins.int | None:
        """bits: kube's int32 or int64 field, checked for range (0: not checked here)."""
        v = self.get(path, base)
        if v is None:
            return None
        if isinstance(v, builtins.bool) or not isinstance(v, builtins.int):
            raise self.error(at or path, f"expected an integer, got {v!r}")
        if bits and not -(2 ** (bits - 1)) <= v < 2 ** (bits - 1):
            limit = f"at most {2 ** (bits - 1) - 1}" if v > 0 else f"at least {-(2 ** (bits - 1))}"
            raise self.error(at or path, f"{v} is out of range: kube's int{bits} is {limit}")
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

    def time(self, path: builtins.str, base: Any = None, at: builtins.str = "") -> datetime | None:
        v = self.str(path, base=base, at=at)
        if not v:
            return None
        try:
            return parse_time(v)
        except ValueError:
            raise self.error(at or path, f"invalid RFC 3339 time {v!r}") from None

    def quantity_value(self, v: Any, at: builtins.str) -> builtins.int:
        try:
            return parse_nanos(v)
        except QuantityError as e:
            raise self.error(at, str(e)) from None
