"""A clock for logs without `ts` (plain kubectl watch output): the newest time the objects carry.

An event's time is the latest of its object's creationTimestamp, deletionTimestamp, status.updateTime
(NodeMetric) and its conditions' times (berth.core.api.meta.times), read in the decode that read the
event (`parse_event(times=True)`: Event.object_time); the clock is the newest such time seen so far,
so it never goes back. An event whose object carries no time keeps the clock where it is.
"""

from __future__ import annotations

from datetime import datetime

from berth.core.api.watch import Event


class ObjectClock:
    """Gives events without `ts` a monotonic time from their objects."""

    def __init__(self) -> None:
        self.now: datetime | None = None

    def time(self, ev: Event) -> datetime | None:
        """The clock after an event decoded with `times`."""
        t = ev.object_time
        if t is not None and (self.now is None or t > self.now):
            self.now = t
        return self.now
