"""Turning a decoded event into a state change: apply idempotently, keep the clock."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import msgspec

from berth.core.api.core.model import Node, Pod
from berth.core.api.watch import Event, format_time
from berth.core.cache.state import ClusterState

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class Applied(msgspec.Struct, gc=False):
    """One per event: a Struct, made in a third of a dataclass's time."""

    obj: Any  # the model object, or None for a bookmark, an unknown kind or a stale event
    old: Any  # what the state held under that key before, if anything


class Applier:
    """Applies events in order. The clock is the newest `ts` seen (events without one keep it)."""

    def __init__(self, state: ClusterState, start: datetime | None = None) -> None:
        self.state = state
        self.now = start or EPOCH
        self.has_clock = start is not None
        self._ts: tuple[datetime | None, str] = (None, "")  # `now` and its text, made once per clock value

    @property
    def ts(self) -> str | None:
        if not self.has_clock:
            return None
        now = self.now
        if self._ts[0] is not now:
            self._ts = (now, format_time(now))
        return self._ts[1]

    def apply(self, ev: Event) -> Applied:
        ts = ev.ts
        if ts is not None and (not self.has_clock or (ts is not self.now and ts > self.now)):
            self.now = ts
            self.has_clock = True
        obj = ev.model
        if obj is None:
            return Applied(None, None)
        cls = type(obj)  # models are final classes
        state = self.state
        old = state.pods.get(obj.key) if cls is Pod else state.nodes.get(obj.name) if cls is Node else None
        if not state.apply(obj, ev.type == "DELETED"):
            return Applied(None, old)
        return Applied(obj, old)
