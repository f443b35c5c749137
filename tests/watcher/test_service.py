"""The watcher service end to end: fake API server -> real client -> bus (memory, Kafka) and record file."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import pytest

from berth.adapters.bus.kafka import KafkaBus
from berth.adapters.bus.memory import MemoryBus
from berth.adapters.files.eventlog import EventWriter, read_events
from berth.adapters.kube.client import KubeClient, select_kinds
from berth.adapters.kube.watch import Watcher
from berth.core.api.watch import parse_event
from berth.core.ports import CLUSTER_EVENTS, Bus, Message
from berth.settings import from_env
from berth_cli.main import main
from berth_watcher.main import Options, serve
from berth_watcher.service import WatcherService
from tests.fakeapi import FakeAPI
from tests.servers import Server, free_port
from tests.watcher.conftest import Fixed, Sleeps, node, pod, summary
from tests.watcher.conftest import recorded as recorded_events


async def run_until(service: WatcherService, count: int, timeout: float = 5.0) -> None:
    """Run the service until it has published `count` events, then stop it as a signal would."""
    task = asyncio.create_task(service.run())
    try:
        async with asyncio.timeout(timeout):
            while service.published < count:
                await asyncio.sleep(0.005)
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def churn(api: FakeAPI, service: WatcherService) -> None:
    """A node and two pods listed, then a pod bound, changed again and deleted while watched. Published: 10
    events, 3 of them the BOOKMARKs that mark the first lists (their start, the nodes' end, the pods' end)."""
    api.add(node("n1"))
    api.add(pod("a"))
    api.add(pod("b"))
    task = asyncio.create_task(run_until(service, 10))
    await api.wait_for(lambda: api.open_watches("pods") == 1 and service.published == 6)
    api.modify(pod("a", node="n1"))
    api.modify(pod("a", node="n1", priority=5))
    api.delete(pod("b"))
    api.add(node("n2"))
    await task


def watcher(client: KubeClient) -> Watcher:
    return Watcher(client, select_kinds(["nodes", "pods"]), sleep=Sleeps(), rand=Fixed())


@pytest.mark.asyncio
async def test_publishes_keyed_per_object_and_records(api: FakeAPI, client: KubeClient, tmp_path: Path) -> None:
    bus = MemoryBus()
    await bus.create_topics({CLUSTER_EVENTS: 3})
    log = tmp_path / "rec" / "cluster.jsonl.gz"
    with EventWriter(str(log)) as record:
        service = WatcherService(watcher(client), bus, CLUSTER_EVENTS, record)
        await churn(api, service)
    messages = [m for part in bus.topics[CLUSTER_EVENTS] for m in part]
    assert len(messages) == 10
    by_key: dict[bytes, list[str]] = {}
    for m in messages:
        ev = parse_event(m.value)
        assert ev.ts is not None and b'"position"' not in m.value  # the worker numbers by offset
        assert m.partition == bus.partition_of(CLUSTER_EVENTS, m.key)
        by_key.setdefault(m.key or b"", []).append(ev.type)
    assert by_key == {
        b"//": ["BOOKMARK"],  # the kinds about to be listed
        b"Node//": ["BOOKMARK"],  # their lists' ends
        b"Pod//": ["BOOKMARK"],
        b"Node//n1": ["ADDED"],
        b"Node//n2": ["ADDED"],
        b"Pod/db/a": ["ADDED", "MODIFIED", "MODIFIED"],  # one object's events in order, on one partition
        b"Pod/db/b": ["ADDED", "DELETED"],
    }
    # the record is an event log berth replay reads: same events, in publishing order
    marked = recorded_events(str(log))
    assert len(marked) == 10 and [ev.position for ev in marked] == list(range(1, 11))
    assert [ev.type for ev in marked[:1]] == ["BOOKMARK"]
    recorded = [ev for ev in marked if ev.type != "BOOKMARK"]
    assert sorted(summary(recorded)[:3]) == [
        ("ADDED", "Node", "n1"),
        ("ADDED", "Pod", "db/a"),
        ("ADDED", "Pod", "db/b"),
    ]
    pods = [s for s in summary(recorded)[3:] if s[1] == "Pod"]  # each kind in its own order
    assert pods == [("MODIFIED", "Pod", "db/a"), ("MODIFIED", "Pod", "db/a"), ("DELETED", "Pod", "db/b")]
    published = [parse_event(m.value) for m in messages]
    assert {ev.model.resource_version for ev in published if ev.type != "BOOKMARK"} == {
        ev.object["metadata"]["resourceVersion"] for ev in recorded
    }
    assert all(ev.ts is not None for ev in recorded)


@pytest.mark.asyncio
async def test_a_recording_replays(api: FakeAPI, client: KubeClient, tmp_path: Path) -> None:
    log = tmp_path / "cluster.jsonl"
    api.add(node("n1"))
    api.add(pod("web-0"))  # pending: berth replay decides it
    with EventWriter(str(log)) as record:
        await run_until(WatcherService(watcher(client), None, record=record), 5)  # with the pods' list's end
    decisions = tmp_path / "decisions.jsonl"
    code = await asyncio.to_thread(main, ["replay", str(log), "--decisions", str(decisions), "--no-progress"])
    assert code == 0
    first = parse_decision(decisions.read_text().splitlines()[0])
    assert (first["pod"], first["status"], first["node"]) == ("db/web-0", "Scheduled", "n1")


def parse_decision(line: str) -> dict[str, str]:
    import json

    out: dict[str, str] = json.loads(line)
    return out


@pytest.fixture
def root_logging() -> Iterator[None]:
    """The command sets up JSON logs on the root logger; put pytest's handlers back afterwards."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


@pytest.mark.asyncio
@pytest.mark.usefixtures("root_logging")
async def test_the_command_records_a_cluster(api: FakeAPI, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    api.add(node("n1"))
    api.add(pod("a"))
    kubeconfig = api.write_kubeconfig(tmp_path / "kubeconfig")
    log = tmp_path / "out.jsonl"
    argv = ["watcher", "--kubeconfig", str(kubeconfig), "--kinds", "nodes,pods", "--record", str(log), "--no-publish"]
    assert await asyncio.to_thread(main, [*argv, "--once"]) == 0  # a snapshot: list once, exit
    assert summary(recorded_events(str(log))) == [
        ("BOOKMARK", "", ""),
        ("ADDED", "Node", "n1"),
        ("BOOKMARK", "Node", ""),
        ("ADDED", "Pod", "db/a"),
        ("BOOKMARK", "Pod", ""),
    ]
    assert not api.watches("pods") and not api.lists("jobs")

    assert await asyncio.to_thread(main, [*argv, "--duration", "0.3"]) == 0  # watches until the time is up
    assert len([ev for ev in read_events(str(log), strict=True) if ev.type != "BOOKMARK"]) <= 2

    assert await asyncio.to_thread(main, ["watcher", "--no-publish"]) == 2
    assert "--no-publish: needs --record" in capsys.readouterr().err
    assert await asyncio.to_thread(main, ["watcher", "--kinds", "pods,widgets"]) == 2
    assert "unknown kind 'widgets'" in capsys.readouterr().err
    assert (
        await asyncio.to_thread(
            main, ["watcher", "--kubeconfig", str(tmp_path / "nope"), "--no-publish", "--record", str(log)]
        )
        == 2
    )
    assert "config: kubeconfig:" in capsys.readouterr().err


@pytest.mark.asyncio
async def test_serve_is_ready_once_every_kind_is_listed(api: FakeAPI, client: KubeClient, tmp_path: Path) -> None:
    port = free_port()
    settings = from_env({}, service__http_port=port)
    api.add(node("n1"))
    api.add(pod("a"))
    api.hang("GET", "pods", watch=False)
    bus = MemoryBus()
    stop = asyncio.Event()
    options = Options(kinds=select_kinds(["nodes", "pods"]), record=str(tmp_path / "rec.jsonl"))
    task = asyncio.create_task(serve(settings, stop, options, client=client, bus=bus))
    base = f"http://127.0.0.1:{port}"
    async with aiohttp.ClientSession() as http:
        await api.wait_for(lambda: len(api.lists("pods")) == 1)
        async with http.get(f"{base}/healthz") as r:
            assert r.status == 200
        async with http.get(f"{base}/readyz") as r:
            assert r.status == 503  # pods are not listed yet
        api.release()  # the hung list fails; the retry lists
        await api.wait_for(lambda: api.open_watches("pods") == 1)
        async with http.get(f"{base}/readyz") as r:
            assert r.status == 200
        async with http.get(f"{base}/metrics") as r:
            assert 'berth_events_total{service="watcher"} 5.0' in await r.text()
    stop.set()
    service = await asyncio.wait_for(task, 5)
    assert service.published == 5
    keys = [m.key for m in bus.topics[CLUSTER_EVENTS][0]]
    assert keys == [b"//", b"Node//n1", b"Node//", b"Pod/db/a", b"Pod//"]  # the first lists' BOOKMARKs around them
    assert len(list(read_events(str(tmp_path / "rec.jsonl"), strict=True))) == 5  # closed: all written


@pytest.mark.integration
@pytest.mark.asyncio
async def test_publishes_through_kafka(api: FakeAPI, client: KubeClient, broker: Server) -> None:
    topic = f"test.events.{uuid.uuid4().hex[:8]}"
    bus: Bus = KafkaBus(broker.address, client_id="test-watcher", session_timeout_ms=6000)
    await bus.start()
    try:
        await bus.create_topics({topic: 2})
        await churn(api, WatcherService(watcher(client), bus, topic))
        consumer = bus.consumer([topic], "test-watcher")
        await consumer.start()
        got: list[Message] = []
        try:
            for _ in range(50):
                got += await consumer.getmany(100, timeout=0.2)
                if len(got) >= 10:
                    break
        finally:
            await consumer.stop()
    finally:
        await bus.stop()
    pod_a = [parse_event(m.value).type for m in got if m.key == b"Pod/db/a"]
    assert len(got) == 10 and pod_a == ["ADDED", "MODIFIED", "MODIFIED"]
    assert len({m.partition for m in got if m.key == b"Pod/db/a"}) == 1
