"""Mutations of berth's own sample inputs: one value somewhere in a document replaced by something bad.

A document is parsed, one value at a path is swapped for a marker string, the document is written
back, and the marker is replaced by raw text. So a mutation can put in what no serializer would
write: nesting thousands of levels deep, a 5,000-digit integer, bytes that are not UTF-8.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import yaml

MARKER = "__berth_fuzz_marker__"

# Raw replacement texts, valid in both JSON and YAML flow syntax unless noted.
RAW: tuple[bytes, ...] = (
    b"[" * 3000 + b"]" * 3000,  # nesting deeper than any recursive decoder
    b'{"a":' * 1500 + b"1" + b"}" * 1500,
    b"1" + b"0" * 5000,  # a bare integer past Python's int-string limit
    b'"1' + b"0" * 4300 + b'Gi"',  # a quantity with 4,301 digits
    b'"nan"',
    b'"inf"',
    b'"-1e30"',
    b'"1e30"',
    b"1e30",
    b"1e400",
    b'"\xc2\xb2"',  # superscript two: int() takes it
    b'"\xd9\xa1\xd9\xa2"',  # Arabic-Indic digits
    b'"9999-12-31T23:59:59-23:59"',
    b'"0001-01-01T00:00:00+23:59"',
    b'"9999-12-31T23:59:59Z"',
    b"5",
    b"-1",
    b"1180591620717411303424",  # 2^70
    b"1.5",
    b"true",
    b"null",
    b"[]",
    b"{}",
    b'"x"',
    b'""',
    b'"\xff\xfe"',  # not UTF-8
    b'"a\\u0000b"',
)

# What every object's metadata holds that berth reads (issue 34): its times and its resourceVersion, on
# every kind. Values a careless writer or a hostile one might put there.
META_FIELDS = ("creationTimestamp", "deletionTimestamp", "resourceVersion")
META_RAW: tuple[bytes, ...] = (
    b'"yesterday"',
    b'"2026-13-45T99:99:99Z"',
    b'"9999-12-31T23:59:59-14:00"',  # after year 9999 in UTC
    b'"0001-01-01T00:00:00+23:59"',  # before year 1 in UTC
    b'"10000-01-01T00:00:00Z"',
    b'"1' + b"0" * 5001 + b'"',  # 5,002 digits: Python's int-string limit
    b'"18446744073709551616"',  # 2**64, one past kube's uint64
    b'"18446744073709551615"',  # 2**64 - 1: kube's largest, valid
    b'"000000000000000000000000042"',  # leading zeros: valid to strconv.ParseUint
    b'"-1"',
    b'"1e3"',
    b'"\xc2\xb2"',  # superscript two
    b'"\xd9\xa1\xd9\xa2"',  # Arabic-Indic digits
    b"12",  # a number, not a string
    b'""',
    b"null",
)


@dataclass(frozen=True)
class Mutation:
    path: tuple[str | int, ...]
    raw: bytes

    def __str__(self) -> str:
        where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in self.path) or "(root)"
        shown = self.raw if len(self.raw) < 60 else self.raw[:30] + b"...(%d bytes)" % len(self.raw)
        return f"{where} = {shown!r}"


def paths(doc: Any, here: tuple[str | int, ...] = ()) -> Iterator[tuple[str | int, ...]]:
    """Every path to a value in a document, the document itself first."""
    yield here
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from paths(v, (*here, str(k)))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from paths(v, (*here, i))


def _set(doc: Any, path: tuple[str | int, ...], value: Any) -> Any:
    if not path:
        return value
    node = doc
    for p in path[:-1]:
        node = node[p]
    node[path[-1]] = value
    return doc


def apply_json(doc: Any, m: Mutation) -> bytes:
    """The document as one line of JSON with the mutation in place."""
    text = json.dumps(_set(json.loads(json.dumps(doc)), m.path, MARKER), separators=(",", ":")).encode()
    return text.replace(json.dumps(MARKER).encode(), m.raw, 1)


def apply_yaml(docs: list[Any], index: int, m: Mutation) -> bytes:
    """YAML documents with the mutation in document `index`."""
    copy = json.loads(json.dumps(docs))
    copy[index] = _set(copy[index], m.path, MARKER)
    text = yaml.safe_dump_all(copy, sort_keys=False, width=1 << 30).encode()
    return text.replace(MARKER.encode(), m.raw, 1)
