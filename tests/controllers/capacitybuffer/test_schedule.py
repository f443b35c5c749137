"""Buffer schedules: the annotation format, windows, and what the controller does with them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import pytest

from berth.core.api.autoscaling.model import SCHEDULE_ANNOTATION
from berth.core.controllers.capacitybuffer.schedule import ScheduleError, parse, parse_duration
from tests.controllers.capacitybuffer.builders import NOW, buffer, one, pod_template, ready_message


def at(text: str) -> datetime:
    return datetime.fromisoformat(text).astimezone(UTC)


BUSINESS = "0 8 * * Mon-Fri 10h"

# (id, schedule, instant, active?)
WINDOWS = [
    ("weekday morning inside", BUSINESS, "2026-11-02T08:00:00+00:00", True),
    ("weekday just before", BUSINESS, "2026-11-02T07:59:59+00:00", False),
    ("weekday end is exclusive", BUSINESS, "2026-11-02T18:00:00+00:00", False),
    ("weekday last second", BUSINESS, "2026-11-02T17:59:59+00:00", True),
    ("saturday", BUSINESS, "2026-11-07T10:00:00+00:00", False),
    ("overnight window after midnight", "0 22 * * * 8h", "2026-11-03T05:30:00+00:00", True),
    ("overnight window ends", "0 22 * * * 8h", "2026-11-03T06:00:00+00:00", False),
    ("friday night into the weekend", "0 20 * * fri 2d", "2026-11-08T19:00:00+00:00", True),
    ("sunday as 7", "0 0 * * 7 1d", "2026-11-08T12:00:00+00:00", True),
    ("sunday as 0", "0 0 * * 0 1d", "2026-11-08T12:00:00+00:00", True),
    ("steps", "*/15 * * * * 5m", "2026-11-02T10:31:00+00:00", True),
    ("steps gap", "*/15 * * * * 5m", "2026-11-02T10:36:00+00:00", False),
    ("list of hours", "0 9,13 * * * 1h", "2026-11-02T13:30:00+00:00", True),
    ("range with step", "0 8-18/2 * * * 30m", "2026-11-02T10:10:00+00:00", True),
    ("range with step miss", "0 8-18/2 * * * 30m", "2026-11-02T11:10:00+00:00", False),
    ("day of month", "0 0 1 * * 3d", "2026-11-03T23:00:00+00:00", True),
    ("dom or dow when both restricted (dom)", "0 0 15 * mon 1d", "2026-11-15T12:00:00+00:00", True),
    ("dom or dow when both restricted (dow)", "0 0 15 * mon 1d", "2026-11-02T12:00:00+00:00", True),
    ("dom and dow when one is *", "0 0 */2 * mon 1d", "2026-11-02T12:00:00+00:00", False),
    ("month names", "0 0 * dec * 1d", "2026-11-02T12:00:00+00:00", False),
    ("two windows, second matches", f"{BUSINESS}; 0 10 * * sat 4h", "2026-11-07T11:00:00+00:00", True),
    ("offset zone", "TZ=+02:00; 0 8 * * * 1h", "2026-11-02T06:30:00+00:00", True),
    ("offset zone miss", "TZ=+02:00; 0 8 * * * 1h", "2026-11-02T08:30:00+00:00", False),
    ("newline separated", "TZ=UTC\n0 8 * * * 1h\n0 20 * * * 1h", "2026-11-02T20:30:00+00:00", True),
]


@pytest.mark.parametrize(("text", "instant", "want"), [w[1:] for w in WINDOWS], ids=[w[0] for w in WINDOWS])
def test_windows(text: str, instant: str, want: bool) -> None:
    window = parse(text).active(at(instant))
    assert (window is not None) is want
    if window is not None:
        start, end = window
        assert start <= at(instant) < end


def test_window_reports_latest_closing() -> None:
    window = parse("0 8 * * * 10h; 0 12 * * * 1h").active(at("2026-11-02T12:30:00+00:00"))
    assert window == (at("2026-11-02T08:00:00+00:00"), at("2026-11-02T18:00:00+00:00"))


def test_next_start() -> None:
    s = parse(BUSINESS)
    assert s.next_start(at("2026-11-06T19:00:00+00:00")) == at("2026-11-09T08:00:00+00:00")
    assert parse("0 0 30 2 * 1h").next_start(NOW) is None  # February 30th never comes
    assert parse("0 0 29 2 * 1h").next_start(NOW) == at("2028-02-29T00:00:00+00:00")


def test_named_zone_follows_daylight_saving() -> None:
    try:
        ZoneInfo("Europe/Berlin")
    except ZoneInfoNotFoundError:
        pytest.skip("no time zone database")
    s = parse("TZ=Europe/Berlin; 0 8 * * * 1h")
    assert s.active(at("2026-07-01T06:30:00+00:00")) is not None  # CEST, UTC+2
    assert s.active(at("2026-12-01T07:30:00+00:00")) is not None  # CET, UTC+1
    assert s.active(at("2026-12-01T06:30:00+00:00")) is None


ERRORS = [
    ("empty", "", "no windows"),
    ("only a zone", "TZ=UTC", "no windows"),
    ("too few fields", "0 8 * * 10h", "window 1 ('0 8 * * 10h'): expected 6 fields"),
    ("minute out of range", "60 8 * * * 1h", "minute: 60 is out of range 0-59"),
    ("hour out of range", "0 24 * * * 1h", "hour: 24 is out of range 0-23"),
    ("day zero", "0 0 0 * * 1h", "day-of-month: 0 is out of range 1-31"),
    ("bad day name", "0 8 * * Mon-Fry 1h", "day-of-week: 'Fry' is not a number or a name (sun..sat)"),
    ("backwards range", "0 8 * * Fri-Mon 1h", "day-of-week: range 'Fri-Mon' starts after it ends"),
    ("zero step", "*/0 * * * * 1h", "minute: step '0' must be a positive number"),
    ("empty list item", "0,,5 * * * * 1h", "minute: empty item in '0,,5'"),
    ("names only where allowed", "jan * * * * 1h", "minute: 'jan' is not a number"),
    ("bad duration", "0 8 * * * 10", "duration: '10' is not like 10h"),
    ("zero duration", "0 8 * * * 0h", "duration: '0h' must be between 1m and 31d"),
    ("too long", "0 8 * * * 32d", "duration: '32d' must be between 1m and 31d"),
    ("unknown zone", "TZ=Mars/Olympus; 0 8 * * * 1h", "unknown time zone 'Mars/Olympus'"),
    ("zone later", "0 8 * * * 1h; TZ=UTC", "window 2 ('TZ=UTC'): TZ= must come first"),
    ("second window named", "0 8 * * * 1h; 0 99 * * * 1h", "window 2 ('0 99 * * * 1h'): hour: 99 is out of range"),
]


@pytest.mark.parametrize(("text", "message"), [e[1:] for e in ERRORS], ids=[e[0] for e in ERRORS])
def test_errors(text: str, message: str) -> None:
    with pytest.raises(ScheduleError) as info:
        parse(text)
    assert message in str(info.value)


@pytest.mark.parametrize(
    ("text", "want"), [("90m", timedelta(minutes=90)), ("1d12h", timedelta(hours=36)), ("4h30m", timedelta(hours=4.5))]
)
def test_durations(text: str, want: timedelta) -> None:
    assert parse_duration(text) == want


# ---- the controller ----------------------------------------------------------------------


def scheduled(text: str, now: datetime, **extra: object) -> tuple[str, str, str, int | None]:
    r = one(
        pod_template("tpl"), buffer("b", template="tpl", replicas=4, annotations={SCHEDULE_ANNOTATION: text}), now=now
    )
    c = r.status.condition("ScheduleActive")
    assert c is not None
    return c.status, c.reason, c.message, r.status.replicas


def test_inside_a_window_keeps_replicas() -> None:
    assert scheduled(BUSINESS, at("2026-11-02T12:00:00+00:00")) == (
        "True",
        "InsideActiveWindow",
        "active window 2026-11-02T08:00:00Z to 2026-11-02T18:00:00Z",
        4,
    )


def test_outside_all_windows_replicas_are_zero() -> None:
    assert scheduled(BUSINESS, at("2026-11-07T12:00:00+00:00")) == (
        "False",
        "OutsideActiveWindows",
        f"outside the active windows of {SCHEDULE_ANNOTATION}, replicas set to 0; next window opens 2026-11-09T08:00:00Z",
        0,
    )


def test_outside_stays_ready() -> None:
    r = one(
        pod_template("tpl"),
        buffer("b", template="tpl", replicas=4, annotations={SCHEDULE_ANNOTATION: BUSINESS}),
        now=at("2026-11-07T12:00:00+00:00"),
    )
    assert ready_message(r) == ("True", "AttributesSetSuccessfully", "ready")


def test_invalid_schedule_is_not_ready() -> None:
    r = one(
        pod_template("tpl"),
        buffer("b", template="tpl", replicas=4, annotations={SCHEDULE_ANNOTATION: "0 8 * * Mon-Fry 10h"}),
    )
    problem = f"invalid annotation {SCHEDULE_ANNOTATION}: window 1 ('0 8 * * Mon-Fry 10h'): day-of-week: 'Fry' is not a number or a name (sun..sat)"
    assert ready_message(r) == ("False", "error", "Buffer not ready for provisioning: " + problem)
    c = r.status.condition("ScheduleActive")
    assert c is not None and (c.status, c.reason, c.message) == ("False", "InvalidSchedule", problem)
    assert r.status.replicas is None


def test_removed_annotation_drops_the_condition() -> None:
    old = {
        "conditions": [
            {
                "type": "ScheduleActive",
                "status": "False",
                "reason": "OutsideActiveWindows",
                "message": "x",
                "lastTransitionTime": "2026-11-01T00:00:00Z",
            }
        ]
    }
    r = one(pod_template("tpl"), buffer("b", template="tpl", replicas=4, status=old))
    assert r.status.condition("ScheduleActive") is None
    assert r.status.replicas == 4


# (id, schedule, instant, (start, end) of the active window or None, next start or None)
EDGES = [
    ("last second of year 9999", "0 8 * * * 10h", "9999-12-31T23:59:59+00:00", None, None),
    ("last day of year 9999, open", "0 8 * * * 10h", "9999-12-31T09:00:00+00:00",
     ("9999-12-31T08:00:00+00:00", "9999-12-31T18:00:00+00:00"), None),
    ("a window that would close after year 9999", "TZ=+23:59; 59 23 31 12 * 31d", "9999-12-31T12:00:00+00:00",
     ("9999-12-31T00:00:00+00:00", "9999-12-31T23:59:59.999999+00:00"), None),
    ("first moment of year 1", "0 8 * * * 10h", "0001-01-01T00:00:00+00:00", None, "0001-01-01T08:00:00+00:00"),
    ("an opening before year 1 does not exist", "TZ=-23:59; 0 0 1 1 * 1h", "0001-01-01T00:00:00+00:00",
     None, "0001-01-01T23:59:00+00:00"),
]  # fmt: skip


@pytest.mark.parametrize(("text", "instant", "window", "upcoming"), [e[1:] for e in EDGES], ids=[e[0] for e in EDGES])
def test_windows_at_the_ends_of_time(
    text: str, instant: str, window: tuple[str, str] | None, upcoming: str | None
) -> None:
    """Near year 1 and year 9999 a schedule answers like anywhere else; what cannot exist is not there."""
    sched = parse(text)
    got = sched.active(at(instant))
    assert got == (None if window is None else (at(window[0]), at(window[1])))
    assert sched.next_start(at(instant)) == (None if upcoming is None else at(upcoming))
