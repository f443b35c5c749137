"""Cluster events: one Kubernetes watch event per log line or bus message, decoded once at the edge.

Accepted line shapes (see docs/event-log.md):
- berth's own:        {"ts": RFC3339, "type": ADDED|MODIFIED|DELETED|BOOKMARK, "object": {...}}
- kubectl watch:      {"type": ..., "object": {...}}            (no ts: line order is event order)
- scheduler simulator {"time": RFC3339, "event": Add|Update|Delete, "resource": {...}}

`parse_event` decodes a line in one pass: the envelope, and the object straight into its kind's
wire Struct (a union tagged by `kind`), then normalises it into its model (berth.core.api.kinds). When
that pass does not fit (a kind berth does not read, a BOOKMARK, anything malformed), the line is read
step by step: the envelope with the object left as raw bytes, the object's kind and names, then the
object by kind; that path names what is wrong. An `Event`
carries that model; `WatchEvent` is the other direction, an object as a dict on its way out
(the watcher, the generator), written in berth's canonical line by `encode_event`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Generic, TypeVar, Union

import msgspec

from berth.core.api.kinds import BY_WIRE, KINDS, ONE_PASS, TIMED, decode_wire, describe
from berth.core.api.meta.normalise import Bad, TimeRangeError, group_of, kept_time, parse_time
from berth.core.api.meta.times import TimedHead, data_time, object_time
from berth.core.api.meta.wire import Head, Names, bus_key, tolerant_head
from berth.core.errors import InputError
from berth.core.ports import Message

TYPES = ("ADDED", "MODIFIED", "DELETED", "BOOKMARK")
_UNSET = msgspec.UNSET
_SIMULATOR = {"Add": "ADDED", "Update": "MODIFIED", "Delete": "DELETED"}


INITIAL_EVENTS_END = "k8s.io/initial-events-end"  # kube's own: a kind's initial list is complete
INITIAL_LISTS = "berth.io/initial-lists"  # berth's watcher, at its start: the kinds it is about to list


class ListMarker(msgspec.Struct, frozen=True, gc=False):
    """What a BOOKMARK says about the watcher's first lists: `begin` names the kinds about to be
    listed (berth's watcher, at its start); `end` is a kind whose initial list is complete (kube's
    `k8s.io/initial-events-end`)."""

    begin: tuple[tuple[str, str], ...] = ()
    end: tuple[str, str] | None = None


class Event(msgspec.Struct, frozen=True, gc=False):
    """A decoded watch event. `position` is where it came from (a log line number or a bus offset).

    model: the object's model, or None for a BOOKMARK or a kind berth does not read.
    kind: (API group, kind) of the object; None for a BOOKMARK.
    key: the bus key, kind/namespace/name, so that one object's events stay in order.
    raw: the object's JSON bytes as they arrived; line: the whole line or message.
    wire: the object as its kind's wire Struct (what the indexer keeps in Redis), with model; None
    when the decoder was asked not to keep it (`parse_event`'s `wire`).
    marker: a BOOKMARK's word on the first lists, if it has one.
    object_time: for a line without ts decoded with `times`, the latest time its object carries
    (berth.core.api.meta.times), read in the same decode; else None.
    """

    type: str
    model: Any
    kind: tuple[str, str] | None
    key: bytes
    line: bytes
    ts: datetime | None = None
    position: int = 0
    wire: Any = None
    marker: ListMarker | None = None
    object_time: datetime | None = None

    @property
    def deleted(self) -> bool:
        return self.type == "DELETED"

    @property
    def raw(self) -> msgspec.Raw:
        """The object's JSON bytes as they arrived."""
        envelope = _line.decode(self.line)
        return envelope.resource if envelope.event is not None or envelope.resource else envelope.object


class UnreadableObject(InputError):
    """A well-formed event whose object does not decode; `canonical` is the event in berth's line."""

    def __init__(self, e: InputError, canonical: bytes, position: int) -> None:
        super().__init__(e.obj, e.field, e.problem)
        self.canonical = canonical
        self.position = position


class _Line(msgspec.Struct):
    ts: str | None = None
    position: int | None = None
    type: str | None = None
    object: msgspec.Raw = msgspec.Raw()
    time: str | None = None
    event: str | None = None
    resource: msgspec.Raw = msgspec.Raw()


class _Out(msgspec.Struct, omit_defaults=True, kw_only=True):
    ts: str | None = None
    type: str
    object: Any
    position: int = 0


def _one_pass_decoder(structs: tuple[type[Any], ...]) -> msgspec.json.Decoder[Any]:
    """The one-pass envelope: the object (or the simulator's resource) as any of these kinds' wire
    Structs; an object of another kind fails at its `kind`, before the rest is read."""
    objects = Union[structs] | msgspec.UnsetType | None  # type: ignore[valid-type]  # noqa: UP007
    typed = msgspec.defstruct(
        "_Typed",
        [
            ("ts", str | None, None),
            ("position", int | None, None),
            ("type", str | None, None),
            ("object", objects, msgspec.UNSET),
            ("time", str | None, None),
            ("event", str | None, None),
            ("resource", objects, msgspec.UNSET),
        ],
        gc=False,  # holds strings and a wire Struct (itself not tracked): never in a cycle
    )
    return msgspec.json.Decoder(typed)


_typed = _one_pass_decoder(ONE_PASS)
_timed = _one_pass_decoder(TIMED)  # with the objects' times
# by `only` and `times`; bounded
_TYPED_ONLY: dict[tuple[frozenset[tuple[str, str]], bool], msgspec.json.Decoder[Any] | None] = {}


def _typed_only(only: frozenset[tuple[str, str]], times: bool) -> msgspec.json.Decoder[Any] | None:
    """The one-pass decoder of the kinds in `only` (None when it names none berth reads). Callers
    pass the same set for every line (ScorerEngine.reads): a frozenset keeps its hash and the dict
    finds it by identity, without comparing sets."""
    if (only, times) in _TYPED_ONLY:
        return _TYPED_ONLY[only, times]
    structs = tuple(w for w in (TIMED if times else ONE_PASS) if BY_WIRE[w][0] in only)
    decoder = _one_pass_decoder(structs) if structs else None
    if len(_TYPED_ONLY) >= 64:
        _TYPED_ONLY.clear()
    _TYPED_ONLY[only, times] = decoder
    return decoder


H = TypeVar("H", Head, TimedHead)


class _HeadLine(msgspec.Struct, Generic[H]):
    """The envelope with only the object's kind and names (Head), or with its times too (TimedHead):
    enough to pass over a kind not asked for."""

    ts: str | None = None
    position: int | None = None
    type: str | None = None
    object: H | msgspec.UnsetType | None = msgspec.UNSET
    time: str | None = None
    event: str | None = None
    resource: H | msgspec.UnsetType | None = msgspec.UNSET


_head_line = msgspec.json.Decoder(_HeadLine[Head])
_timed_head_line = msgspec.json.Decoder(_HeadLine[TimedHead])
_timed_head = msgspec.json.Decoder(TimedHead)
_line = msgspec.json.Decoder(_Line)
_head = msgspec.json.Decoder(Head)
_any = msgspec.json.Decoder()
_encoder = msgspec.json.Encoder()


def format_time(ts: datetime) -> str:
    return ts.isoformat().replace("+00:00", "Z")


MAX_LINE_BYTES = 3 * 1024 * 1024  # one line or message: the API server's own limit on a request body


def parse_event(
    line: bytes | str,
    position: int = 0,
    only: frozenset[tuple[str, str]] | None = None,
    wire: bool = True,
    times: bool = False,
) -> Event:
    """One event from one line; InputError names what is wrong with it (UnreadableObject: its object).
    only: the kinds to decode (the others are left undecoded, as kinds berth does not read).
    wire: keep the object's wire Struct on the event (the indexer stores it). Engines read only the
    model: without it the wire Struct is freed at once, while it is still in the CPU's caches, not
    when the event is dropped, thousands of events later.
    times: for a line without ts, read the object's times in the same decode (Event.object_time);
    the wire Struct is then not kept.
    Bounded: at most MAX_LINE_BYTES, nested no deeper than the decoder's recursion limit, UTF-8."""
    data = line.encode() if isinstance(line, str) else line
    if len(data) > MAX_LINE_BYTES:
        raise InputError(_where(position), "", f"longer than {MAX_LINE_BYTES} bytes ({len(data)})")
    try:
        return _parse(data, position, only, wire and not times, times)
    except RecursionError:
        raise InputError(_where(position), "", "nested too deeply to decode") from None
    except UnicodeDecodeError as e:
        raise InputError(_where(position), "", f"not UTF-8 ({e.reason})") from None
    except (msgspec.ValidationError, msgspec.DecodeError) as e:
        raise InputError(_where(position), "", f"invalid JSON: {e}") from None


def _where(position: int) -> str:
    return f"line {position}" if position else "event"


def _parse(data: bytes, position: int, only: frozenset[tuple[str, str]] | None, wire: bool, times: bool) -> Event:
    decoder = (_timed if times else _typed) if only is None else _typed_only(only, times)
    try:
        typed = None if decoder is None else decoder.decode(data)
    except (msgspec.ValidationError, msgspec.DecodeError):
        typed = None  # with `only`, also a kind not asked for (it fails at its `kind`)
    ev = None if typed is None else _one_pass(typed, data, position, only, wire, times)
    if ev is not None:
        return ev
    if only is not None:
        ev = _passed_over(data, position, only, times)
        if ev is not None:
            return ev
    return _step_by_step(data, position, only, wire, times)


def _passed_over(data: bytes, position: int, only: frozenset[tuple[str, str]], times: bool) -> Event | None:
    """The event of a well-formed line whose kind is not in `only`, left undecoded; else None."""
    try:
        head = (_timed_head_line if times else _head_line).decode(data)
    except (msgspec.ValidationError, msgspec.DecodeError):
        return None
    if head.event is not None or head.resource is not msgspec.UNSET:
        etype, obj, stamp = _SIMULATOR.get(head.event or ""), head.resource, head.time
    else:
        etype, obj, stamp = head.type, head.object, head.ts
    if etype is None or etype not in TYPES or etype == "BOOKMARK" or not isinstance(obj, Head | TimedHead):
        return None
    seen = obj.head() if isinstance(obj, TimedHead) else obj
    if not seen.kind:
        return None
    kind = (group_of(seen.apiVersion), seen.kind)
    if kind in only:
        return None
    try:
        ts = parse_time(stamp) if stamp else None
    except ValueError:
        return None
    meta = seen.metadata or Names()
    at = head.position if head.position is not None else position
    when = object_time(obj) if ts is None and isinstance(obj, TimedHead) else None
    return Event(etype, None, kind, bus_key(seen.kind, meta.namespace, meta.name), data, ts, at, object_time=when)


def peek_event(line: bytes) -> tuple[str, tuple[str, str] | None, datetime | None] | None:
    """A line's type, kind and `ts` only, without its object (None: a line that does not read so)."""
    try:
        head = _head_line.decode(line)
    except (msgspec.ValidationError, msgspec.DecodeError, RecursionError, UnicodeDecodeError):
        return None
    if head.event is not None or head.resource is not msgspec.UNSET:
        etype, obj, stamp = _SIMULATOR.get(head.event or ""), head.resource, head.time
    else:
        etype, obj, stamp = head.type, head.object, head.ts
    if etype not in TYPES:
        return None
    try:
        ts = parse_time(stamp) if stamp else None
    except ValueError:
        return None
    kind = (group_of(obj.apiVersion), obj.kind) if isinstance(obj, Head) and obj.kind else None
    return etype, kind, ts


_CHANGES = frozenset(TYPES) - {"BOOKMARK"}
_NOT_READ = (("", ""), None)
# (wire Struct, apiVersion) -> (kind, its Kind); _NOT_READ when the apiVersion is of another API
# group (the same kind name in a group berth does not read); a bounded cache
_READ: dict[tuple[type[Any], str | None], tuple[tuple[str, str], Any]] = {}


def _read_as(cls: type[Any], api: str | None) -> tuple[tuple[str, str], Any]:
    kind, known = BY_WIRE[cls]
    out = (kind, known) if group_of(api or "") == kind[0] else _NOT_READ
    if len(_READ) < 256:
        _READ[cls, api] = out
    return out


def _one_pass(
    typed: Any, data: bytes, position: int, only: frozenset[tuple[str, str]] | None, wire: bool, times: bool
) -> Event | None:
    """The event from the one-pass decode, or None when the step-by-step path must decide."""
    if typed.event is not None or typed.resource is not _UNSET:
        etype, obj, stamp = _SIMULATOR.get(typed.event or ""), typed.resource, typed.time
    else:
        etype, obj, stamp = typed.type, typed.object, typed.ts
    if etype not in _CHANGES or obj is None or obj is _UNSET:
        return None
    cls, api = type(obj), obj.api_version
    kind, known = _READ.get((cls, api)) or _read_as(cls, api)
    if known is None or (only is not None and kind not in only):
        return None  # the same kind name in another API group (not one berth reads), or not asked for
    try:
        ts = (kept_time(stamp) or parse_time(stamp)) if stamp else None
        model = known.normalise(obj)  # what does not normalise is named by the step-by-step path
    except (ValueError, Bad, InputError):
        return None
    meta = obj.metadata
    key = bus_key(kind[1], meta.namespace, meta.name) if meta is not None else bus_key(kind[1], None, None)
    at = typed.position if typed.position is not None else position
    when = object_time(obj) if times and ts is None else None
    return Event(etype, model, kind, key, data, ts, at, obj if wire else None, object_time=when)


def _step_by_step(
    data: bytes, position: int, only: frozenset[tuple[str, str]] | None, wire: bool, times: bool
) -> Event:
    where = _where(position)
    try:
        raw = _line.decode(data)
    except msgspec.ValidationError as e:
        raise InputError(where, "", f"not a watch event: {e}") from None
    except msgspec.DecodeError as e:
        raise InputError(where, "", f"invalid JSON: {e}") from None
    etype: str | None
    if raw.event is not None or raw.resource:
        etype = _SIMULATOR.get(raw.event or "")
        if etype is None:
            raise InputError(where, "event", f"want Add, Update or Delete, got {raw.event!r}")
        obj, stamp = raw.resource, raw.time
    else:
        etype, obj, stamp = raw.type, raw.object, raw.ts
    if etype is None or etype not in TYPES:
        raise InputError(where, "type", f"want one of {', '.join(TYPES)}, got {etype!r}")
    if not obj or obj == b"null":
        raise InputError(where, "object", "is required")
    when: datetime | None = None
    try:
        if times:
            timed = _timed_head.decode(obj)
            head, when = timed.head(), object_time(timed)
        else:
            head = _head.decode(obj)
    except msgspec.ValidationError:
        value = _any.decode(obj)
        if not isinstance(value, dict):
            got = {list: "array", bool: "bool", int: "int", float: "float", str: "str"}.get(type(value), "value")
            raise InputError(
                where, "", f"not a watch event: Expected `object | null`, got `{got}` - at `$.object`"
            ) from None
        head = tolerant_head(value)
        when = data_time(value) if times else None
    ts = None
    if stamp:
        try:
            ts = parse_time(stamp)
        except TimeRangeError as e:
            raise InputError(where, "ts", str(e)) from None
        except ValueError:
            raise InputError(where, "ts", f"invalid RFC 3339 time {stamp!r}") from None
    at = raw.position if raw.position is not None else position
    meta = head.metadata or Names()
    key = bus_key(head.kind, meta.namespace, meta.name)
    when = when if ts is None else None
    if etype == "BOOKMARK":
        return Event(etype, None, None, key, data, ts, at, marker=_marker(obj))
    if not head.kind:
        names = {"name": meta.name or None, "namespace": meta.namespace}
        raise InputError(where, f"{describe(None, names)}: kind", "is required")
    kind = (group_of(head.apiVersion), head.kind)
    known = KINDS.get(kind) if only is None or kind in only else None
    if known is None:
        return Event(etype, None, kind, key, data, ts, at, object_time=when)
    try:
        struct, model = decode_wire(known, obj)
    except InputError as e:
        out = _Out(ts=None if ts is None else format_time(ts), type=etype, object=obj, position=at)
        raise UnreadableObject(e, _encoder.encode(out), at) from None
    return Event(etype, model, kind, key, data, ts, at, struct if wire else None, object_time=when)


class _Annotated(msgspec.Struct):
    annotations: dict[str, str] | None = None


class _MarkerObject(msgspec.Struct):
    kind: str = ""
    apiVersion: str = ""
    metadata: _Annotated | None = None


_marker_object = msgspec.json.Decoder(_MarkerObject)


def _marker(obj: bytes) -> ListMarker | None:
    """The ListMarker of a BOOKMARK's object, or None (a plain bookmark, or annotations that do not read)."""
    try:
        head = _marker_object.decode(obj)
    except (msgspec.ValidationError, msgspec.DecodeError):
        return None
    notes = (head.metadata.annotations if head.metadata is not None else None) or {}
    if notes.get(INITIAL_EVENTS_END) == "true" and head.kind:
        return ListMarker(end=(group_of(head.apiVersion), head.kind))
    listed = notes.get(INITIAL_LISTS)
    if listed is None:
        return None
    kinds = [k.strip().rpartition("/") for k in listed.split(",") if k.strip()]
    return ListMarker(begin=tuple((group, kind) for group, _, kind in kinds))


def begin_marker(kinds: list[tuple[str, str]]) -> dict[str, Any]:
    """A BOOKMARK's object naming the kinds a watcher is about to list (as group/Kind, core kinds as /Kind)."""
    listed = ",".join(f"{group}/{kind}" for group, kind in kinds)
    return {"metadata": {"annotations": {INITIAL_LISTS: listed}}}


def end_marker(api_version: str, kind: str, resource_version: str) -> dict[str, Any]:
    """A BOOKMARK's object saying that the kind's initial list is complete, as kube's watch-list ends it."""
    meta = {"resourceVersion": resource_version, "annotations": {INITIAL_EVENTS_END: "true"}}
    return {"apiVersion": api_version, "kind": kind, "metadata": meta}


def encode_line(ev: Event, with_position: bool = False) -> bytes:
    """berth's canonical line for a decoded event (without the newline); the object's bytes as they came."""
    ts = None if ev.ts is None else format_time(ev.ts)
    return _encoder.encode(_Out(type=ev.type, object=ev.raw, ts=ts, position=ev.position if with_position else 0))


class WatchEvent(msgspec.Struct, frozen=True):
    """An event on its way out: the object as the API server sent it, or as the generator made it.

    object: a dict, or the object's JSON bytes as they came (the watcher: written out as they are,
    never decoded into a dict). key: the bus key, when the maker knows it (the watcher read the names)."""

    type: str
    object: dict[str, Any] | msgspec.Raw
    ts: datetime | None = None
    position: int = 0
    key: bytes = b""

    @property
    def deleted(self) -> bool:
        return self.type == "DELETED"

    def decoded(self) -> Event:
        """The event as a consumer reads it from berth's line."""
        return parse_event(encode_event(self, with_position=True), self.position)


def encode_event(ev: WatchEvent, with_position: bool = False) -> bytes:
    """berth's canonical line (without the newline); an object's bytes are written as they came. On the
    bus the log position travels along."""
    ts = None if ev.ts is None else format_time(ev.ts)
    return _encoder.encode(_Out(type=ev.type, object=ev.object, ts=ts, position=ev.position if with_position else 0))


def event_key(ev: WatchEvent) -> bytes:
    """The bus key: kind, namespace and name, so that one object's events stay in order."""
    if ev.key:
        return ev.key
    if isinstance(ev.object, msgspec.Raw):
        head = _head.decode(ev.object)
        names = head.metadata or Names()
        return bus_key(head.kind, names.namespace, names.name)
    meta = ev.object.get("metadata") or {}
    return bus_key(ev.object.get("kind", ""), meta.get("namespace", ""), meta.get("name", ""))


def decode_message(msg: Message, only: frozenset[tuple[str, str]] | None = None) -> Event:
    """The event a bus message holds: the one it carries already decoded (the in-memory bus, in this
    process), or decoded from its bytes (only: as `parse_event`), for an engine: without its wire
    Struct. A message without a position is at its offset + 1."""
    ev: Event | None = getattr(msg, "event", None)
    return ev if ev is not None else parse_event(msg.value, msg.offset + 1, only, wire=False)
