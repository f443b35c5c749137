"""msgspec's validation errors in berth's words: `Kind ns/name: field.path: problem`."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

import msgspec

from berth.core.errors import InputError

_MESSAGE = re.compile(r"^Expected `([^`]*)`, got `([^`]*)`(?: - at `\$\.?(.*)`)?$")
_AT = re.compile(r"^(.*?)(?: - at `\$\.?(.*)`)?$")
_NOUNS = {
    "str": "a string",
    "int": "an integer",
    "bool": "true or false",
    "object": "an object",
    "array": "a list",
    "int | float | str": "a quantity (string or number)",
    "float": "a number",
}
_GOT = {"array": "list", "object": "object", "null": "null"}


def invalid(what: str, e: msgspec.ValidationError, value: Callable[[], Any]) -> InputError:
    """`what: field: problem` for a msgspec error such as "Expected `str`, got `int` - at `$.a.b`".
    value: the object as Python data, to name the map key msgspec leaves out (`[...]`)."""
    text = str(e)
    m = _MESSAGE.match(text)
    if m is not None:
        want, got, path = m.groups()
        want = want.removesuffix(" | null")
        if path and path.endswith("[...]"):
            path = _name_key(value(), path, got)
        return InputError(what, path or "", f"expected {_NOUNS.get(want, want)}, got {_GOT.get(got, got)}")
    m = _RANGE.match(text)
    if m is not None:
        op, bound, path = m.groups()
        return InputError(what, path or "", _out_of_range(value, path or "", op == "<=", int(bound)))
    m = _AT.match(text)
    assert m is not None  # the pattern matches any text
    problem, path = m.groups()
    return InputError(what, path or "", problem[:1].lower() + problem[1:])


_RANGE = re.compile(r"^Expected `int` (<=|>=) (-?\d+)(?: - at `\$\.?(.*)`)?$")
_BITS = {2**31 - 1: 32, -(2**31): 32, 2**63 - 1: 64, -(2**63): 64}


def _out_of_range(value: Callable[[], Any], path: str, above: bool, bound: int) -> str:
    """'3000000000 is out of range: kube's int32 is at most 2147483647' (the value when it is found)."""
    got = _walk(value(), path)
    bits = f"kube's int{_BITS[bound]}" if bound in _BITS else "it"
    limit = f"{bits} is at most {bound}" if above else f"{bits} is at least {bound}"
    return f"{got} is out of range: {limit}" if isinstance(got, int) else f"out of range: {limit}"


def _walk(node: Any, path: str) -> Any:
    """The value at a msgspec path (`spec.containers[0].ports[1].hostPort`), or None."""
    for step in _STEP.finditer(path):
        name, index = step.groups()
        if name is not None and isinstance(node, Mapping):
            node = node.get(name)
        elif index is not None and isinstance(node, list) and int(index) < len(node):
            node = node[int(index)]
        else:
            return None
    return node


_STEP = re.compile(r"\.?([^.\[]+)|\[(\d+)\]")
_JSON_TYPES = {type(None): "null", bool: "bool", int: "int", float: "float", str: "str", list: "array", dict: "object"}


def _name_key(value: Any, path: str, got: str) -> str:
    """`labels[...]` -> `labels[a]`: the first key of that map whose value has the type msgspec got."""
    node = value
    for step in _STEP.finditer(path.removesuffix("[...]")):
        name, index = step.groups()
        if name is not None and isinstance(node, Mapping):
            node = node.get(name)
        elif index is not None and isinstance(node, list) and int(index) < len(node):
            node = node[int(index)]
        else:
            return path
    if isinstance(node, Mapping):
        for k, v in node.items():
            if _JSON_TYPES.get(type(v)) == got:
                return f"{path.removesuffix('[...]')}[{k}]"
    return path
