"""Buffer schedules: cron-like active windows, read from a buffer annotation.

    berth.dev/buffer-schedule: "TZ=Europe/Berlin; 0 8 * * Mon-Fri 10h; 0 10 * * Sat 4h30m"

An optional `TZ=<zone>` first (an IANA name, `UTC`, or an offset such as
`+05:30`; default UTC), then windows separated by `;` or newlines. A window is
five cron fields (minute hour day-of-month month day-of-week) and a duration:
it opens at every time the fields match and stays open for the duration.
Fields take `*`, numbers, names (jan..dec, sun..sat), ranges `a-b`, steps `/n`
and lists `a,b`; day-of-week 0 and 7 are Sunday. As in cron, when both
day-of-month and day-of-week are restricted (neither starts with `*`), a day
matching either one counts. Durations are `<n>d<n>h<n>m` parts, 1m to 31d.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta, timezone, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

MAX_DURATION = timedelta(days=31)
HORIZON_DAYS = 5 * 366  # how far next_start looks (Feb 29 windows fire every 4 years)
MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
DAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")
FORMAT = "<minute> <hour> <day-of-month> <month> <day-of-week> <duration>"

_DURATION = re.compile(r"^(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?$")
_OFFSET = re.compile(r"^([+-])(\d{2}):(\d{2})$")


class ScheduleError(ValueError):
    pass


@dataclass(frozen=True)
class Window:
    text: str
    minutes: tuple[int, ...]
    hours: tuple[int, ...]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]  # 0 = Sunday
    any_day: bool  # day-of-month starts with '*'
    any_weekday: bool  # day-of-week starts with '*'
    duration: timedelta

    def day_matches(self, d: date) -> bool:
        if d.month not in self.months:
            return False
        dom = d.day in self.days
        dow = (d.weekday() + 1) % 7 in self.weekdays
        if self.any_day or self.any_weekday:
            return dom and dow
        return dom or dow

    def _at(self, d: date, hour: int, minute: int, zone: tzinfo) -> datetime | None:
        """That wall-clock time in UTC; None where it falls outside the years datetime can hold."""
        try:
            return datetime(d.year, d.month, d.day, hour, minute, tzinfo=zone).astimezone(UTC)
        except OverflowError:
            return None

    def last_start(self, now: datetime, zone: tzinfo) -> datetime | None:
        """The latest opening at or before now that is still open, if any."""
        earliest = shift(now, -self.duration)
        d = _local_date(now, zone)
        stop = _local_date(earliest, zone)
        while d >= stop:
            if self.day_matches(d):
                for h in reversed(self.hours):
                    for m in reversed(self.minutes):
                        t = self._at(d, h, m, zone)
                        if t is not None and t <= now:
                            return t if t > earliest else None
            if d == date.min:
                break
            d -= timedelta(days=1)
        return None

    def next_start(self, now: datetime, zone: tzinfo) -> datetime | None:
        d = _local_date(now, zone)
        for _ in range(HORIZON_DAYS):
            if self.day_matches(d):
                for h in self.hours:
                    for m in self.minutes:
                        t = self._at(d, h, m, zone)
                        if t is not None and t > now:
                            return t
            if d == date.max:
                break
            d += timedelta(days=1)
        return None


_FIRST = datetime.min.replace(tzinfo=UTC)
_LAST = datetime.max.replace(tzinfo=UTC)


def shift(t: datetime, by: timedelta) -> datetime:
    """t + by, held at the first or last moment datetime can hold instead of overflowing."""
    try:
        return t + by
    except OverflowError:
        return _LAST if by > timedelta(0) else _FIRST


def _local_date(t: datetime, zone: tzinfo) -> date:
    try:
        return t.astimezone(zone).date()
    except OverflowError:
        return t.date()


@dataclass(frozen=True)
class Schedule:
    zone: tzinfo
    windows: tuple[Window, ...]

    def active(self, now: datetime) -> tuple[datetime, datetime] | None:
        """(start, end) of the open window that closes last, or None outside all windows."""
        best = None
        for w in self.windows:
            start = w.last_start(now, self.zone)
            if start is not None and (best is None or shift(start, w.duration) > best[1]):
                best = (start, shift(start, w.duration))
        return best

    def next_start(self, now: datetime) -> datetime | None:
        starts = [t for w in self.windows if (t := w.next_start(now, self.zone)) is not None]
        return min(starts, default=None)


def parse(text: str) -> Schedule:
    parts = [p.strip() for p in re.split(r"[;\n]", text)]
    parts = [p for p in parts if p]
    zone: tzinfo = UTC
    if parts and parts[0][:3].upper() == "TZ=":
        zone = parse_zone(parts[0][3:].strip())
        parts = parts[1:]
    if not parts:
        raise ScheduleError(f"no windows: want {FORMAT!r}, windows separated by ';'")
    return Schedule(zone, tuple(_window(p, i) for i, p in enumerate(parts, 1)))


def parse_zone(name: str) -> tzinfo:
    if name.upper() in ("UTC", "Z"):
        return UTC
    m = _OFFSET.match(name)
    if m:
        sign, hours, minutes = m.groups()
        if int(hours) > 23 or int(minutes) > 59:
            raise ScheduleError(f"invalid offset {name!r}")
        delta = timedelta(hours=int(hours), minutes=int(minutes))
        return timezone(-delta if sign == "-" else delta)
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ScheduleError(f"unknown time zone {name!r}: want an IANA name, UTC or an offset like +02:00") from None


def _window(text: str, index: int) -> Window:
    where = f"window {index} ({text!r})"
    fields = text.split()
    if fields[0][:3].upper() == "TZ=":
        raise ScheduleError(f"{where}: TZ= must come first")
    if len(fields) != 6:
        raise ScheduleError(f"{where}: expected 6 fields {FORMAT!r}, got {len(fields)}")
    try:
        minutes = _field(fields[0], "minute", 0, 59)
        hours = _field(fields[1], "hour", 0, 23)
        days = _field(fields[2], "day-of-month", 1, 31)
        months = _field(fields[3], "month", 1, 12, MONTHS, 1)
        weekdays = {d % 7 for d in _field(fields[4], "day-of-week", 0, 7, DAYS, 0)}
        duration = parse_duration(fields[5])
    except ScheduleError as e:
        raise ScheduleError(f"{where}: {e}") from None
    return Window(
        text=text,
        minutes=tuple(sorted(minutes)),
        hours=tuple(sorted(hours)),
        days=frozenset(days),
        months=frozenset(months),
        weekdays=frozenset(weekdays),
        any_day=fields[2].startswith("*"),
        any_weekday=fields[4].startswith("*"),
        duration=duration,
    )


def _value(text: str, name: str, lo: int, hi: int, names: tuple[str, ...], first: int) -> int:
    if text.isdigit():
        n = int(text)
        if not lo <= n <= hi:
            raise ScheduleError(f"{name}: {n} is out of range {lo}-{hi}")
        return n
    if names and text.lower() in names:
        return names.index(text.lower()) + first
    hint = f" or a name ({names[0]}..{names[-1]})" if names else ""
    raise ScheduleError(f"{name}: {text!r} is not a number{hint}")


def _field(spec: str, name: str, lo: int, hi: int, names: tuple[str, ...] = (), first: int = 0) -> set[int]:
    out: set[int] = set()
    for item in spec.split(","):
        base, slash, step_text = item.partition("/")
        step = 1
        if slash:
            if not step_text.isdigit() or int(step_text) < 1:
                raise ScheduleError(f"{name}: step {step_text!r} must be a positive number")
            step = int(step_text)
        if base == "*":
            a, b = lo, hi
        elif "-" in base:
            left, _, right = base.partition("-")
            a = _value(left, name, lo, hi, names, first)
            b = _value(right, name, lo, hi, names, first)
            if a > b:
                raise ScheduleError(f"{name}: range {base!r} starts after it ends")
        elif base:
            a = _value(base, name, lo, hi, names, first)
            b = hi if slash else a
        else:
            raise ScheduleError(f"{name}: empty item in {spec!r}")
        out.update(range(a, b + 1, step))
    return out


def parse_duration(text: str) -> timedelta:
    m = _DURATION.match(text)
    if not text or m is None:
        raise ScheduleError(f"duration: {text!r} is not like 10h, 90m, 1d12h or 4h30m")
    days, hours, minutes = (int(g) if g else 0 for g in m.groups())
    value = timedelta(days=days, hours=hours, minutes=minutes)
    if value <= timedelta(0) or value > MAX_DURATION:
        raise ScheduleError(f"duration: {text!r} must be between 1m and 31d")
    return value


def rfc3339(t: datetime) -> str:
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
