"""`berth decisions`: the decisions topic read back as a user reads it, from a real broker (Tansu) and,
for --follow, from the in-memory twin of the bus."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import json
import uuid

import pytest

from berth.adapters.bus.kafka import KafkaBus
from berth.adapters.bus.memory import MemoryBus
from berth.core.pipeline.records import BufferStatusRecord, DecisionRecord, encode_record
from berth_cli.decisions import show
from berth_cli.main import main
from tests.servers import Server


def decision(pod: str, status: str = "Scheduled", node: str | None = "n1", attempt: int = 1) -> DecisionRecord:
    message = f"Successfully assigned {pod} to {node}" if node else "0/2 nodes are available: 2 Insufficient cpu."
    return DecisionRecord(
        ts="2026-11-01T10:00:00Z", decision_id=f"id-{pod}-{attempt}", position=attempt, attempt=attempt,
        pod=pod, status=status, node=node, message=message,
    )  # fmt: skip


RECORDS = [
    decision("db/pg-0"),
    decision("web/api-0", "Unschedulable", None),
    decision("web/api-0", attempt=2, node="n2"),
]


async def publish(bus: KafkaBus | MemoryBus, topic: str) -> None:
    await bus.create_topics({topic: 1})
    for r in RECORDS:
        await bus.send(topic, encode_record(r), r.pod.encode())
    # a buffer status on the same topic is not a decision: passed over
    status = BufferStatusRecord(ts=None, position=9, buffer="web/headroom", status={}, ready_replicas=0)
    await bus.send(topic, encode_record(status), b"web/headroom")
    await bus.flush()


@pytest.mark.integration
@pytest.mark.parametrize(
    ("flags", "pods"),
    [
        ([], ["db/pg-0", "web/api-0", "web/api-0"]),
        (["-n", "web"], ["web/api-0", "web/api-0"]),
        (["--pod", "pg-0", "-n", "db"], ["db/pg-0"]),
        (["--pod", "db/pg-0"], ["db/pg-0"]),
    ],
)
def test_reads_the_topic_from_a_real_broker(
    broker: Server,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    flags: list[str],
    pods: list[str],
) -> None:
    topic = f"test.decisions.{uuid.uuid4().hex[:8]}"

    async def setup() -> None:
        bus = KafkaBus(broker.address, client_id="test")
        await bus.start()
        try:
            await publish(bus, topic)
        finally:
            await bus.stop()

    asyncio.run(setup())
    monkeypatch.setenv("BERTH_TOPIC_DECISIONS", topic)
    assert main(["decisions", "--bootstrap-servers", broker.address, "-o", "json", *flags]) == 0
    out = capsys.readouterr().out
    assert [json.loads(line)["pod"] for line in out.splitlines()] == pods
    assert main(["decisions", "--bootstrap-servers", broker.address, *flags]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0].split() == ["TIME", "POD", "STATUS", "NODE", "ATTEMPT", "MESSAGE"]
    assert [line.split()[1] for line in table[1:]] == pods
    assert "\x1b" not in "".join(table)  # no terminal escapes when not on a terminal


@pytest.mark.integration
def test_an_empty_topic_says_so(
    broker: Server, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    topic = f"test.decisions.{uuid.uuid4().hex[:8]}"
    monkeypatch.setenv("BERTH_TOPIC_DECISIONS", topic)
    assert main(["decisions", "--bootstrap-servers", broker.address]) == 0
    out, err = capsys.readouterr()
    assert out == "" and err == f"berth decisions: no decisions on {topic} at {broker.address}\n"


@pytest.mark.asyncio
async def test_follow_prints_what_comes_later() -> None:
    bus = MemoryBus()
    await publish(bus, "d")
    out = io.StringIO()
    args = argparse.Namespace(output="table", pod=None, namespace=None)
    task = asyncio.create_task(show(bus.tail("d"), args, out))
    for _ in range(100):
        await asyncio.sleep(0.01)
        if out.getvalue().count("\n") == 4:  # the header and three decisions
            break
    late = decision("db/pg-1", node="n3")
    await bus.send("d", encode_record(late), b"db/pg-1")
    for _ in range(100):
        await asyncio.sleep(0.01)
        if "db/pg-1" in out.getvalue():
            break
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    lines = out.getvalue().splitlines()
    assert [line.split()[1] for line in lines[1:]] == ["db/pg-0", "web/api-0", "web/api-0", "db/pg-1"]
    assert lines[2].split()[2:4] == ["Unschedulable", "-"] and lines[2].endswith("2 Insufficient cpu.")
