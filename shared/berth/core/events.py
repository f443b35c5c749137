"""Cluster events: one Kubernetes watch event per log line or bus message.

Accepted line shapes (see docs/event-log.md):
- berth's own:        {"ts": RFC3339, "type": ADDED|MODIFIED|DELETED|BOOKMARK, "object": {...}}
- kubectl watch:      {"type": ..., "object": {...}}            (no ts: line order is event order)
- scheduler simulator {"time": RFC3339, "event": Add|Update|Delete, "resource": {...}}
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import msgspec

from berth.core.errors import InputError
from berth.core.rawfields import describe, parse_time

TYPES = ("ADDED", "MODIFIED", "DELETED", "BOOKMARK")
_SIMULATOR = {"Add": "ADDED", "Update": "MODIFIED", "Delete": "DELETED"}


class Event(msgspec.Struct, frozen=True):
    """A watch event. `position` is where it came from (a log line number or a bus offset)."""

    type: str
    object: dict[str, Any]
    ts: datetime | None = None
    position: int = 0

    @property
    def deleted(self) -> bool:
        return self.type == "DELETED"


class _Line(msgspec.Struct):
    ts: str | None = None
    position: int | None = None
    type: str | None = None
    object: dict[str, Any] | None = None
    time: str | None = None
    event: str | None = None
    resource: dict[str, Any] | None = None


class _Out(msgspec.Struct, omit_defaults=True, kw_only=True):
    ts: str | None = None
    type: str
    object: dict[str, Any]
    position: int = 0


_decoder = msgspec.json.Decoder(_Line)
_encoder = msgspec.json.Encoder()


def parse_event(line: bytes | str, position: int = 0) -> Event:
    """One event from one line; InputError names what is wrong with it."""
    where = f"line {position}" if position else "event"
    try:
        raw = _decoder.decode(line)
    except msgspec.ValidationError as e:
        raise InputError(where, "", f"not a watch event: {e}") from None
    except msgspec.DecodeError as e:
        raise InputError(where, "", f"invalid JSON: {e}") from None
    etype: str | None
    if raw.event is not None or raw.resource is not None:
        etype = _SIMULATOR.get(raw.event or "")
        if etype is None:
            raise InputError(where, "event", f"want Add, Update or Delete, got {raw.event!r}")
        obj, stamp = raw.resource, raw.time
    else:
        etype, obj, stamp = raw.type, raw.object, raw.ts
    if etype is None or etype not in TYPES:
        raise InputError(where, "type", f"want one of {', '.join(TYPES)}, got {etype!r}")
    if obj is None:
        raise InputError(where, "object", "is required")
    if etype != "BOOKMARK" and not isinstance(obj.get("kind"), str):
        raise InputError(where, f"{describe(obj)}: kind", "is required")
    ts = None
    if stamp:
        try:
            ts = parse_time(stamp)
        except ValueError:
            raise InputError(where, "ts", f"invalid RFC 3339 time {stamp!r}") from None
    return Event(type=etype, object=obj, ts=ts, position=raw.position if raw.position is not None else position)


def format_time(ts: datetime) -> str:
    return ts.isoformat().replace("+00:00", "Z")


def encode_event(ev: Event, with_position: bool = False) -> bytes:
    """berth's canonical line (without the newline). On the bus the log position travels along."""
    ts = None if ev.ts is None else format_time(ev.ts)
    return _encoder.encode(_Out(type=ev.type, object=ev.object, ts=ts, position=ev.position if with_position else 0))


def event_key(ev: Event) -> bytes:
    """The bus key: kind, namespace and name, so that one object's events stay in order."""
    meta = ev.object.get("metadata") or {}
    return f"{ev.object.get('kind', '')}/{meta.get('namespace', '')}/{meta.get('name', '')}".encode()
