"""The scorer SIGKILLed again and again mid-stream: no decision is ever missing, and a decision comes
out twice only as documented (docs/services.md, Delivery): the same record again, because the
scorer was killed after the broker had it and before its dedup mark was written.
Real broker (Tansu) and redis-server; the run has its own topics, group and key prefix."""

from __future__ import annotations

import asyncio
import signal
import threading
import time
from pathlib import Path
from typing import Any, cast

import pytest
from aiokafka.admin import AIOKafkaAdminClient

from berth.adapters.files.eventlog import read_events
from tests.integration.services import collect, decode, isolated_env, service
from tests.integration.test_equivalence import embedded
from tests.integration.test_streaming import publish
from tests.servers import Server

SAMPLE = str(Path(__file__).parents[2] / "examples" / "small.jsonl.gz")
pytestmark = [pytest.mark.integration, pytest.mark.timeout(400)]


def differing(a: dict[str, object], b: dict[str, object], runs: list[Path]) -> str:
    """What a failure needs: the fields that differ, and each start's take-over and conflict lines."""
    fields = {k: (a.get(k), b.get(k)) for k in sorted(a.keys() | b.keys()) if a.get(k) != b.get(k) and k != "nodes"}
    first, again = (cast(dict[str, Any], d.get("nodes") or {}) for d in (a, b))
    nodes = {
        n: (first.get(n), again.get(n)) for n in sorted(first.keys() | again.keys()) if first.get(n) != again.get(n)
    }
    logs = [
        f"{run.name}: {line}"
        for run in runs
        for line in (run / "scorer.log").read_text().splitlines()
        if "state built" in line or "conflict" in line or "lost" in line
    ]
    return "\n".join(
        [
            f"decision {a.get('decisionId')} came out twice with different contents: {fields}",
            f"nodes: {dict(list(nodes.items())[:3])} ({len(nodes)} differ)",
            *logs,
        ]
    )


def decisions(env: dict[str, str], want: int, timeout: float = 60, grace: float = 0) -> list[dict[str, object]]:
    return decode(asyncio.run(collect(env, env["BERTH_TOPIC_DECISIONS"], want, timeout, grace)))


async def member_ids(env: dict[str, str]) -> list[str]:
    """The member ids of the scorer's group, as the broker describes it."""
    admin = AIOKafkaAdminClient(bootstrap_servers=env["BERTH_KAFKA_BOOTSTRAP_SERVERS"])
    await admin.start()
    try:
        (response,) = await admin.describe_consumer_groups([env["BERTH_GROUP_SCORER"]])
    finally:
        await admin.close()
    return [m[0] for g in response.groups for m in g[5]]


@pytest.mark.parametrize(
    "membership",
    [
        pytest.param({}, id="dynamic membership"),
        # KIP-345: each restart rejoins as the same static member (the manifests give the pod's name)
        pytest.param({"BERTH_KAFKA_GROUP_INSTANCE_ID": "berth-scorer-0"}, id="static membership"),
    ],
)
def test_a_scorer_killed_three_times_misses_no_decision(
    broker: Server, redis_server: Server, tmp_path: Path, membership: dict[str, str]
) -> None:
    want, _ = embedded(SAMPLE)
    # INFO: each start's take-over line and any reservation conflict are in its own log, for a failure
    env = {**isolated_env(broker, redis_server, BERTH_LOG_LEVEL="INFO"), **membership}
    total = sum(1 for _ in read_events(SAMPLE))
    chunks = [range(i, min(i + 20, total)) for i in range(0, total, 20)]

    def paced() -> None:  # the log arrives while the scorer is killed and restarted
        for c in chunks:
            asyncio.run(publish(env, SAMPLE, only=c))
            time.sleep(0.2)

    publisher = threading.Thread(target=paced)
    publisher.start()
    seen = 0
    kills = 0
    runs = [tmp_path / f"scorer-{i}" for i in range(4)]
    for run in runs:
        run.mkdir()
    for run in runs[:3]:
        with service("scorer", env, log_dir=run) as scorer:
            seen = len(decisions(env, seen + 5, timeout=90))  # it is deciding: kill it at work
            scorer.send_signal(signal.SIGKILL)
            scorer.wait(10)
            kills += scorer.returncode == -signal.SIGKILL
    publisher.join(180)
    with service("scorer", env, log_dir=runs[3]):
        got = decisions(env, len(want), timeout=120, grace=5)
        members = asyncio.run(member_ids(env))

    instance = membership.get("BERTH_KAFKA_GROUP_INSTANCE_ID")
    # the broker names a static member after its instance id (Kafka: "<instance id>-<uuid>")
    assert len(members) == 1 and (instance is None) != members[0].startswith(f"{instance}-")

    first: dict[str, dict[str, object]] = {}
    for d in got:
        earlier = first.setdefault(str(d["decisionId"]), d)
        assert earlier == d, differing(earlier, d, runs)
    assert kills == 3
    assert seen < len(want)  # the last kill was mid-stream
    assert list(first.values()) == want  # none missing, none new, in order
