"""The services under failure: redelivery, restarts, two replicas, poison messages.
Real broker (Tansu) and redis-server; each test has its own topics, groups and key prefix."""

from __future__ import annotations

import asyncio
import signal
import time
from pathlib import Path

import msgspec
import pytest
from redis.asyncio import Redis

from berth.adapters.bus.kafka import KafkaBus
from berth.adapters.files.eventlog import read_events
from berth.adapters.store.redisindex import RedisIndex
from berth.core.api.watch import encode_line
from tests.integration.services import collect, decode, isolated_env, service
from tests.integration.test_equivalence import embedded
from tests.servers import Server

SCARCE = str(Path(__file__).parents[1] / "data" / "logs" / "scarce-pvs.jsonl")
pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]


async def publish(
    env: dict[str, str],
    log: str,
    copies: int = 1,
    only: range | None = None,
    poison: list[bytes] = (),
    poison_after: list[bytes] = (),
) -> int:
    bus = KafkaBus(env["BERTH_KAFKA_BOOTSTRAP_SERVERS"], client_id="test-publisher")
    await bus.start()
    topic = env["BERTH_TOPIC_CLUSTER_EVENTS"]
    await bus.create_topics({topic: 1})
    sent = 0
    for bad in poison:
        await bus.send(topic, bad, b"poison")
    for i, ev in enumerate(read_events(log)):
        if only is not None and i not in only:
            continue
        for _ in range(copies):
            await bus.send(topic, encode_line(ev, with_position=True), ev.key)
            sent += 1
    for bad in poison_after:
        await bus.send(topic, bad, b"poison")
    await bus.flush()
    await bus.stop()
    return sent


def wait_for(env: dict[str, str], topic: str, want: int, timeout: float = 120) -> list[dict[str, object]]:
    return decode(asyncio.run(collect(env, topic, want, timeout)))


async def index_state(env: dict[str, str], nodes: list[str]) -> dict[str, object]:
    client = Redis.from_url(env["BERTH_REDIS_URL"])
    index = RedisIndex(client, env["BERTH_REDIS_PREFIX"])
    out: dict[str, object] = {}
    for n in nodes:
        out[n] = (await index.used(n), await index.node_pvs(n, "local"))
    await client.aclose()
    return out


def test_every_event_twice_changes_nothing(broker: Server, redis_server: Server, tmp_path: Path) -> None:
    want, _ = embedded(SCARCE)
    once, twice = isolated_env(broker, redis_server), isolated_env(broker, redis_server)
    states = []
    for env, copies in ((once, 1), (twice, 2)):
        with (
            service("indexer", env, "--data-dir", str(tmp_path / f"faust{copies}"), log_dir=tmp_path),
            service("scorer", env, log_dir=tmp_path),
        ):
            asyncio.run(publish(env, SCARCE, copies))
            got = wait_for(env, env["BERTH_TOPIC_DECISIONS"], len(want), timeout=60)
            time.sleep(2)  # let the indexer finish its last batch
            states.append(asyncio.run(index_state(env, ["n0", "n1", "n2"])))
        assert got == want
    assert states[0] == states[1]
    assert states[0]["n0"] == ({}, [("pv-0", 10 * 2**30), ("pv-3", 10 * 2**30)])  # the per-node PV index


def test_a_scorer_killed_mid_stream_neither_repeats_nor_misses(
    broker: Server, redis_server: Server, tmp_path: Path
) -> None:
    want, _ = embedded(SCARCE)
    env = isolated_env(broker, redis_server)
    total = sum(1 for _ in read_events(SCARCE))
    half = total // 2 + 3
    with service("scorer", env, log_dir=tmp_path) as first:
        asyncio.run(publish(env, SCARCE, only=range(half)))
        early = [w for w in want if int(w["position"]) <= half]  # type: ignore[call-overload]
        assert wait_for(env, env["BERTH_TOPIC_DECISIONS"], len(early)) == early
        first.send_signal(signal.SIGKILL)
        first.wait(10)
    asyncio.run(publish(env, SCARCE, only=range(half, total)))
    with service("scorer", env, log_dir=tmp_path):
        got = wait_for(env, env["BERTH_TOPIC_DECISIONS"], len(want), timeout=60)
    assert got == want


def test_two_replicas_never_take_a_pv_twice_or_overcommit(broker: Server, redis_server: Server, tmp_path: Path) -> None:
    want, _ = embedded(SCARCE)
    env = isolated_env(broker, redis_server)
    with service("scorer", env, log_dir=tmp_path) as a, service("scorer", env, log_dir=tmp_path):
        time.sleep(8)  # both joined the group: one holds the partition, the other stands by
        asyncio.run(publish(env, SCARCE, only=range(20)))
        wait_for(env, env["BERTH_TOPIC_DECISIONS"], 3, timeout=60)
        a.send_signal(signal.SIGKILL)  # whoever was active, the other one must finish consistently
        a.wait(10)
        asyncio.run(publish(env, SCARCE, only=range(20, 10**6)))
        got = wait_for(env, env["BERTH_TOPIC_DECISIONS"], len(want), timeout=90)
    assert {(d["pod"], d["status"], d["node"]) for d in got} <= {(d["pod"], d["status"], d["node"]) for d in want}
    holders: dict[str, str] = {}
    cpu: dict[str, int] = {}
    gone = {  # pod -> position of its deletion in the log
        f"{meta.get('namespace', 'default')}/{meta['name']}": ev.position
        for ev in read_events(SCARCE)
        if ev.deleted
        for meta in [msgspec.json.decode(ev.raw)["metadata"]]
    }
    assert len(gone) == 2
    for d in sorted(got, key=lambda d: int(d["position"])):  # type: ignore[call-overload]
        if d["status"] != "Scheduled":
            continue
        for pod, at in gone.items():
            if int(d["position"]) >= at and pod in holders.values():  # type: ignore[call-overload]
                holders = {pv: p for pv, p in holders.items() if p != pod}
                cpu[pod] = 0
        for b in d["volumeBindings"]:  # type: ignore[attr-defined]
            assert b["pv"] not in holders, f"{b['pv']} reserved twice"
            holders[b["pv"]] = str(d["pod"])
        cpu[str(d["pod"])] = 1500
    per_node: dict[str, int] = {}
    for d in got:
        if d["status"] == "Scheduled" and cpu.get(str(d["pod"])):
            per_node[str(d["node"])] = per_node.get(str(d["node"]), 0) + 1500
    assert all(v <= 4000 for v in per_node.values()), per_node


def test_poison_messages_go_to_the_dead_letter_topic(broker: Server, redis_server: Server, tmp_path: Path) -> None:
    want, _ = embedded(SCARCE)
    env = isolated_env(broker, redis_server)
    poison = [
        b"\xff\xfe not json",
        b'{"type": "ADDED", "object": {"kind": "PersistentVolume", "metadata": {"name": "x"}, "spec": {"capacity": {"storage": "lots"}}}}',
    ]
    with service("scorer", env, log_dir=tmp_path):
        asyncio.run(publish(env, SCARCE, poison=poison))
        got = wait_for(env, env["BERTH_TOPIC_DECISIONS"], len(want), timeout=60)
        dead = wait_for(env, env["BERTH_TOPIC_DEAD_LETTER"], 2, timeout=20)
    assert got == want
    assert [d["reason"].split(":")[0] for d in dead] == ["line 1", "PersistentVolume x"]  # type: ignore[union-attr]
    assert dead[1]["text"] == poison[1].decode()
    assert all(str(d["source"]).startswith("scorer:") for d in dead)
    assert msgspec.json.decode(dead[1]["text"])["object"]["metadata"]["name"] == "x"  # type: ignore[arg-type]


_PV = b'{"type": "ADDED", "object": {"kind": "PersistentVolume", "metadata": {"name": "x"}, "spec": {"capacity": {"storage": "1Gi"}}}}'
# issue 20's poison kinds that crash-looped the scorer: each is dead-lettered, and the service goes on
CRASHERS = [
    b'{"type": "ADDED", "object": ' + b"[" * 1000 + b"]" * 1000 + b"}",
    _PV.replace(b'"1Gi"', b'"1' + b"0" * 5000 + b'"'),
    _PV.replace(b'"x"', b'"\xff"'),
    b'{"ts": "9999-12-31T23:59:59-23:59", ' + _PV[1:],
]


@pytest.mark.parametrize("where", ["before", "after"])
def test_poison_that_crashed_the_scorer_is_dead_lettered(
    broker: Server, redis_server: Server, tmp_path: Path, where: str
) -> None:
    want, _ = embedded(SCARCE)
    env = isolated_env(broker, redis_server)
    before, after = (CRASHERS, []) if where == "before" else ([], CRASHERS)
    with service("scorer", env, log_dir=tmp_path):
        asyncio.run(publish(env, SCARCE, poison=before, poison_after=after))
        got = wait_for(env, env["BERTH_TOPIC_DECISIONS"], len(want), timeout=60)
        dead = wait_for(env, env["BERTH_TOPIC_DEAD_LETTER"], len(CRASHERS), timeout=30)
    assert got == want
    reasons = [str(d["reason"]) for d in dead]
    assert len(reasons) == len(CRASHERS), reasons
    for reason, part in zip(reasons, ["nested too deeply", "at most 100", "not UTF-8", "outside years"], strict=True):
        assert part in reason, reasons
