"""Small helpers for config validation messages, in kube's field-error style."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

Problems = list[str]

INT32_MAX = 2**31 - 1  # kube's int32 fields (plugin weights)
INT64_MAX = 2**63 - 1  # kube's int64 fields (durations in seconds)


def invalid(path: str, value: Any, detail: str) -> str:
    return f"{path}: Invalid value: {value!r}: {detail}"


def is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def items(value: Any, path: str, what: str, problems: Problems) -> list[Any]:
    """A list field's items; anything else (a number, a string, an object) is one problem."""
    if value is None:
        return []
    if not isinstance(value, list):
        problems.append(invalid(path, value, f"must be a list of {what}"))
        return []
    return value


def unknown_fields(args: Mapping[str, Any], known: set[str], path: str, problems: Problems) -> None:
    for k in args:
        if k not in known:
            problems.append(f'{path}: unknown field "{k}"')
