"""A clock for logs without `ts` (plain kubectl watch output): the newest time the objects carry.

An event's time is the latest of its object's creationTimestamp, deletionTimestamp, status.updateTime
(NodeMetric) and its conditions' times; the clock is the newest such time seen so far, so it never
goes back. An event whose object carries no time keeps the clock where it is.
"""

from __future__ import annotations

from datetime import datetime

import msgspec

from berth.core.api.meta.normalise import parse_time


class _Meta(msgspec.Struct):
    creationTimestamp: str | None = None  # the API's names, as they come
    deletionTimestamp: str | None = None


class _Condition(msgspec.Struct):
    lastTransitionTime: str | None = None
    lastHeartbeatTime: str | None = None
    lastProbeTime: str | None = None
    lastUpdateTime: str | None = None


class _Status(msgspec.Struct):
    updateTime: str | None = None
    conditions: list[_Condition] | None = None


class _Times(msgspec.Struct):
    metadata: _Meta = msgspec.field(default_factory=_Meta)
    status: _Status | None = None


class _Line(msgspec.Struct):
    """A watch event's line with only its object's times: read in one pass over the line's bytes."""

    object: _Times | None = None
    event: str | None = None  # the scheduler simulator's line holds its object as `resource`
    resource: _Times | None = None


_decoder = msgspec.json.Decoder(_Line)


def object_time(line: bytes) -> datetime | None:
    """The latest time an event line's object carries, or None (no time, or not an object berth can
    read so)."""
    try:
        got = _decoder.decode(line)
    except msgspec.DecodeError:
        return None
    t = got.resource if got.event is not None or got.resource is not None else got.object
    if t is None:
        return None
    texts = [t.metadata.creationTimestamp, t.metadata.deletionTimestamp]
    if t.status is not None:
        texts.append(t.status.updateTime)
        for c in t.status.conditions or ():
            texts += [c.lastTransitionTime, c.lastHeartbeatTime, c.lastProbeTime, c.lastUpdateTime]
    times = []
    for text in texts:
        if text:
            try:
                times.append(parse_time(text))
            except ValueError:
                continue
    return max(times, default=None)


class ObjectClock:
    """Gives events without `ts` a monotonic time from their objects."""

    def __init__(self) -> None:
        self.now: datetime | None = None

    def time(self, line: bytes) -> datetime | None:
        """The clock after an event: line is the event's whole line, read once more for its object's times."""
        t = object_time(line)
        if t is not None and (self.now is None or t > self.now):
            self.now = t
        return self.now
