"""The bus on Kafka (aiokafka). At-least-once: manual commits, no transactions, no idempotent producer
(neither is needed: handlers are idempotent), acks=all."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, Mapping
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import KafkaError, KafkaTimeoutError, TopicAlreadyExistsError
from aiokafka.protocol.group import LeaveGroupRequest

from berth.core.ports import Message


class KafkaBus:
    def __init__(
        self,
        bootstrap: str,
        client_id: str = "berth",
        security: Mapping[str, Any] | None = None,
        session_timeout_ms: int = 10_000,
        heartbeat_interval_ms: int = 1_000,
        request_timeout_ms: int = 30_000,
        fetch_max_wait_ms: int = 100,
        retained: Mapping[str, Mapping[int, int]] | None = None,
        group_instance_id: str = "",
    ) -> None:
        """retained: per topic and partition, the first offset history() may read (what retention
        would have deleted below it, where the broker cannot delete records)."""
        self.bootstrap = bootstrap
        self.retained = {t: dict(p) for t, p in (retained or {}).items()}
        self.client_id = client_id
        self.security = dict(security or {})
        self.session_timeout_ms = session_timeout_ms
        self.heartbeat_interval_ms = heartbeat_interval_ms
        self.request_timeout_ms = request_timeout_ms
        self.fetch_max_wait_ms = fetch_max_wait_ms
        self.group_instance_id = group_instance_id  # "": dynamic membership
        self._producer: AIOKafkaProducer | None = None
        self._pending: list[asyncio.Future[Any]] = []

    def _common(self) -> dict[str, Any]:
        return {
            "bootstrap_servers": self.bootstrap,
            "client_id": self.client_id,
            "request_timeout_ms": self.request_timeout_ms,
            **self.security,
        }

    async def start(self) -> None:
        producer = AIOKafkaProducer(acks="all", linger_ms=5, max_batch_size=1 << 20, **self._common())
        try:
            await producer.start()
        except BaseException:
            await producer.stop()  # it holds a client even when it could not bootstrap
            raise
        self._producer = producer

    async def create_topics(self, topics: Mapping[str, int]) -> None:
        admin = AIOKafkaAdminClient(**self._common())
        await admin.start()
        try:
            for name, partitions in topics.items():
                with contextlib.suppress(TopicAlreadyExistsError):
                    await admin.create_topics([NewTopic(name, num_partitions=partitions, replication_factor=1)])
        finally:
            await admin.close()

    async def send(self, topic: str, value: bytes, key: bytes | None = None) -> None:
        assert self._producer is not None, "start() the bus first"
        self._pending.append(await self._producer.send(topic, value, key=key))
        if len(self._pending) >= 5000:
            await self.flush()

    async def flush(self) -> None:
        if self._producer is None or not self._pending:
            return
        await self._producer.flush()
        pending, self._pending = self._pending, []
        for fut in pending:
            fut.result()  # raises if a send failed: the batch is not committed, it will be redelivered

    def consumer(self, topics: list[str], group: str) -> KafkaConsumer:
        return KafkaConsumer(self, topics, group)

    async def committed_offsets(self, topic: str, group: str) -> dict[int, int]:
        """The group's committed positions (OffsetFetch naming the partitions: Tansu needs them)."""
        admin = AIOKafkaAdminClient(**self._common())
        await admin.start()
        try:
            meta = await admin.describe_topics([topic])
            partitions = sorted(p["partition"] for p in meta[0]["partitions"]) if meta else []
            tps = [TopicPartition(topic, p) for p in partitions]
            committed = await admin.list_consumer_group_offsets(group, partitions=tps) if tps else {}
        finally:
            await admin.close()
        return {tp.partition: meta.offset for tp, meta in committed.items() if meta.offset > 0}

    async def history(self, topic: str, group: str, start: Mapping[int, int] | None = None) -> list[Message]:
        return await self._read(topic, await self.committed_offsets(topic, group), start)

    async def _partitions(self, topic: str) -> list[int]:
        admin = AIOKafkaAdminClient(**self._common())
        await admin.start()
        try:
            meta = await admin.describe_topics([topic])
            return sorted(p["partition"] for p in meta[0]["partitions"]) if meta else []
        finally:
            await admin.close()

    async def tail(self, topic: str) -> AsyncGenerator[Message, None]:
        partitions = await self._partitions(topic)
        while not partitions:  # not created yet: it will be, by the first service to start
            await asyncio.sleep(1)
            partitions = await self._partitions(topic)
        tps = [TopicPartition(topic, p) for p in partitions]
        reader = AIOKafkaConsumer(group_id=None, enable_auto_commit=False, **self._common())
        await reader.start()
        try:
            reader.assign(tps)
            await reader.seek_to_beginning(*tps)
            while True:
                batches = await reader.getmany(*tps, timeout_ms=500, max_records=5000)
                for tp in sorted(batches, key=lambda tp: tp.partition):
                    for r in batches[tp]:
                        yield Message(r.topic, r.partition, r.offset, r.key, r.value)
        finally:
            await reader.stop()

    async def records(self, topic: str) -> list[Message]:
        partitions = await self._partitions(topic)
        out: list[Message] = []
        if not partitions:
            return out
        reader = AIOKafkaConsumer(group_id=None, enable_auto_commit=False, **self._common())
        await reader.start()
        try:
            for p in partitions:
                tp = TopicPartition(topic, p)
                reader.assign([tp])
                await reader.seek_to_beginning(tp)
                # the end is the high watermark of the fetch responses (Tansu's ListOffsets is not
                # reliable for this, see KafkaConsumer.lag)
                idle = 0
                while True:
                    got = (await reader.getmany(tp, timeout_ms=1000, max_records=5000)).get(tp, [])
                    out += [Message(r.topic, r.partition, r.offset, r.key, r.value) for r in got]
                    high = reader.highwater(tp)
                    if high is not None and await reader.position(tp) >= high:
                        break
                    idle = 0 if got else idle + 1
                    if idle >= 60:  # a minute without a record or the partition's end: no hang
                        raise KafkaTimeoutError(f"reading {topic}/{p}: no records and no end in 60 s")
        finally:
            await reader.stop()
        return out

    async def read_until(
        self, topic: str, ends: Mapping[int, int], start: Mapping[int, int] | None = None
    ) -> list[Message]:
        """The messages of each partition before its offset in `ends`, from its offset in `start`
        (else the beginning), in partition order."""
        return await self._read(topic, ends, start)

    async def _read(self, topic: str, ends: Mapping[int, int], start: Mapping[int, int] | None = None) -> list[Message]:
        """Each partition's messages from `start` (else its beginning, never below what is retained)
        up to its offset in `ends`, in partition order."""
        kept = self.retained.get(topic, {})
        spans = {
            p: (first, end)
            for p, end in sorted(ends.items())
            if (first := max((start or {}).get(p, 0), kept.get(p, 0))) < end
        }
        out: list[Message] = []
        if not spans:
            return out  # (an unassigned group-less consumer fails to stop cleanly in aiokafka)
        reader = AIOKafkaConsumer(group_id=None, enable_auto_commit=False, **self._common())
        await reader.start()
        try:
            for p, (first, end) in spans.items():
                tp = TopicPartition(topic, p)
                reader.assign([tp])
                if first:
                    reader.seek(tp, first)
                else:
                    await reader.seek_to_beginning(tp)
                while await reader.position(tp) < end:
                    batch = await reader.getmany(tp, timeout_ms=1000, max_records=5000)
                    for r in batch.get(tp, []):
                        if r.offset < end:
                            out.append(Message(r.topic, r.partition, r.offset, r.key, r.value))
        finally:
            await reader.stop()
        return out

    async def stop(self) -> None:
        if self._producer is not None:
            await self.flush()
            await self._producer.stop()
            self._producer = None


class KafkaConsumer:
    def __init__(self, bus: KafkaBus, topics: list[str], group: str) -> None:
        self._consumer = AIOKafkaConsumer(
            *topics,
            group_id=group,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            session_timeout_ms=bus.session_timeout_ms,
            heartbeat_interval_ms=bus.heartbeat_interval_ms,
            # A fetch holds every partition on that broker until it is answered: one idle partition
            # in it stalls the busy ones for up to this long (aiokafka's default is 500 ms).
            fetch_max_wait_ms=bus.fetch_max_wait_ms,
            group_instance_id=bus.group_instance_id or None,
            **bus._common(),
        )

    async def start(self) -> None:
        await self._consumer.start()

    async def getmany(self, max_records: int = 500, timeout: float = 0.2) -> list[Message]:
        batches = await self._consumer.getmany(timeout_ms=int(timeout * 1000), max_records=max_records)
        out: list[Message] = []
        for tp in sorted(batches, key=lambda tp: (tp.topic, tp.partition)):
            out.extend(Message(r.topic, r.partition, r.offset, r.key, r.value) for r in batches[tp])
        return out

    async def commit(self) -> None:
        await self._consumer.commit()

    async def lag(self) -> int:
        total = 0
        for tp in self._consumer.assignment():
            high = self._consumer.highwater(tp)  # from fetch responses: right even where end offsets are not
            if high is None:
                return 1  # nothing fetched yet: unknown, assume more is coming
            total += max(0, high - await self._consumer.position(tp))
        return total

    def assignment(self) -> frozenset[tuple[str, int]]:
        return frozenset((tp.topic, tp.partition) for tp in self._consumer.assignment())

    async def stop(self) -> None:
        """Stop consuming and leave the group (a dynamic member), so that the next member to join is
        not kept waiting for this one's session to time out."""
        coordinator: Any = getattr(self._consumer, "_coordinator", None)
        if coordinator is not None and coordinator.generation == 0 and coordinator.member_id:
            # aiokafka leaves only past generation 0 (Kafka numbers a group's first generation 1;
            # Tansu numbers it 0): leave here, once its heartbeats and rejoins have ended
            member, group = coordinator.member_id, coordinator.group_id
            static = coordinator._group_instance_id is not None
            await coordinator.close()
            if not static:  # a static member stays in the group (KIP-345), as aiokafka's own leave does
                with contextlib.suppress(KafkaError, OSError):
                    await coordinator._send_req(LeaveGroupRequest(group, member))
        await self._consumer.stop()
