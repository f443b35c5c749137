"""Turning a decoded event into a state change: apply idempotently, keep the clock."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from berth.core.events import Event, format_time
from berth.core.model import Node, Pod
from berth.core.state import ClusterState

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(slots=True)
class Applied:
    obj: Any  # the model object, or None for a bookmark, an unknown kind or a stale event
    old: Any  # what the state held under that key before, if anything


class Applier:
    """Applies events in order. The clock is the newest `ts` seen (events without one keep it)."""

    def __init__(self, state: ClusterState, start: datetime | None = None) -> None:
        self.state = state
        self.now = start or EPOCH
        self.has_clock = start is not None

    @property
    def ts(self) -> str | None:
        return format_time(self.now) if self.has_clock else None

    def apply(self, ev: Event) -> Applied:
        if ev.ts is not None and (not self.has_clock or ev.ts > self.now):
            self.now = ev.ts
            self.has_clock = True
        obj = ev.model
        if obj is None:
            return Applied(None, None)
        old = self._current(obj)
        if not self.state.apply(obj, ev.deleted):
            return Applied(None, old)
        return Applied(obj, old)

    def _current(self, obj: Any) -> Any:
        cls = type(obj)  # models are final classes
        if cls is Pod:
            return self.state.pods.get(obj.key)
        if cls is Node:
            return self.state.nodes.get(obj.name)
        return None
