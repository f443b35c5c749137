"""The times an object carries, for a line without `ts` (berth.core.pipeline.clock): the latest of its
creationTimestamp, deletionTimestamp, status.updateTime (NodeMetric) and its conditions' times.

They are read in the decode that reads the object (berth.core.api.watch, `parse_event(times=True)`),
not by a second pass over the line: `timed` makes a kind's wire Struct a variant that also holds them,
and `TimedHead` is the head of a kind berth does not read. Both take only strings (or null) there;
anything else fails the variant, and the step-by-step path reads the times from the object as Python
data (`data_time`), where a time that is not a string gives the object no time at all.
"""

from __future__ import annotations

import types
from datetime import datetime
from typing import Any, Union, get_args, get_origin, get_type_hints

import msgspec

from berth.core.api.meta.normalise import parse_time
from berth.core.api.meta.wire import Head, Names, ObjectMeta, Wire


class ConditionTimes(Wire, frozen=True):
    last_transition_time: str | None = None
    last_heartbeat_time: str | None = None
    last_probe_time: str | None = None
    last_update_time: str | None = None


class StatusTimes(Wire, frozen=True):
    update_time: str | None = None
    conditions: list[ConditionTimes] | None = None


class MetaTimes(Wire, frozen=True):
    creation_timestamp: str | None = None
    deletion_timestamp: str | None = None


class ObjectTimes(Wire, frozen=True):
    """An object's times, as its Python data converts (`data_time`)."""

    metadata: MetaTimes = msgspec.field(default_factory=MetaTimes)
    status: StatusTimes | None = None


class _NamedTimes(MetaTimes, frozen=True):
    name: str = ""
    namespace: str = ""


class TimedHead(Wire, frozen=True):
    """Head (berth.core.api.meta.wire) with the object's times: a kind berth does not read."""

    kind: str = ""
    api_version: str = ""
    metadata: _NamedTimes = msgspec.field(default_factory=_NamedTimes)  # null: fails, as a time would
    status: StatusTimes | None = None

    def head(self) -> Head:
        return Head(self.kind, self.api_version, Names(self.metadata.name, self.metadata.namespace))


class _TimedMeta(ObjectMeta, frozen=True):
    deletion_timestamp: str | None = None


_TIMES = tuple(msgspec.structs.fields(ConditionTimes))


def _variant(cls: type[Any], fields: list[tuple[str, Any, Any]], **config: Any) -> type[Any]:
    return msgspec.defstruct(cls.__name__, fields, bases=(cls,), frozen=True, gc=False, **config)


def _optional_struct(hint: Any) -> type[Any] | None:
    """X of `X | None` when X is a Struct, else None."""
    if get_origin(hint) not in (Union, types.UnionType):
        return None
    structs = [a for a in get_args(hint) if isinstance(a, type) and issubclass(a, msgspec.Struct)]
    return structs[0] if len(structs) == 1 and type(None) in get_args(hint) else None


def _timed_status(cls: type[Any]) -> type[Any]:
    """A status Struct that also holds updateTime and its conditions' times."""
    hints = get_type_hints(cls)
    fields: list[tuple[str, Any, Any]] = []
    if "update_time" not in hints:
        fields.append(("update_time", str | None, None))
    conditions = hints.get("conditions")
    if conditions is None:
        fields.append(("conditions", list[ConditionTimes] | None, None))
    else:  # list[C] | None: each condition with all four times
        condition = get_args(get_args(conditions)[0])[0]
        have = get_type_hints(condition)
        extra = [(f.name, str | None, None) for f in _TIMES if f.name not in have]
        fields.append(("conditions", list[_variant(condition, extra)] | None, None))  # type: ignore[misc]
    return _variant(cls, fields)


def timed(cls: type[Any]) -> type[Any]:
    """A kind's wire Struct that also holds the times the clock reads (tagged as the Struct is). A status
    kept as it arrives (Any) is left so: its times are read from its Python data."""
    hints = get_type_hints(cls)
    fields: list[tuple[str, Any, Any]] = [("metadata", _TimedMeta, None)]  # null metadata fails: no times
    status = hints.get("status")
    if status is None:
        fields.append(("status", StatusTimes | None, None))
    elif (struct := _optional_struct(status)) is not None:
        fields.append(("status", _timed_status(struct) | None, None))
    return _variant(cls, fields, tag=cls.__struct_config__.tag)


def latest(texts: list[Any]) -> datetime | None:
    """The latest of these times (None: none that parses)."""
    times = []
    for text in texts:
        if text:
            try:
                times.append(parse_time(text))
            except ValueError:
                continue
    return max(times, default=None)


def _status_texts(status: Any) -> list[Any]:
    if status is None:
        return []
    texts = [status.update_time]
    for c in status.conditions or ():
        texts += [c.last_transition_time, c.last_heartbeat_time, c.last_probe_time, c.last_update_time]
    return texts


def object_time(obj: Any) -> datetime | None:
    """The latest time of a `timed` Struct or a TimedHead."""
    meta = obj.metadata
    texts = [] if meta is None else [meta.creation_timestamp, meta.deletion_timestamp]
    status = obj.status
    if status is not None and not isinstance(status, msgspec.Struct):  # kept as it arrived (Any)
        try:
            status = msgspec.convert(status, StatusTimes)
        except msgspec.ValidationError:
            return None
    return latest(texts + _status_texts(status))


def data_time(value: Any) -> datetime | None:
    """The latest time of an object as Python data (None also when a time is not a string)."""
    try:
        return object_time(msgspec.convert(value, ObjectTimes))
    except msgspec.ValidationError:
        return None
