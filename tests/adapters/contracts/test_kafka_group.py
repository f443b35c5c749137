"""The Kafka bus's group membership on the real broker: a stopped member leaves its group."""

from __future__ import annotations

import uuid

import pytest
from aiokafka.admin import AIOKafkaAdminClient

from berth.adapters.bus.kafka import KafkaBus
from tests.servers import Server


async def members(address: str, group: str) -> list[str]:
    admin = AIOKafkaAdminClient(bootstrap_servers=address)
    await admin.start()
    try:
        got = await admin.describe_consumer_groups([group])
    finally:
        await admin.close()
    return [m[0] for response in got for g in response.groups for m in g[5]]


@pytest.mark.asyncio
@pytest.mark.parametrize("joins", [1, 2])  # Tansu numbers the first generation 0, the next 1
async def test_a_stopped_member_leaves_its_group(broker: Server, joins: int) -> None:
    """Else the next member waits for its session to time out (on Tansu, a follower's SyncGroup
    waits for a leader that is gone, then joins again)."""
    tag = uuid.uuid4().hex[:8]
    topic, group = f"test.{tag}", f"g-{tag}"
    bus = KafkaBus(broker.address, client_id=f"test-{tag}", session_timeout_ms=6000)
    await bus.create_topics({topic: 1})
    for _ in range(joins):
        consumer = bus.consumer([topic], group)
        await consumer.start()
        while not consumer.assignment():
            await consumer.getmany(timeout=0.05)
        assert len(await members(broker.address, group)) == 1
        await consumer.stop()
        assert await members(broker.address, group) == []
