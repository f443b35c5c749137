"""Small helpers for config validation messages, in kube's field-error style."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

Problems = list[str]


def invalid(path: str, value: Any, detail: str) -> str:
    return f"{path}: Invalid value: {value!r}: {detail}"


def is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def unknown_fields(args: Mapping[str, Any], known: set[str], path: str, problems: Problems) -> None:
    for k in args:
        if k not in known:
            problems.append(f'{path}: unknown field "{k}"')
