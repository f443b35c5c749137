"""In-memory twins of the Kafka bus and the Redis store, for the embedded pipeline and tests.

They keep the same semantics as the real ones: partitions keyed by a hash of the key, per-group
committed offsets, at-least-once delivery from the committed position, atomic reservations.
"""

from __future__ import annotations

import asyncio
import zlib
from collections.abc import AsyncGenerator, Iterable, Mapping

from berth.core.api.watch import Event
from berth.core.ports import Message


class MemoryMessage(Message, frozen=True):
    """A message of the in-memory bus. `event`: the value already decoded, when the sender had it
    (the embedded pipeline's log reader); consumers in this process use it instead of decoding
    the bytes again. Kafka's messages never have one."""

    event: Event | None = None


GONE = MemoryMessage("", 0, -1, None, b"")  # stands in for a message forgotten (MemoryBus.forget)


class MemoryBus:
    def __init__(self) -> None:
        self.topics: dict[str, list[list[Message]]] = {}
        self.committed: dict[tuple[str, str, int], int] = {}  # (group, topic, partition) -> next offset
        self.forgotten: dict[tuple[str, int], int] = {}  # (topic, partition) -> first offset still kept
        self._arrived = asyncio.Event()
        self._ended = False

    async def start(self) -> None:
        return None

    async def create_topics(self, topics: Mapping[str, int]) -> None:
        for name, partitions in topics.items():
            self.topics.setdefault(name, [[] for _ in range(partitions)])

    def partition_of(self, topic: str, key: bytes | None) -> int:
        count = len(self.topics[topic])
        return 0 if key is None or count == 1 else zlib.crc32(key) % count

    async def send(self, topic: str, value: bytes, key: bytes | None = None, event: Event | None = None) -> None:
        """event: the value already decoded, carried on the message for this process's consumers."""
        self.put(topic, value, key, event)

    def put(self, topic: str, value: bytes, key: bytes | None = None, event: Event | None = None) -> None:
        """`send` without a coroutine to await (the embedded pipeline's reader sends every line)."""
        if topic not in self.topics:
            self.topics[topic] = [[]]
        p = self.partition_of(topic, key)
        log = self.topics[topic][p]
        log.append(MemoryMessage(topic, p, len(log), key, value, event))
        self._arrived.set()

    async def flush(self) -> None:
        return None

    def consumer(self, topics: list[str], group: str) -> MemoryConsumer:
        return MemoryConsumer(self, topics, group)

    async def committed_offsets(self, topic: str, group: str) -> dict[int, int]:
        return {
            p: self.committed[(group, topic, p)]
            for p in range(len(self.topics.get(topic, [])))
            if self.committed.get((group, topic, p), 0) > 0
        }

    async def history(self, topic: str, group: str, start: Mapping[int, int] | None = None) -> list[Message]:
        out: list[Message] = []
        for p, log in enumerate(self.topics.get(topic, [])):
            first = max((start or {}).get(p, 0), self.forgotten.get((topic, p), 0))
            out.extend(log[first : self.committed.get((group, topic, p), 0)])
        return out

    async def records(self, topic: str) -> list[Message]:
        return [m for p, log in enumerate(self.topics.get(topic, [])) for m in log[self.forgotten.get((topic, p), 0) :]]

    async def tail(self, topic: str) -> AsyncGenerator[Message, None]:
        read: dict[int, int] = {}
        while True:
            for p, log in enumerate(self.topics.get(topic, [])):
                read[p] = max(read.get(p, 0), self.forgotten.get((topic, p), 0))
                while read[p] < len(log):  # what is sent meanwhile comes too
                    read[p] += 1
                    yield log[read[p] - 1]
            await asyncio.sleep(0.02)

    def forget(self, topic: str, groups: Iterable[str]) -> None:
        """Drop the messages of `topic` that every one of `groups` has committed, as a broker's
        retention would (offsets stay; history and records start after them). For the embedded
        pipeline, whose consumers never read a topic's past again: it kept every line of the log."""
        groups = list(groups)
        for p, log in enumerate(self.topics.get(topic, [])):
            first = self.forgotten.get((topic, p), 0)
            upto = min((self.committed.get((g, topic, p), 0) for g in groups), default=first)
            log[first:upto] = [GONE] * (upto - first)
            self.forgotten[(topic, p)] = max(first, upto)

    async def stop(self) -> None:
        return None

    def end(self) -> None:
        """Nothing more comes from outside (the embedded pipeline has read its log): a consumer with
        nothing left to read returns at once instead of waiting out its timeout."""
        self._ended = True
        self._arrived.set()

    async def wait(self, timeout: float) -> None:
        if self._ended:
            return
        self._arrived.clear()
        try:
            await asyncio.wait_for(self._arrived.wait(), timeout)
        except TimeoutError:
            return


class MemoryConsumer:
    def __init__(self, bus: MemoryBus, topics: list[str], group: str) -> None:
        self.bus = bus
        self.topics = topics
        self.group = group
        self.position: dict[tuple[str, int], int] = {}

    async def start(self) -> None:
        for t in self.topics:
            if t not in self.bus.topics:
                await self.bus.create_topics({t: 1})
            for p in range(len(self.bus.topics[t])):
                self.position[(t, p)] = self.bus.committed.get((self.group, t, p), 0)

    def _pending(self) -> list[tuple[tuple[str, int], list[Message]]]:
        return [
            ((t, p), self.bus.topics[t][p])
            for (t, p) in self.position
            if self.position[(t, p)] < len(self.bus.topics[t][p])
        ]

    async def getmany(self, max_records: int = 500, timeout: float = 0.2) -> list[Message]:
        if not self._pending():
            await self.bus.wait(timeout)
        out: list[Message] = []
        for tp, log in self._pending():
            start = self.position[tp]
            chunk = log[start : start + max_records - len(out)]
            self.position[tp] = start + len(chunk)
            out.extend(chunk)
            if len(out) >= max_records:
                break
        return out

    async def commit(self) -> None:
        for (t, p), offset in self.position.items():
            self.bus.committed[(self.group, t, p)] = offset

    async def lag(self) -> int:
        return sum(len(self.bus.topics[t][p]) - pos for (t, p), pos in self.position.items())

    def assignment(self) -> frozenset[tuple[str, int]]:
        return frozenset(self.position)

    async def stop(self) -> None:
        return None
