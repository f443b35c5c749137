"""A JSON snapshot read straight from its bytes into each kind's wire Struct, as an event's object is.

At 25,000 objects (62 MB) that is 0.5 s where Python dicts and msgspec.convert take 2.3 s, most of
it json.loads. It takes only what it reads exactly as the general reader does (snapshot.load_objects,
then build_state): anything else (an item without its kind, an object near the size limit, text that
is not UTF-8, anything malformed or invalid) gives None, and the general reader reads the file,
giving the same objects or naming the problem.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from berth.core.api.kinds import KINDS, normalise
from berth.core.api.meta.normalise import group_of
from berth.core.cache.snapshot import Decoded
from berth.core.errors import InputError

Objects = list[Mapping[str, Any] | Decoded]


class _Doc(msgspec.Struct):
    """A document's kind, and its items when it is a List (left as raw bytes)."""

    kind: str | msgspec.UnsetType = msgspec.UNSET
    apiVersion: str | msgspec.UnsetType = msgspec.UNSET
    items: list[msgspec.Raw] | msgspec.UnsetType | None = msgspec.UNSET


_doc = msgspec.json.Decoder(_Doc)
_array = msgspec.json.Decoder(list[msgspec.Raw])
_any = msgspec.json.Decoder()


def within_by_length(length: int, limit: int) -> bool:
    """Whether an object whose JSON takes `length` bytes is within `limit` as snapshot.json_size
    counts it, without the walk: that counts at most 8 bytes for each byte of any encoding (a
    one-digit number and its comma: 8 for 2). False: not known without the walk."""
    return 8 * length + 8 <= limit


class _Elsewhere(Exception):
    """Something the general reader reads (or names as wrong)."""


def read_typed(data: bytes, max_object_bytes: int) -> Objects | None:
    """The objects of a JSON text, known kinds as their models; None where the general reader must read it."""
    start = data.lstrip()[:1]
    if start not in (b"{", b"["):
        return None
    if not data.isascii():
        try:
            data.decode("utf-8")  # the fields no Struct reads are skipped unchecked
        except UnicodeDecodeError:
            return None
    out: Objects = []
    limit = max_object_bytes if len(data) > max_object_bytes else None
    try:
        if start == b"[":
            for raw in _array.decode(data):
                _flatten(raw, out, limit)
        else:
            _flatten(msgspec.Raw(data), out, limit)
    except (_Elsewhere, msgspec.DecodeError, InputError, RecursionError):
        return None
    return out


def _flatten(raw: msgspec.Raw, out: Objects, limit: int | None) -> None:
    """An object, or a List's items in turn (as snapshot.flatten unpacks them)."""
    doc = _doc.decode(raw)  # an array or a scalar fails here: the general reader names it
    name = doc.kind
    if not isinstance(name, str) or not name:
        raise _Elsewhere  # no kind, or an empty one
    if name.endswith("List") and isinstance(doc.items, list):
        for item in doc.items:
            _flatten(item, out, limit)  # an item without kind (a typed list's) gets no kind here
        return
    if limit is not None and not within_by_length(len(raw), limit):
        raise _Elsewhere  # the general reader measures it (snapshot.within)
    api_version = doc.apiVersion if isinstance(doc.apiVersion, str) else ""
    kind = KINDS.get((group_of(api_version), name))
    if kind is None:
        out.append(_any.decode(raw))  # a kind berth does not read: counted by build_state
        return
    out.append(Decoded(normalise(kind, kind.decoder.decode(raw))))
