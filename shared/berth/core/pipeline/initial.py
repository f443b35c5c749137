"""Where a log's initial state ends: the events a scheduler would have in its caches before it decides.

kube-scheduler waits for its informers' first lists before it schedules anything. A log replays the same
way: nothing is decided until every kind's initial list has been read, whatever the order of the lines
(a `kubectl get --watch` per resource, appended to one file or to files replayed one after another,
puts one kind's list before or among another's). The initial list of a kind is:

- its ADDED events from its first event on, until its first MODIFIED or DELETED event, or until a
  MODIFIED or DELETED event of any kind comes after its first event (that watch is past its list, so
  an ADDED after it is a new object, not a listed one);
- and, in a log whose lines carry `ts`, only lines no later than the first line's `ts` (the time the
  lists were taken; a later line is a change).

The initial state ends at the last event of any kind's initial list. BOOKMARK lines take no part.
"""

from __future__ import annotations

from datetime import datetime

CHANGES = ("MODIFIED", "DELETED")


class InitialState:
    """Fed each event's (position, type, kind, ts) in log order; `end` is the position of the last
    event of the initial state so far (0: none). `see` returns False once no later event can be part
    of it (the rest of the log need not be read)."""

    def __init__(self, kinds: frozenset[tuple[str, str]] | None = None) -> None:
        """kinds: the kinds that matter, when known (every one closed: done)."""
        self.kinds = kinds
        self.end = 0
        self._first_ts: datetime | None = None
        self._started: dict[tuple[str, str], int] = {}  # kind -> position of its first event
        self._closed: set[tuple[str, str]] = set()  # kinds whose initial list is over
        self._last_change = 0  # position of the latest MODIFIED or DELETED event

    def see(self, position: int, etype: str, kind: tuple[str, str] | None, ts: datetime | None) -> bool:
        if etype == "BOOKMARK" or kind is None:
            return True
        if ts is not None:
            if self._first_ts is None:
                self._first_ts = ts
            elif ts > self._first_ts:
                return False
        if kind not in self._closed:
            first = self._started.setdefault(kind, position)
            if etype != "ADDED" or self._last_change > first:
                self._closed.add(kind)
            else:
                self.end = position
        if etype in CHANGES:
            self._last_change = position
        return self.kinds is None or not self.kinds <= self._closed
