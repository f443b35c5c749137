"""A log without `ts` gets a monotonic clock from its objects' own times."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from berth.core.generate import PRESETS, generate
from berth.core.pipeline.clock import ObjectClock, object_time
from berth_cli.replay import events

T = "2026-11-01T10:{:02d}:00Z"


@pytest.mark.parametrize(
    ("obj", "minute"),
    [
        ({"metadata": {"creationTimestamp": T.format(1)}}, 1),
        ({"metadata": {"creationTimestamp": T.format(1), "deletionTimestamp": T.format(7)}}, 7),
        ({"metadata": {}, "status": {"updateTime": T.format(9)}}, 9),  # a NodeMetric
        (
            {
                "metadata": {},
                "status": {"conditions": [{"lastTransitionTime": T.format(3)}, {"lastHeartbeatTime": T.format(5)}]},
            },
            5,
        ),
        ({"metadata": {}, "status": {"phase": "Running"}}, None),
        ({"metadata": {"creationTimestamp": "not a time"}}, None),
    ],
)
def test_an_objects_time_is_the_latest_it_carries(obj: dict, minute: int | None) -> None:
    want = None if minute is None else datetime(2026, 11, 1, 10, minute, tzinfo=UTC)
    assert object_time(json.dumps({"type": "ADDED", "object": obj}).encode()) == want
    # the scheduler simulator's line holds it as `resource`
    assert object_time(json.dumps({"event": "Add", "resource": obj}).encode()) == want


def line(obj: dict) -> bytes:
    return json.dumps({"type": "MODIFIED", "object": obj}).encode()


def test_the_clock_never_goes_back() -> None:
    clock = ObjectClock()
    times = [clock.time(line({"metadata": {"creationTimestamp": T.format(m)}})) for m in (5, 2, 8)]
    assert [t.minute for t in times if t] == [5, 5, 8]
    assert clock.time(line({"metadata": {}})) == times[-1]
    assert clock.time(b'{"type": "ADDED", "object": []}') == times[-1]  # not an object: no time


def test_a_log_without_ts_runs_on_the_objects_clock(tmp_path: Path) -> None:
    """kubectl watch output of a generated cluster: its lines have no ts."""
    log = tmp_path / "bare.jsonl"
    params = PRESETS["small-churn"].replace(pods=30, duration=600)
    log.write_text("".join(json.dumps({"type": ev.type, "object": ev.object}) + "\n" for ev in generate(params, 1)))
    got = [ev.ts for ev in events([str(log)], [], False, None)]
    first = next(i for i, t in enumerate(got) if t is not None)  # before the first object with a time: none
    timed = [t for t in got[first:] if t is not None]
    assert len(timed) == len(got) - first and timed == sorted(timed)
    assert timed[0].year == 2026 and timed[-1] > timed[0]
