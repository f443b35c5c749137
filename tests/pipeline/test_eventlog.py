"""The event log format: berth's lines, kubectl watch output, the simulator recorder, gzip, rejects."""

from __future__ import annotations

import gzip
import json
from datetime import UTC, datetime
from pathlib import Path

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from berth.adapters.files.eventlog import EventWriter, Reject, read_events
from berth.core.api.kinds import convert
from berth.core.api.watch import WatchEvent, encode_event, event_key, parse_event
from berth.core.cache.state import newer
from berth.core.errors import InputError
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


GOOD = json.dumps({"type": "ADDED", "object": node("n1")}).encode()


@pytest.mark.parametrize(
    ("text", "positions", "rejected"),
    [
        (GOOD + b"\n\n" + GOOD + b"\n", [1, 3], []),
        (GOOD + b"\n  \t\r\n" + GOOD + b"\n", [1, 3], []),
        (GOOD + b"\n\x0b\x0c\n" + GOOD + b"\n", [1, 3], []),  # all that bytes.strip() strips
        (GOOD + b"\n   ", [1], []),  # the last line, without a newline
        (GOOD + b"\n\xa0\n" + GOOD + b"\n", [1, 3], [2]),  # not ASCII whitespace: a bad line
        (GOOD + b"\n x \n" + GOOD + b"\n", [1, 3], [2]),
    ],
)
def test_blank_lines_are_skipped(tmp_path: Path, text: bytes, positions: list[int], rejected: list[int]) -> None:
    path = tmp_path / "log.jsonl"
    path.write_bytes(text)
    rejects: list[Reject] = []
    assert [ev.position for ev in read_events(str(path), rejects)] == positions
    assert [r.line for r in rejects] == rejected


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
    ("raw", "key"),
    [
        (
            b'{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"db","annotations":{"x":"\\u003c"}}}',
            b"",
        ),
        (b'{"kind":"Node","metadata":{"name":"n1"}}', b""),
        (b'{"kind":"Node","metadata":{"name":"n1"}}', b"Node//n1"),  # the key the watcher read
    ],
)
def test_an_object_as_bytes_is_written_as_it_came(raw: bytes, key: bytes) -> None:
    ev = WatchEvent("ADDED", msgspec.Raw(raw), T0, key=key)
    assert encode_event(ev) == b'{"ts":"2026-11-01T10:00:00Z","type":"ADDED","object":' + raw + b"}"
    as_dict = WatchEvent("ADDED", msgspec.json.decode(raw), T0)
    assert event_key(ev) == event_key(as_dict)
    assert ev.decoded().model == as_dict.decoded().model


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


def _pod_line(**change: object) -> str:
    """A valid Pod line with one field changed (dotted path under the line) or text replaced."""
    obj = pod("p", cpu="1")
    line: dict[str, object] = {"ts": "2026-11-01T10:00:00Z", "type": "ADDED", "object": obj}
    for path, value in change.items():
        node_: dict[str, object] = line
        *parents, last = path.split("__")
        for p in parents:
            node_ = node_[p]  # type: ignore[assignment]
        node_[last] = value
    return json.dumps(line)


_CPU = '"cpu": "1"'
# issue 20's reproducers for event-log lines: each is one InputError naming the line and the field.
BOUNDED = [
    ("nested a few thousand levels deep", _pod_line().replace(_CPU, '"cpu": ' + "[" * 3000 + "]" * 3000), "line 3: "),
    ("a bare integer of 5,000 digits", _pod_line().replace(_CPU, '"cpu": 1' + "0" * 5000), "Pod default/p: spec."),
    ("a quantity of 4,301 digits", _pod_line().replace(_CPU, '"cpu": "1' + "0" * 4300 + 'Gi"'), "at most 100 char"),
    ("a quantity of nan", _pod_line().replace(_CPU, '"cpu": "nan"'), "quantities must match"),
    ("a cpu of 1e30", _pod_line().replace(_CPU, '"cpu": "1e30"'), "kube's int64 milli-value"),
    ("a JSON number of 1e400", _pod_line().replace(_CPU, '"cpu": 1e400'), "requests[...]: number out of range"),
    ("ts at year 9999 less an offset", _pod_line(ts="9999-12-31T23:59:59-23:59"), "line 3: ts: time '9999"),
    ("ts at year 1 plus an offset", _pod_line(ts="0001-01-01T00:00:00+23:59"), "line 3: ts: time '0001"),
    ("metadata as a string", _pod_line(object__metadata="x"), "Pod <unnamed>: metadata: expected an object"),
    ("bytes that are not UTF-8", _pod_line().replace(_CPU, '"cpu": "\udcff"'), "line 3: not UTF-8"),
    ("a line over the size limit", _pod_line().replace(_CPU, _CPU + " " * (3 << 20)), "line 3: longer than"),
]


@pytest.mark.parametrize(("line", "reason"), [c[1:] for c in BOUNDED], ids=[c[0] for c in BOUNDED])
def test_bounded_lines_are_one_input_error(line: str, reason: str) -> None:
    data = line.encode("utf-8", "surrogateescape")
    with pytest.raises(InputError) as e:
        parse_event(data, 3)
    assert reason in str(e.value)
    assert "\n" not in str(e.value)


def test_resource_version_compared_only_as_ascii_digits() -> None:
    # decoded objects hold decimal resourceVersions only (tests/api/test_meta_checks.py); newer() is still total
    assert newer("11", "2") and not newer("2", "11")
    assert newer("\u00b2", "1") and newer("1", "\u00b2")  # not kube digits: different is newer
    assert not newer("\u00b2", "\u00b2")


@given(st.from_regex(r"[0-9]{1,8}", fullmatch=True), st.from_regex(r"[0-9]{1,8}", fullmatch=True))
def test_resource_versions_of_one_length_compare_as_their_numbers(new: str, old: str) -> None:
    """Digits of one length are compared as text (leading zeros too): the same as their integers."""
    assert newer(new, old) == (int(new) > int(old))
    assert newer(new.zfill(8), old.zfill(8)) == (int(new) > int(old))


def test_a_reject_is_at_its_real_line_whatever_position_it_claims(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    bad = json.dumps({"type": "ADDED", "position": 1, "object": {**pod("p"), "metadata": "x"}})
    path.write_text(f"{json.dumps({'type': 'ADDED', 'object': node('n1')})}\n\n{bad}\n")
    rejects: list[Reject] = []
    assert len(list(read_events(str(path), rejects))) == 1
    assert [r.line for r in rejects] == [3]


def test_a_corrupt_gz_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl.gz"
    data = gzip.compress(b'{"type": "ADDED", "object": {}}\n' * 100)
    path.write_bytes(data[:20] + b"\x00" * 40 + data[60:])
    with pytest.raises(InputError) as e:
        list(read_events(str(path), []))
    assert str(e.value).startswith(f"{path}: cannot read: ")
