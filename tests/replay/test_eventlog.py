"""The event log format: berth's lines, kubectl watch output, the simulator recorder, gzip, rejects."""

from __future__ import annotations

import gzip
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from berth.adapters.eventlog import EventWriter, Reject, read_events
from berth.core.errors import InputError
from berth.core.events import WatchEvent, encode_event, parse_event
from berth.core.kinds import convert
from tests.builders import node, pod

T0 = datetime(2026, 11, 1, 10, 0, tzinfo=UTC)


def test_berth_line() -> None:
    ev = parse_event(json.dumps({"ts": "2026-11-01T10:00:00Z", "type": "ADDED", "object": node("n1")}), 7)
    assert (ev.type, ev.ts, ev.position, ev.model.name, ev.key) == ("ADDED", T0, 7, "n1", b"Node//n1")


def test_kubectl_watch_line_has_no_ts() -> None:
    ev = parse_event(json.dumps({"type": "MODIFIED", "object": pod("p")}))
    assert (ev.type, ev.ts) == ("MODIFIED", None)


@pytest.mark.parametrize(("word", "etype"), [("Add", "ADDED"), ("Update", "MODIFIED"), ("Delete", "DELETED")])
def test_simulator_recorder_line(word: str, etype: str) -> None:
    ev = parse_event(json.dumps({"time": "2026-11-01T10:00:00Z", "event": word, "resource": pod("p")}))
    assert (ev.type, ev.ts) == (etype, T0)


def test_bookmark_needs_no_kind() -> None:
    assert parse_event(b'{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"12"}}}').type == "BOOKMARK"


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("{not json", "line 3: invalid JSON"),
        ('{"type": "ADDED"}', "line 3: object: is required"),
        ('{"type": "ADDED", "object": {"metadata": {"name": "x"}}}', "line 3: object x: kind: is required"),
        (
            '{"type": "UPSERT", "object": {"kind": "Pod"}}',
            "line 3: type: want one of ADDED, MODIFIED, DELETED, BOOKMARK, got 'UPSERT'",
        ),
        ('{"event": "Patch", "resource": {"kind": "Pod"}}', "line 3: event: want Add, Update or Delete, got 'Patch'"),
        (
            '{"ts": "yesterday", "type": "ADDED", "object": {"kind": "Pod"}}',
            "line 3: ts: invalid RFC 3339 time 'yesterday'",
        ),
        ("[1, 2]", "line 3: not a watch event"),
    ],
)
def test_bad_lines(line: str, reason: str) -> None:
    with pytest.raises(InputError) as e:
        parse_event(line, 3)
    assert str(e.value).startswith(reason)


@pytest.mark.parametrize("suffix", [".jsonl", ".jsonl.gz"])
def test_round_trip(tmp_path: Path, suffix: str) -> None:
    path = str(tmp_path / f"log{suffix}")
    events = [
        WatchEvent("ADDED", node("n1"), T0),
        WatchEvent("MODIFIED", pod("p"), None),
        WatchEvent("DELETED", pod("p"), T0),
    ]
    with EventWriter(path) as w:
        for ev in events:
            w.write(ev)
    back = list(read_events(path))
    assert [(e.type, e.model, e.ts) for e in back] == [(e.type, convert(e.object), e.ts) for e in events]
    assert [e.position for e in back] == [1, 2, 3]
    if suffix.endswith(".gz"):
        with gzip.open(path) as f:
            assert f.read().startswith(b'{"ts":"2026-11-01T10:00:00Z","type":"ADDED"')


def test_rejects_keep_going(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    good = json.dumps({"type": "ADDED", "object": node("n1")})
    path.write_text(f"{good}\nnope\n\n{good}\n")
    rejects: list[Reject] = []
    assert len(list(read_events(str(path), rejects))) == 2
    assert [(r.line, r.text) for r in rejects] == [(2, "nope")]
    assert rejects[0].reason.startswith("invalid JSON")


def test_strict_stops_at_the_first_bad_line(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    path.write_text('{"type": "ADDED", "object": {"kind": "Node", "metadata": {"name": "a"}}}\nnope\n')
    with pytest.raises(InputError) as e:
        list(read_events(str(path), [], strict=True))
    assert str(e.value).startswith(f"{path}: line 2: invalid JSON")


names = st.text(alphabet="abcdefghij-", min_size=1, max_size=10)


@given(st.sampled_from(["ADDED", "MODIFIED", "DELETED"]), names, st.none() | st.datetimes(timezones=st.just(UTC)))
def test_encode_parse_round_trip(etype: str, name: str, ts: datetime | None) -> None:
    ev = WatchEvent(etype, {"kind": "Node", "apiVersion": "v1", "metadata": {"name": name}}, ts)
    back = parse_event(encode_event(ev))
    assert (back.type, back.model, back.ts) == (ev.type, convert(ev.object), ev.ts)


@pytest.mark.parametrize(
    ("obj", "kind"),
    [
        ({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}, ("", "ConfigMap")),
        (
            {"apiVersion": "extensions/v1beta1", "kind": "Deployment", "metadata": {"name": "d"}},
            ("extensions", "Deployment"),
        ),
        ({"apiVersion": "example.com/v1", "kind": "Pod", "metadata": {"name": "p"}}, ("example.com", "Pod")),
    ],
)
def test_a_kind_berth_does_not_read_is_kept_undecoded(obj: dict[str, object], kind: tuple[str, str]) -> None:
    ev = parse_event(json.dumps({"type": "ADDED", "object": obj}))
    assert (ev.model, ev.kind) == (None, kind)
    assert json.loads(bytes(ev.raw)) == obj


def test_the_one_pass_and_the_step_by_step_path_agree_on_the_shape() -> None:
    """A null simulator resource is the simulator's shape, even beside a well-formed object."""
    line = json.dumps({"type": "ADDED", "object": node("n1"), "resource": None})
    with pytest.raises(InputError, match="event: want Add, Update or Delete, got None"):
        parse_event(line, 3)
