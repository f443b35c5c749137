"""berth's own records (docs/records.md): what the previous version wrote still decodes, today's
encoder writes the same bytes, unknown fields are ignored and an unknown kind is skipped."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from berth.core.pipeline.records import BufferStatusRecord, DecisionRecord, RejectRecord, decode_record, encode_record
from berth_cli.common import load_config
from berth_cli.pipeline import Lane, Pipeline

V1 = Path(__file__).parent.parent / "data" / "records" / "v1"
FIXTURES = [
    ("decisions.jsonl", DecisionRecord),
    ("buffer-status.jsonl", BufferStatusRecord),
    ("dead-letters.jsonl", RejectRecord),
]
LINES = [
    pytest.param(line, kind, id=f"{name}:{n}")
    for name, kind in FIXTURES
    for n, line in enumerate((V1 / name).read_bytes().splitlines(), start=1)
]


def test_the_fixtures_hold_every_shape_worth_keeping() -> None:
    text = (V1 / "decisions.jsonl").read_text()
    assert '"volumeBindings":[{' in text
    assert '"feasible":false' in text and '"scores":{' in text


@pytest.mark.parametrize(("line", "kind"), LINES)
def test_a_record_of_the_previous_version_decodes_and_encodes_to_the_same_bytes(line: bytes, kind: type) -> None:
    record = decode_record(line)
    assert type(record) is kind
    assert record is not None and encode_record(record) == line


@pytest.mark.parametrize(("line", "kind"), LINES)
def test_an_unknown_field_is_ignored(line: bytes, kind: type) -> None:
    newer = line[:-1] + b',"addedLater":{"x":[1,2]}}'
    assert decode_record(newer) == decode_record(line)


@pytest.mark.parametrize(
    "line",
    [
        b'{"kind":"Preemption","pod":"default/p1","victims":["default/p0"]}',
        b'{"kind":"Decision2","ts":null}',
    ],
)
def test_an_unknown_kind_decodes_to_none(line: bytes) -> None:
    assert decode_record(line) is None


@pytest.mark.parametrize(
    "line",
    [
        b'{"kind":"Decision","pod":"default/p1"}',  # a known kind without its required fields
        b'{"kind":"Reject","source":"s","position":"one","reason":"r","text":""}',
        b'{"source":"s","position":1,"reason":"r","text":""}',  # no kind at all
    ],
)
def test_a_broken_record_of_a_known_kind_raises(line: bytes) -> None:
    with pytest.raises(msgspec.ValidationError):
        decode_record(line)


@pytest.mark.asyncio
async def test_a_consumer_skips_a_kind_it_does_not_know() -> None:
    lane = Lane("default", load_config(None))
    pipeline = Pipeline([lane])
    first, second = (V1 / "decisions.jsonl").read_bytes().splitlines()[:2]
    status = (V1 / "buffer-status.jsonl").read_bytes().splitlines()[0]
    await pipeline.bus.send(lane.decisions_topic, first)
    await pipeline.bus.send(lane.decisions_topic, b'{"kind":"Preemption","position":0,"pod":"default/p1"}')
    await pipeline.bus.send(lane.status_topic, status)
    await pipeline.bus.send(lane.decisions_topic, second)
    got = [encode_record(r) for r in pipeline.records(lane)]
    assert sorted(got) == sorted([first, second, status])


def test_reasons_are_new_and_optional() -> None:
    """Issue 18 added `reasons` to DecisionRecord: older records decode without it, newer ones keep it."""
    old = (V1 / "decisions.jsonl").read_bytes().splitlines()[0]
    record = decode_record(old)
    assert isinstance(record, DecisionRecord) and record.reasons is msgspec.UNSET
    newer = msgspec.structs.replace(record, reasons={"node(s) didn't match Pod's node affinity/selector": 2})
    line = encode_record(newer)
    assert line.endswith(b',"reasons":{"node(s) didn\'t match Pod\'s node affinity/selector":2}}')
    assert decode_record(line) == newer
