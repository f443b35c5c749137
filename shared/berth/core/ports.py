"""The interfaces berth's services talk through. Kafka and Redis adapters implement them, and so do
in-memory twins for the embedded pipeline; both pass the same contract tests (tests/adapters/contracts)."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping
from typing import Protocol

import msgspec

# Where the indexer's watermarks go (a record per batch and partition; their Redis keys are named after it).
INDEX_WATERMARKS = "berth.index-watermarks"
# Topic names: the defaults, which berth.settings.TopicSettings may override (BERTH_TOPIC_*).
CLUSTER_EVENTS = "berth.cluster-events"
DECISIONS = "berth.decisions"
BUFFER_STATUS = "berth.buffer-status"
DEAD_LETTER = "berth.dead-letter"


class Message(msgspec.Struct, frozen=True):
    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes


class Consumer(Protocol):
    async def start(self) -> None: ...

    async def getmany(self, max_records: int = 500, timeout: float = 0.2) -> list[Message]:
        """The next messages after the group's position (empty when none arrive in time)."""
        ...

    async def commit(self) -> None:
        """Commit the position after everything returned so far."""
        ...

    async def lag(self) -> int:
        """Messages not yet returned, across the subscribed partitions."""
        ...

    def assignment(self) -> frozenset[tuple[str, int]]:
        """The (topic, partition)s this member of the group holds now."""
        ...

    async def stop(self) -> None: ...


class Bus(Protocol):
    async def start(self) -> None: ...

    async def create_topics(self, topics: Mapping[str, int]) -> None:
        """Create topics with these partition counts; existing ones are left alone."""
        ...

    async def send(self, topic: str, value: bytes, key: bytes | None = None) -> None: ...

    async def flush(self) -> None: ...

    def consumer(self, topics: list[str], group: str) -> Consumer: ...

    async def committed_offsets(self, topic: str, group: str) -> dict[int, int]:
        """Per partition, the group's committed position (partitions without one left out)."""
        ...

    async def history(self, topic: str, group: str, start: Mapping[int, int] | None = None) -> list[Message]:
        """Every message of a topic before the group's committed positions, in partition order:
        what a restarted service already handled, to rebuild its state from. start: per partition,
        the offset to read from (a snapshot's watermark) instead of the beginning."""
        ...

    async def records(self, topic: str) -> list[Message]:
        """Every message of a topic up to its end now, in partition order (what the scorer
        recovers its dedup marks from when Redis lost them)."""
        ...

    def tail(self, topic: str) -> AsyncGenerator[Message, None]:
        """Every message of a topic from its beginning, then each new one as it comes, without a
        group (nothing committed; `berth decisions --follow`). Runs until closed."""
        ...

    async def stop(self) -> None: ...


class ReservationStore(Protocol):
    """Shared state between service replicas: decisions already made, and reservations.

    reserve() is atomic: it takes all the PVs and room on the node, or nothing. Room is checked
    against `budget` (per resource: the node's allocatable minus the pods bound there, as the caller
    sees the cluster at that event) less what every replica has reserved on the node.
    """

    async def decided(self, decision_id: str) -> bool:
        """Whether a decision id was marked as emitted."""
        ...

    async def mark_decided(self, decision_ids: list[str]) -> None:
        """Mark decision ids as emitted: only once the broker has acknowledged their records, so
        that a crash in between repeats a decision rather than losing it."""
        ...

    async def reserve(
        self, pod: str, node: str, pvs: list[str], requests: Mapping[str, int], budget: Mapping[str, int] | None = None
    ) -> bool: ...

    async def release(self, pod: str) -> None: ...

    async def reservation(self, pod: str) -> tuple[str, list[str]] | None:
        """(node, PVs) a pod holds, if any."""
        ...

    async def reserved(self, node: str) -> dict[str, int]:
        """What all replicas have reserved on a node, per resource."""
        ...

    async def epoch(self) -> str | None:
        """The token standing for the state in the store (None: there is none, or it was lost)."""
        ...

    async def claim_epoch(self) -> str:
        """Set a new token if there is none; returns the token there now."""
        ...

    async def holdings(self) -> dict[str, str]:
        """Every reservation: pod -> node (what a scorer starting from a snapshot takes back)."""
        ...

    async def close(self) -> None: ...
