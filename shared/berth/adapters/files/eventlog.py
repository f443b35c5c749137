"""Event log files: JSON Lines, optionally gzip-compressed, read line by line with rejects kept."""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import msgspec

from berth.core.api.kinds import KINDS
from berth.core.api.watch import Event, UnreadableObject, WatchEvent, encode_event, parse_event, peek_event
from berth.core.errors import InputError
from berth.core.pipeline.initial import InitialState


class Reject(msgspec.Struct, frozen=True):
    source: str
    line: int
    reason: str
    text: str


READ_BUFFER = 1 << 20  # a log is read in 1 MiB chunks: a line at a time from 8 KiB costs 3x the CPU


def open_log(path: str, mode: str = "rb") -> IO[bytes]:
    try:
        if path.endswith(".gz"):
            # mtime=0: the same events give the same bytes (gzip headers otherwise carry the time)
            return gzip.GzipFile(path, mode, mtime=0)  # type: ignore[return-value]
        return open(path, mode, buffering=READ_BUFFER if mode == "rb" else -1)
    except OSError as e:
        raise InputError(path, "", e.strerror or str(e)) from None


def read_events(
    path: str, rejects: list[Reject] | None = None, strict: bool = False, unreadable: list[Reject] | None = None
) -> Iterator[Event]:
    """Decoded events in log order, for engines: without their wire Structs (`parse_event`'s `wire`).
    From the first event without ts on, the objects' times are read too (`parse_event`'s `times`: a
    log without ts gets its clock from them, berth.core.pipeline.clock), in the same decode.
    A bad line goes to `rejects` (or raises when strict) and reading goes on;
    a well-formed event whose object does not decode goes to `unreadable` if given, with the event in
    berth's line as its text."""
    times = False
    with open_log(path) as f:
        try:
            for number, line in enumerate(f, start=1):
                if line.isspace():  # blank (a line read is never empty); strip() would copy it
                    continue
                try:
                    ev = parse_event(line, number, wire=False, times=times)
                    if ev.ts is None and not times and ev.type != "BOOKMARK":
                        times = True  # a log without ts: from here on its objects' times come with the decode
                        ev = parse_event(line, number, wire=False, times=True)
                    yield ev
                except InputError as e:
                    if strict or rejects is None:
                        where = e.line().removeprefix(f"line {number}: ")
                        raise InputError(path, f"line {number}", where) from None
                    if isinstance(e, UnreadableObject):  # at its line, whatever "position" the line claims
                        kept = rejects if unreadable is None else unreadable
                        kept.append(Reject(path, number, e.line(), e.canonical.decode("utf-8", "replace")))
                        continue
                    rejects.append(
                        Reject(
                            path,
                            number,
                            e.line().removeprefix(f"line {number}: "),
                            line.decode("utf-8", "replace").rstrip("\n"),
                        )
                    )
        except (OSError, EOFError, zlib.error) as e:  # gzip.BadGzipFile is an OSError
            raise InputError(path, "", f"cannot read: {e}") from None


def initial_state_end(paths: list[str]) -> int:
    """The position (line numbers running on across the logs, as `berth replay` numbers them) of the
    last event of the logs' initial lists (berth.core.pipeline.initial); 0 when there is none. Reads
    each line's envelope only, and only as far as it must."""
    found = InitialState(frozenset(KINDS))
    offset = 0
    for path in paths:
        last = 0
        with open_log(path) as f:
            try:
                for number, line in enumerate(f, start=1):
                    if line.isspace():
                        continue
                    last = number
                    peeked = peek_event(line)
                    if peeked is not None and not found.see(offset + number, *peeked):
                        return found.end
            except (OSError, EOFError, zlib.error) as e:
                raise InputError(path, "", f"cannot read: {e}") from None
        offset += last
    return found.end


class EventWriter:
    """Appends events in berth's canonical format; `.gz` paths are compressed."""

    def __init__(self, path: str) -> None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        self._f = open_log(path, "wb")

    def write(self, ev: WatchEvent) -> None:
        self._f.write(encode_event(ev) + b"\n")

    def close(self) -> None:
        self._f.close()

    def __enter__(self) -> EventWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def write_rejects(path: str, rejects: list[Reject]) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        for r in rejects:
            f.write(msgspec.json.encode(r) + b"\n")
