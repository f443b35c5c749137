"""Turning an event into a state change: convert at the edge, apply idempotently, keep the clock."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from berth.core.convert import Converter, kind_key
from berth.core.errors import InputError
from berth.core.events import Event, encode_event, format_time
from berth.core.kinds import CONVERTERS
from berth.core.pipeline.records import RejectRecord
from berth.core.state import ClusterState

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass
class Applied:
    obj: Any  # the model object, or None for a bookmark, an unknown kind or a stale event
    old: Any  # what the state held under that key before, if anything
    reject: RejectRecord | None = None


class Converted:
    """Models converted from raw objects, shared by the engines that read the same events in one
    process (the embedded pipeline), so each raw object is converted once. Models are immutable.
    Keyed by the raw object's identity, which the entry keeps alive; the oldest entries go first."""

    def __init__(self, size: int = 16384) -> None:
        self.size = size
        self._items: dict[int, tuple[dict[str, Any], Any]] = {}

    def convert(self, convert: Converter, raw: dict[str, Any]) -> Any:
        hit = self._items.get(id(raw))
        if hit is not None and hit[0] is raw:
            return hit[1]
        obj = convert(raw)
        if len(self._items) >= self.size:
            del self._items[next(iter(self._items))]
        self._items[id(raw)] = (raw, obj)
        return obj


class Applier:
    """Applies events in order. The clock is the newest `ts` seen (events without one keep it)."""

    def __init__(
        self,
        state: ClusterState,
        source: str = "stream",
        start: datetime | None = None,
        converted: Converted | None = None,
    ) -> None:
        self.state = state
        self.source = source
        self.now = start or EPOCH
        self.has_clock = start is not None
        self.converted = converted

    @property
    def ts(self) -> str | None:
        return format_time(self.now) if self.has_clock else None

    def apply(self, ev: Event) -> Applied:
        if ev.ts is not None and (not self.has_clock or ev.ts > self.now):
            self.now = ev.ts
            self.has_clock = True
        if ev.type == "BOOKMARK":
            return Applied(None, None)
        try:
            convert = CONVERTERS.get(kind_key(ev.object))
            if convert is None:
                return Applied(None, None)
            obj = convert(ev.object) if self.converted is None else self.converted.convert(convert, ev.object)
        except InputError as e:
            text = e.line()
            raw = encode_event(ev).decode()
            return Applied(None, None, RejectRecord(source=self.source, position=ev.position, reason=text, text=raw))
        old = self._current(obj)
        if not self.state.apply(obj, ev.deleted):
            return Applied(None, old)
        return Applied(obj, old)

    def _current(self, obj: Any) -> Any:
        name = type(obj).__name__
        if name == "Pod":
            return self.state.pods.get(obj.key)
        if name == "Node":
            return self.state.nodes.get(obj.name)
        return None
