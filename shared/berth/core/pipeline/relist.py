"""Objects the indexer kept, as events in relist order: what pods and buffers refer to first."""

from __future__ import annotations

from berth.core.api.kinds import KINDS, unpack
from berth.core.api.watch import Event
from berth.core.errors import InputError

Unpacked = tuple[int, str, Event]  # an object of a snapshot: (its kind's place in relist order, key, event)


def unpack_objects(objects: list[tuple[str, bytes]]) -> tuple[list[Unpacked], list[str]]:
    """An event that adds each object the indexer kept ((kind/namespace/name, msgpack) pairs), with
    its place in relist order, and the reasons for objects that could not be read."""
    out: list[Unpacked] = []
    bad: list[str] = []
    for key, data in objects:
        name = key.split("/", 1)[0]
        try:
            kind, wire, model = unpack(name, data)
        except InputError as e:
            bad.append(f"{key}: {e.line()}")
            continue
        out.append((KINDS[kind].relist, key, Event("ADDED", model, kind, key.encode(), b"", None, 0, wire)))
    return out, bad


def relisted(unpacked: list[Unpacked]) -> list[Event]:
    """The events in relist order: by the kind's relist rank (pods last), then by key."""
    unpacked.sort(key=lambda t: (t[0], t[1]))
    return [t[2] for t in unpacked]


def snapshot_events(objects: list[tuple[str, bytes]]) -> tuple[list[Event], list[str]]:
    """Events that add each object the indexer kept, in relist order, and the reasons for objects
    that could not be read."""
    unpacked, bad = unpack_objects(objects)
    return relisted(unpacked), bad
