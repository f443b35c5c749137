"""Small helpers for config validation messages, in kube's field-error style."""

from __future__ import annotations

import re
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


_NAME = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_NAME_RE = re.compile(f"^{_NAME}$")
_DNS_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_NAME_FMT = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
    f"character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '{_NAME}')"
)


def qualified_name(value: str, path: str, problems: Problems) -> None:
    """kube's IsQualifiedName (ValidateLabelName), with its messages."""
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            problems.append(invalid(path, value, "prefix part must be non-empty"))
        elif len(prefix) > 253:
            problems.append(invalid(path, value, "prefix part must be no more than 253 characters"))
        elif not _DNS_RE.match(prefix):
            problems.append(
                invalid(
                    path,
                    value,
                    "prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
                    "'-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex "
                    "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
                )
            )
    else:
        problems.append(
            invalid(
                path,
                value,
                f"a qualified name {_NAME_FMT} with an optional DNS subdomain prefix and '/' "
                "(e.g. 'example.com/MyName')",
            )
        )
        return
    if not name:
        problems.append(invalid(path, value, "name part must be non-empty"))
    elif len(name) > 63:
        problems.append(invalid(path, value, "name part must be no more than 63 characters"))
    elif not _NAME_RE.match(name):
        problems.append(invalid(path, value, f"name part {_NAME_FMT}"))
