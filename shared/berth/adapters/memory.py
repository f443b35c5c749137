"""In-memory twins of the Kafka bus and the Redis store, for the embedded pipeline and tests.

They keep the same semantics as the real ones: partitions keyed by a hash of the key, per-group
committed offsets, at-least-once delivery from the committed position, atomic reservations.
"""

from __future__ import annotations

import asyncio
import uuid
import zlib
from collections.abc import Iterable, Mapping

from berth.core.events import Event
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

    async def wait(self, timeout: float) -> None:
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


class MemoryStore:
    def __init__(self) -> None:
        self.seen: set[str] = set()
        self.resv: dict[str, dict[str, int]] = {}
        self.held: dict[str, tuple[str, list[str], dict[str, int]]] = {}
        self.pv_owner: dict[str, str] = {}
        self.token: str | None = None

    async def decided(self, decision_id: str) -> bool:
        return decision_id in self.seen

    async def mark_decided(self, decision_ids: list[str]) -> None:
        self.seen.update(decision_ids)

    def _add(self, node: str, amounts: Mapping[str, int], sign: int) -> None:
        resv = self.resv.setdefault(node, {})
        for k, v in amounts.items():
            resv[k] = resv.get(k, 0) + sign * v

    async def reserve(
        self, pod: str, node: str, pvs: list[str], requests: Mapping[str, int], budget: Mapping[str, int] | None = None
    ) -> bool:
        held = self.held.get(pod)
        if held is not None:
            return held[0] == node and held[1] == sorted(pvs)
        if any(self.pv_owner.get(pv, pod) != pod for pv in pvs):
            return False
        if budget is not None:
            resv = self.resv.get(node, {})
            if any(v > 0 and resv.get(k, 0) + v > budget.get(k, 0) for k, v in requests.items()):
                return False
        for pv in pvs:
            self.pv_owner[pv] = pod
        self.held[pod] = (node, sorted(pvs), dict(requests))
        self._add(node, requests, 1)
        return True

    async def release(self, pod: str) -> None:
        held = self.held.pop(pod, None)
        if held is None:
            return
        node, pvs, requests = held
        for pv in pvs:
            if self.pv_owner.get(pv) == pod:
                del self.pv_owner[pv]
        self._add(node, requests, -1)

    async def reservation(self, pod: str) -> tuple[str, list[str]] | None:
        held = self.held.get(pod)
        return None if held is None else (held[0], list(held[1]))

    async def reserved(self, node: str) -> dict[str, int]:
        return {k: v for k, v in self.resv.get(node, {}).items() if v}

    async def epoch(self) -> str | None:
        return self.token

    async def claim_epoch(self) -> str:
        if self.token is None:
            self.token = uuid.uuid4().hex
        return self.token

    async def holdings(self) -> dict[str, str]:
        return {pod: held[0] for pod, held in self.held.items()}

    async def close(self) -> None:
        return None
