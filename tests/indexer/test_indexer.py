"""The indexer: its pure engine, idempotent writes to a real Redis, the order of side effects, and
the faust agent under faust's own test_context."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
import pytest_asyncio
from redis.asyncio import Redis

from berth.adapters.files.eventlog import open_log
from berth.adapters.runtime.metrics import Metrics
from berth.adapters.runtime.worker import dead_letter
from berth.adapters.store.redisindex import RedisIndex
from berth.core.api.kinds import unpack
from berth.core.api.koordinator.model import NodeMetric
from berth.core.api.koordinator.normalise import aggregated
from berth.core.api.watch import Event, WatchEvent, encode_event, parse_event
from berth.core.errors import InputError
from berth.core.pipeline.indexer import IndexerEngine
from berth.core.ports import Message
from berth_indexer.app import Indexer
from tests.builders import node, pod, pv, pvc, zone_affinity
from tests.servers import Server

GI = 2**30
SMALL = str(Path(__file__).parents[2] / "examples" / "small.jsonl.gz")


def ev(obj: dict[str, Any], kind: str = "ADDED", rv: str = "1") -> Event:
    obj["metadata"]["resourceVersion"] = rv
    return WatchEvent(kind, obj).decoded()


OBJECTS = ("OBJSET", "OBJDEL")


def actions(engine: IndexerEngine, *events: Event) -> list[list[str]]:
    """The index's actions (the objects' own are left out: see test_every_object_is_kept)."""
    out: list[list[str]] = []
    for e in events:
        ops, reason = engine.handle(e)
        assert reason is None
        out += [a for op in ops for a in op.actions if a[0] not in OBJECTS]
    out += [a for op in engine.end_batch() for a in op.actions]
    return out


def test_every_object_is_kept_as_its_wire_struct_and_deleted_with_it() -> None:
    """Every kind berth reads, one key per object, guarded by its resourceVersion."""
    engine = IndexerEngine()
    claim = ev(pvc("data", "5Gi"), rv="4")
    ops, _ = engine.handle(claim)
    assert [(op.guard, op.actions) for op in ops] == [
        (("rv:obj:PersistentVolumeClaim/default/data", "4"), [["OBJSET", "PersistentVolumeClaim/default/data"]])
    ]
    assert ops[0].value == msgspec.msgpack.encode(claim.wire)
    ops, _ = engine.handle(ev(pvc("data", "5Gi"), "DELETED", rv="5"))
    assert [(op.guard, op.actions, op.value) for op in ops] == [
        (("rv:obj:PersistentVolumeClaim/default/data", "5"), [["OBJDEL", "PersistentVolumeClaim/default/data"]], None)
    ]


def _read(model: Any) -> Any:
    """A NodeMetric's aggregated usages as the load-aware store reads them (raw JSON or Structs)."""
    if isinstance(model, NodeMetric):
        return msgspec.structs.replace(model, aggregated=aggregated(model))  # type: ignore[arg-type]
    return model


def test_every_object_of_a_sample_log_is_kept_as_its_line_reads() -> None:
    """What the indexer keeps decodes (as a bootstrapping scorer reads it) to the model its line gives:
    a one-pass NodeMetric, whose aggregated usages are read as raw JSON, is kept whole in msgpack."""
    engine = IndexerEngine()
    kept = 0
    with open_log(SMALL) as log:
        lines = [line for line in log if line.strip()]
    for number, line in enumerate(lines, start=1):
        event = parse_event(line, number)
        ops, reason = engine.handle(event)
        assert reason is None
        for op in ops:
            if op.value is not None:
                _, _, model = unpack(event.kind[1], op.value)
                assert _read(model) == _read(event.model), line
                kept += 1
    assert kept > 900  # the sample's NodeMetrics among them


@pytest.mark.parametrize("value", [b'{"type": "ADDED"}', b"not json \xff", "ünïcode \u2028".encode()])
def test_the_dead_letter_record_keeps_its_bytes_and_says_where(value: bytes) -> None:
    """The record has the message's topic, partition and offset, and the position it was at."""
    _, reject = IndexerEngine().handle_raw(value, 8)
    assert reject is not None
    record = dead_letter("indexer", Message("berth.cluster-events", 2, 7, None, value), *reject)
    want = {
        "kind": "Reject",
        "source": "indexer:berth.cluster-events/2@7",
        "position": 8,
        "reason": reject[0],
        "text": value.decode("utf-8", "replace"),
    }
    assert msgspec.json.decode(record) == want


def test_local_and_zonal_pvs_are_indexed_where_they_fit() -> None:
    engine = IndexerEngine()
    actions(engine, ev(node("n1", zone="z1")), ev(node("n2", zone="z1")))
    got = actions(engine, ev(pv("local", "10Gi", on="n1")), ev(pv("zonal", "1Ti", affinity=zone_affinity("z1"))))
    assert got == [
        ["ZADD", "pvidx:n1:local", str(10 * GI), "local"],
        ["ZADD", "pvidx:*:local", str(1024 * GI), "zonal"],
    ]


def test_a_claimed_pv_leaves_the_index() -> None:
    engine = IndexerEngine()
    actions(engine, ev(node("n1")), ev(pv("a", "10Gi", on="n1")))
    got = actions(engine, ev(pv("a", "10Gi", on="n1", claim="db/data", phase="Bound"), "MODIFIED", rv="2"))
    assert got == [["ZREM", "pvidx:n1:local", "a"]]


def test_bound_pods_add_up_per_node_and_move() -> None:
    engine = IndexerEngine()
    actions(engine, ev(node("n1")), ev(node("n2")))
    got = actions(engine, ev(pod("p", node_name="n1", cpu="500m", memory=None)))
    assert got == [["HINCRBY", "used:n1", "cpu", "500"], ["HINCRBY", "used:n1", "pods", "1"]]
    got = actions(engine, ev(pod("p", node_name="n1", cpu="500m", memory=None), "DELETED", rv="3"))
    assert got == [["HINCRBY", "used:n1", "cpu", "-500"], ["HINCRBY", "used:n1", "pods", "-1"]]
    assert engine.usage() == {}


def test_redelivered_events_give_nothing_to_write() -> None:
    engine = IndexerEngine()
    first = ev(node("n1"), rv="7")
    assert actions(engine, first)
    assert actions(engine, first) == []


def test_node_labels_moving_pvs_are_handled_once_per_batch() -> None:
    engine = IndexerEngine()
    actions(engine, ev(node("n1", zone="z1")), ev(pv("zonal", "10Gi", affinity=zone_affinity("z2"))))
    got = actions(engine, ev(node("n1", zone="z2"), "MODIFIED", rv="2"), ev(node("n2", zone="z2")))
    assert ["ZADD", "pvidx:*:local", str(10 * GI), "zonal"] in got


# ---- handle_raw: the message's bytes through the one decoder -----------------------------------


def raw(obj: dict[str, Any], kind: str = "ADDED", rv: str = "1") -> bytes:
    obj["metadata"]["resourceVersion"] = rv
    return encode_event(WatchEvent(kind, obj))


BAD = [
    raw(pv("a", "lots", on="n1")),  # a quantity that is not one
    raw(pv("a", "1Gi", affinity={"required": {"nodeSelectorTerms": "x"}})),
    raw(pv("a", "1Gi", claim="db/x", spec={"claimRef": "db/x"})),
    raw(pod("p", node_name="n1", cpu="much", memory=None)),  # a bound pod's requests
    raw({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {}}),  # no name
    raw(node("n1", cpu="x")),
    b'{"type": "ADDED", "ts": "yesterday", "object": {"kind": "Pod", "metadata": {"name": "p"}}}',
    b'{"type": "ADDED", "object": {"metadata": {"name": "p"}}}',
    b'{"type": "ADDED", "object": {"kind": "", "metadata": {"name": "p"}}}',
    b'{"type": "CHANGED", "object": {"kind": "Pod", "metadata": {"name": "p"}}}',
    b'{"type": "ADDED", "position": "x", "object": {"kind": "Pod"}}',
    b"[1, 2]",
    b"junk",
]


@pytest.mark.parametrize("line", BAD, ids=range(len(BAD)))
def test_a_rejected_event_has_the_reason_every_service_gives(line: bytes) -> None:
    engine = IndexerEngine()
    actions(engine, ev(node("n1")))
    ops, reject = engine.handle_raw(line, 7)
    with pytest.raises(InputError) as e:
        parse_event(line, 7)
    assert ops == [] and reject == (e.value.line(), 7)


def test_a_rejected_event_is_at_the_position_it_carries() -> None:
    """As in every service: an event that can be read is at its log position, one that cannot at
    the message's offset + 1."""
    engine = IndexerEngine()
    line = json.loads(raw(pv("a", "lots", on="n1")))
    assert engine.handle_raw(json.dumps({**line, "position": 41}).encode(), 7)[1] == (
        "PersistentVolume a: spec.capacity.storage: quantities must match the regular expression "
        "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$': got 'lots'",
        41,
    )
    assert engine.handle_raw(b'{"position": 41, "type": "nope"}', 7)[1] == (
        "line 7: type: want one of ADDED, MODIFIED, DELETED, BOOKMARK, got 'nope'",
        7,
    )


def test_every_kind_is_decoded_and_a_bad_object_of_any_is_rejected() -> None:
    """The indexer keeps every kind berth reads, so it rejects what the scorer and buffer controller
    reject, with the same reason; kinds berth does not read are passed over."""
    engine = IndexerEngine()
    actions(engine, ev(node("n1")))
    metric = {"apiVersion": "slo.koordinator.sh/v1alpha1", "kind": "NodeMetric", "metadata": {"name": "n1"}}
    metric["status"] = {"nodeMetric": {"nodeUsage": {"resources": {"cpu": "lots"}}}}
    ops, reject = engine.handle_raw(raw(metric), 3)
    assert ops == [] and reject is not None
    assert reject[0].startswith("NodeMetric n1: status.nodeMetric.nodeUsage.resources.cpu: ")
    ops, reject = engine.handle_raw(raw(pvc("c", size="a lot")), 4)
    assert ops == [] and reject is not None and reject[0].startswith("PersistentVolumeClaim default/c: ")
    other = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": {"a": 1}}
    assert engine.handle_raw(raw(other)) == ([], None)


def test_the_simulator_shape_is_read_too() -> None:
    engine = IndexerEngine()
    actions(engine, ev(node("n1")))
    line = json.dumps({"time": "2026-11-01T10:00:00Z", "event": "Add", "resource": pv("a", "1Gi", on="n1")})
    ops, reason = engine.handle_raw(line.encode())
    assert reason is None and [a for op in ops for a in op.actions if a[0] not in OBJECTS] == [
        ["ZADD", "pvidx:n1:local", str(GI), "a"]
    ]


def test_an_older_event_after_a_newer_one_changes_nothing() -> None:
    engine = IndexerEngine()
    actions(engine, ev(node("n1")), ev(node("n2")))
    assert engine.handle_raw(raw(pod("p", node_name="n1", cpu="1", memory=None), rv="5"))[0]
    assert engine.handle_raw(raw(pod("p", node_name="n1", cpu="1", memory=None), "DELETED", rv="6"))[0]
    assert engine.handle_raw(raw(pod("p", node_name="n2", cpu="1", memory=None), rv="5")) == ([], None)
    assert engine.usage() == {}


@pytest_asyncio.fixture
async def index(redis_server: Server) -> AsyncIterator[RedisIndex]:
    client = Redis.from_url(f"redis://{redis_server.address}/0")
    yield RedisIndex(client, f"t{uuid.uuid4().hex[:8]}:")
    await client.aclose()


@pytest.mark.asyncio
async def test_writes_apply_once_whatever_the_redelivery(index: RedisIndex) -> None:
    engine = IndexerEngine()
    events = [ev(node("n1")), ev(pv("a", "10Gi", on="n1")), ev(pod("p", node_name="n1", cpu="1", memory=None), rv="5")]
    ops = [op for e in events for op in engine.handle(e)[0]]
    assert await index.apply(ops, {("berth.index-watermarks", 0): 3}, "2026-11-01T10:00:00Z") == 6  # index + objects
    assert await index.apply(ops) == 0  # the same batch again: every guard holds
    assert await index.used("n1") == {"cpu": 1000, "pods": 1}
    assert await index.node_pvs("n1", "local") == [("a", 10 * GI)]
    snap = await index.snapshot("berth.index-watermarks", 2)
    assert snap.watermarks == snap.after == {0: 3} and snap.clock == "2026-11-01T10:00:00Z"
    assert sorted(snap.objects) == sorted((e.key.decode(), msgspec.msgpack.encode(e.wire)) for e in events)


@pytest.mark.asyncio
async def test_a_deleted_object_leaves_the_snapshot_and_cannot_come_back(index: RedisIndex) -> None:
    """Its guard stays: an older event, redelivered to a restarted indexer, changes nothing."""
    added, deleted = ev(pvc("c"), rv="3"), ev(pvc("c"), "DELETED", rv="4")
    await index.apply(IndexerEngine().handle(added)[0] + IndexerEngine().handle(deleted)[0])
    assert await index.apply(IndexerEngine().handle(added)[0]) == 0
    assert (await index.snapshot("berth.index-watermarks", 1)).objects == []


@pytest.mark.asyncio
async def test_a_batch_of_several_lua_calls_applies_in_order_and_once(index: RedisIndex) -> None:
    engine = IndexerEngine()
    events = [ev(node("n1"))] + [ev(pv(f"pv-{i:04}", "1Gi", on="n1"), rv=str(10 + i)) for i in range(1200)]
    events.append(ev(pv("pv-0000", "1Gi", on="n1", claim="db/x", phase="Bound"), "MODIFIED", rv="9999"))
    ops = [op for e in events for op in engine.handle(e)[0]]
    assert len(ops) == 2404  # index and objects: five Lua calls, sent in one round trip
    assert await index.apply(ops) == 2404
    assert await index.apply(ops) == 0
    got = await index.node_pvs("n1", "local")
    assert len(got) == 1199 and got[0] == ("pv-0001", GI)  # the last operation (a claim) came last


class Recorder:
    def __init__(self) -> None:
        self.sent: list[bytes] = []
        self.dead: list[dict[str, Any]] = []

    async def send(self, value: bytes) -> None:
        self.sent.append(value)

    async def dead_letter(self, record: bytes) -> None:
        self.dead.append(json.loads(record))


@pytest.mark.asyncio
async def test_side_effects_redis_then_produce(index: RedisIndex) -> None:
    rec = Recorder()
    indexer = Indexer(IndexerEngine(), index, Metrics("indexer"), rec.send, rec.dead_letter)
    values = [(raw(node("n1")), 0, 0), (b"junk", 0, 1), (raw(pv("a", "1Gi", on="n1")), 0, 2)]
    await indexer.handle(values, full=False)
    assert list(indexer.steps) == ["redis", "produce"]
    assert json.loads(rec.sent[0]) == {"partition": 0, "offset": 3}
    assert await index.watermark("berth.index-watermarks", 0) == 3
    assert [(d["reason"].split(":")[0], d["position"], d["source"]) for d in rec.dead] == [
        ("line 2", 2, "indexer:berth.cluster-events/0@1")
    ]


class Raising(IndexerEngine):
    """An engine that finds a PV named "bad" bad, and has a bug that one named "boom" sets off."""

    def handle(self, ev: Event) -> tuple[list[Any], str | None]:
        if ev.model.name == "bad":
            raise InputError("PersistentVolume bad", "spec", "not what the engine expects")
        if ev.model.name == "boom":
            raise ZeroDivisionError("division by zero")
        return super().handle(ev)


@pytest.mark.asyncio
async def test_a_message_the_engine_finds_bad_is_dead_lettered_and_the_batch_goes_on(
    index: RedisIndex,
) -> None:
    rec = Recorder()
    indexer = Indexer(Raising(), index, Metrics("indexer"), rec.send, rec.dead_letter, "events")
    values = [(raw(node("n1")), 0, 0), (raw(pv("bad", "1Gi", on="n1")), 0, 1), (raw(pv("a", "1Gi", on="n1")), 0, 2)]
    await indexer.handle(values, full=False)
    assert [(d["reason"], d["position"], d["source"]) for d in rec.dead] == [
        ("cannot handle: PersistentVolume bad: spec: not what the engine expects", 2, "indexer:events/0@1")
    ]
    assert await index.node_pvs("n1", "local") == [("a", GI)]


@pytest.mark.asyncio
async def test_a_bug_in_the_engine_is_raised_and_nothing_is_written(index: RedisIndex) -> None:
    rec = Recorder()
    indexer = Indexer(Raising(), index, Metrics("indexer"), rec.send, rec.dead_letter, "events")
    values = [(raw(node("n1")), 0, 0), (raw(pv("boom", "1Gi", on="n1")), 0, 1), (raw(pv("a", "1Gi", on="n1")), 0, 2)]
    with pytest.raises(ZeroDivisionError):
        await indexer.handle(values, full=False)
    assert rec.dead == [] and rec.sent == [] and not indexer.steps
    assert await index.watermark("berth.index-watermarks", 0) == 0


@pytest.mark.asyncio
async def test_a_failed_redis_write_produces_nothing() -> None:
    from redis.exceptions import ConnectionError as RedisConnectionError

    from tests.servers import free_port

    rec = Recorder()
    gone = Redis.from_url(f"redis://127.0.0.1:{free_port()}/0")  # nothing listens: the write fails
    indexer = Indexer(IndexerEngine(), RedisIndex(gone), Metrics("indexer"), rec.send, rec.dead_letter)
    with pytest.raises(RedisConnectionError):
        await indexer.handle([(raw(node("n1")), 0, 0)], full=False)
    assert rec.sent == [] and not indexer.steps  # not produced, so not acknowledged: it comes again
    await gone.aclose()


@pytest.mark.asyncio
async def test_the_lag_is_what_the_topic_has_beyond_the_watermarks_written(index: RedisIndex) -> None:
    rec = Recorder()
    metrics = Metrics("indexer")
    indexer = Indexer(IndexerEngine(), index, metrics, rec.send, rec.dead_letter)
    assert indexer.lag(lambda p: 10, 1000.0) == (0, 0.0)  # nothing written yet: nothing known
    await indexer.handle([(raw(node("n1")), 0, 0), (raw(node("n2")), 0, 1), (raw(node("n3")), 1, 4)], full=False)
    indexer.written_at = 900.0
    ends = {0: 10, 1: 5}
    assert indexer.lag(ends.get, 1000.0) == (8, 100.0)
    assert metrics.indexer_lag_events._value.get() == 8 and metrics.indexer_lag_seconds._value.get() == 100.0
    assert indexer.lag({0: 2, 1: 5}.get, 1000.0) == (0, 0.0)  # caught up: no age
    assert indexer.lag({0: None, 1: 7}.get, 1000.0) == (2, 100.0)  # an end not known yet counts nothing


def test_an_object_msgpack_cannot_keep_is_bad_input() -> None:
    """JSON does not bound an integer, msgpack holds 64 bits: such an object is dead-lettered (the
    agent's `cannot handle`), not a bug that ends the indexer."""
    template = {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "t", "namespace": "web"}}
    template["template"] = {"spec": {"containers": [{"name": 2**70}]}}
    with pytest.raises(InputError, match=r"^PodTemplate/web/t: cannot be kept: can't serialize ints"):
        IndexerEngine().handle_raw(raw(template))
