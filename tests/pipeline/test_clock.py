"""A log without `ts` gets a monotonic clock from its objects' own times, read in the decode that reads
the line (parse_event's `times`), with the same result as reading each line once more for them."""

from __future__ import annotations

import gzip
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec
import pytest

from berth.core.api.meta.normalise import parse_time
from berth.core.api.watch import parse_event
from berth.core.errors import InputError
from berth.core.generate import PRESETS, generate
from berth.core.pipeline.clock import ObjectClock
from berth_cli.replay import events

T = "2026-11-01T10:{:02d}:00Z"
ROOT = Path(__file__).parents[2]


class _Meta(msgspec.Struct):
    creationTimestamp: str | None = None
    deletionTimestamp: str | None = None


class _Condition(msgspec.Struct):
    lastTransitionTime: str | None = None
    lastHeartbeatTime: str | None = None
    lastProbeTime: str | None = None
    lastUpdateTime: str | None = None


class _Status(msgspec.Struct):
    updateTime: str | None = None
    conditions: list[_Condition] | None = None


class _Times(msgspec.Struct):
    metadata: _Meta = msgspec.field(default_factory=_Meta)
    status: _Status | None = None


class _Line(msgspec.Struct):
    object: _Times | None = None
    event: str | None = None
    resource: _Times | None = None


def reread(line: bytes) -> datetime | None:
    """The object's time as berth read it before (a second decode of the line): the reference."""
    try:
        got = msgspec.json.decode(line, type=_Line)
    except msgspec.DecodeError:
        return None
    t = got.resource if got.event is not None or got.resource is not None else got.object
    if t is None:
        return None
    texts = [t.metadata.creationTimestamp, t.metadata.deletionTimestamp]
    if t.status is not None:
        texts.append(t.status.updateTime)
        for c in t.status.conditions or ():
            texts += [c.lastTransitionTime, c.lastHeartbeatTime, c.lastProbeTime, c.lastUpdateTime]
    times = []
    for text in texts:
        if text:
            try:
                times.append(parse_time(text))
            except ValueError:
                continue
    return max(times, default=None)


# a kind of each shape: a typed status with typed conditions, a typed status, a status kept as it
# arrives, no status, a kind berth does not read
KINDS: dict[str, dict[str, Any]] = {
    "Pod": {"apiVersion": "v1", "spec": {"containers": [{"name": "c"}]}},
    "Node": {"apiVersion": "v1"},
    "CapacityBuffer": {"apiVersion": "autoscaling.x-k8s.io/v1beta1", "spec": {}},
    "Namespace": {"apiVersion": "v1"},
    "ConfigMap": {"apiVersion": "v1"},
}


def obj(kind: str, meta: Any = None, status: Any = "absent") -> dict[str, Any]:
    out = {"kind": kind, **KINDS[kind], "metadata": {"name": "x"} if meta is None else meta}
    if status != "absent":
        out["status"] = status
    return out


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(
    ("meta", "status", "minute"),
    [
        ({"name": "x", "creationTimestamp": T.format(1)}, "absent", 1),
        ({"name": "x", "creationTimestamp": T.format(1), "deletionTimestamp": T.format(7)}, "absent", 7),
        (None, {"updateTime": T.format(9)}, 9),  # a NodeMetric's
        (None, {"conditions": [{"lastTransitionTime": T.format(3)}, {"lastHeartbeatTime": T.format(5)}]}, 5),
        (None, {"conditions": [{"type": "Ready", "lastProbeTime": None, "lastUpdateTime": T.format(4)}]}, 4),
        (None, {"phase": "Running"}, None),
    ],
)
def test_an_objects_time_is_the_latest_it_carries(kind: str, meta: Any, status: Any, minute: int | None) -> None:
    want = None if minute is None else datetime(2026, 11, 1, 10, minute, tzinfo=UTC)
    o = obj(kind, meta, status)
    lines = [
        json.dumps({"type": "ADDED", "object": o}).encode(),
        json.dumps({"event": "Add", "resource": o}).encode(),  # the scheduler simulator's line
    ]
    for line in lines:
        assert parse_event(line, times=True).object_time == want == reread(line)
        assert parse_event(line).object_time is None  # not asked for
        passed_over = parse_event(line, only=frozenset({("", "Service")}), times=True)
        assert passed_over.model is None and passed_over.object_time == want


# what does not read as a time gives the object none, wherever it sits; the object is read as before
JUNK = [
    ({"name": "x", "creationTimestamp": "not a time"}, "absent"),  # a Pod's is read: rejected
    ({"name": "x", "deletionTimestamp": 5, "creationTimestamp": T.format(2)}, "absent"),
    ({"name": 5, "creationTimestamp": T.format(2)}, "absent"),  # a name that is not a string
    ({"name": "x", "creationTimestamp": T.format(2)}, "x"),
    ({"name": "x", "creationTimestamp": T.format(2)}, {"conditions": "x"}),
    ({"name": "x", "creationTimestamp": T.format(2)}, {"conditions": [None]}),
    ({"name": "x", "creationTimestamp": T.format(2)}, {"conditions": [{"lastProbeTime": 5}]}),
    ({"name": "x", "creationTimestamp": T.format(2)}, {"updateTime": 7}),
    ({"name": "x", "creationTimestamp": T.format(2)}, None),
    ({"creationTimestamp": T.format(2)}, {"conditions": [{"lastHeartbeatTime": T.format(8)}]}),
]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(("meta", "status"), JUNK)
def test_a_time_that_does_not_read_gives_what_a_second_read_gave(kind: str, meta: Any, status: Any) -> None:
    line = json.dumps({"type": "MODIFIED", "object": obj(kind, meta, status)}).encode()
    try:
        plain = parse_event(line)
    except InputError:
        with pytest.raises(InputError):
            parse_event(line, times=True)
        return
    ev = parse_event(line, times=True)
    assert ev.object_time == reread(line)
    assert (ev.model, ev.kind, ev.key) == (plain.model, plain.kind, plain.key)


def without_ts(paths: list[Path]) -> list[bytes]:
    out = []
    for path in paths:
        data = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
        for line in data.splitlines():
            try:
                doc = json.loads(line)
            except ValueError:
                continue  # the samples' bad lines
            if isinstance(doc, dict):
                doc.pop("ts", None)
                out.append(json.dumps(doc).encode())
    return out


def test_the_samples_without_ts_get_the_times_a_second_read_gave() -> None:
    paths = [ROOT / "examples/small.jsonl.gz", ROOT / "examples/cold-burst.jsonl", *ROOT.glob("tests/data/logs/*")]
    lines = without_ts(paths)
    assert len(lines) > 1000
    for line in lines:
        try:
            ev = parse_event(line, times=True)
        except InputError:
            continue
        if ev.type != "BOOKMARK":
            assert ev.object_time == reread(line), line[:200]


def line(o: dict) -> bytes:
    return json.dumps({"type": "MODIFIED", "object": {"kind": "Node", "apiVersion": "v1", **o}}).encode()


def test_the_clock_never_goes_back() -> None:
    clock = ObjectClock()
    times = [
        clock.time(parse_event(line({"metadata": {"name": "n", "creationTimestamp": T.format(m)}}), times=True))
        for m in (5, 2, 8)
    ]
    assert [t.minute for t in times if t] == [5, 5, 8]
    assert clock.time(parse_event(line({"metadata": {"name": "n"}}), times=True)) == times[-1]


def test_a_log_without_ts_runs_on_the_objects_clock(tmp_path: Path) -> None:
    """kubectl watch output of a generated cluster: its lines have no ts."""
    log = tmp_path / "bare.jsonl"
    params = PRESETS["small-churn"].replace(pods=30, duration=600)
    lines = [json.dumps({"type": ev.type, "object": ev.object}) + "\n" for ev in generate(params, 1)]
    log.write_text("".join(lines))
    got = [ev.ts for ev in events([str(log)], [], False, None)]
    first = next(i for i, t in enumerate(got) if t is not None)  # before the first object with a time: none
    timed = [t for t in got[first:] if t is not None]
    assert len(timed) == len(got) - first and timed == sorted(timed)
    assert timed[0].year == 2026 and timed[-1] > timed[0]
    now = None  # the clock as reading each line once more gave it
    want = []
    for text in lines:
        t = reread(text.encode())
        now = t if t is not None and (now is None or t > now) else now
        want.append(now)
    assert got == want
