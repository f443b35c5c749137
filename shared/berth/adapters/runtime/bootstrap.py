"""Where a scorer or buffer controller starts from: the indexer's state in Redis, or the topic's history.

A service that starts, or a standby that takes a partition over, reads the indexer's watermarks
(per partition, the next cluster-events offset Redis includes), every object it keeps, then the
watermarks again and its clock (RedisIndex.snapshot); it applies the objects, then replays the topic from the watermarks up to
what its own group committed, without emitting; the worker loop goes on from there. A service that
starts does all of it while it joins its group, for the partitions it expects (prepare), and takes
that state if it is given those partitions and nothing it was built from moved (start_state).

Objects are not all of a service's state: the scorer's waiting pods (their attempts and backoff),
reservations and nominations, the buffer controller's last statuses and timers come from history.
Each service writes them as a checkpoint (one Redis key per group) after every batch, before the
commit. With one, the replay up to the commit only changes the state (engine.apply), then the
checkpoint is taken back: the engine is the one an uninterrupted run has at that offset. Without
one (the service never ran against this Redis), the replay handles events silently, and the
scorer decides the pods still pending that it knows nothing of, as a restarted kube-scheduler
does. Where the snapshot is ahead of the group's commit (the service was down while the indexer
went on), the scorer emits those decisions: their pods' events arrive as already applied.

Redis "holds no state" when there is no watermark key for any of the topic's partitions (a first
start): then the whole history is replayed from offset 0, as before.

The race with the indexer, and why it is safe: the watermarks W are read first, then the objects
(in chunks, while the indexer writes on), then the watermarks again (W2). Each object read is as
some batch below W2 left it; every event from W on is applied again from the topic, idempotent by
resourceVersion: an object the snapshot holds at a later version skips the older events, an object
deleted or created after W gets its DELETED or ADDED event, so once the replay reaches the commit C
every object is at its last version before C, provided W2 <= C. Nothing reads the state in
between. When W2 > C (the indexer went past the group's commit), the snapshot may hold changes
the service has not handled yet: it is "ahead", see below. A deleted object's guard key stays in
Redis, so a redelivered older event cannot bring it back there.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import TYPE_CHECKING, Any, Generic, NamedTuple, Protocol, TypeVar

import msgspec

from berth.adapters.runtime.collector import COLLECTOR
from berth.core.api.meta.normalise import parse_time
from berth.core.api.watch import Event, decode_message
from berth.core.errors import InputError
from berth.core.pipeline.relist import Unpacked, relisted, unpack_objects
from berth.core.ports import INDEX_WATERMARKS, Bus

if TYPE_CHECKING:  # the embedded replay starts from no Redis: it never imports the client (0.1 s)
    from redis.asyncio import Redis

    from berth.adapters.store.redisindex import RedisIndex, Snapshot

log = logging.getLogger("berth.bootstrap")
REDIS = "redis"
HISTORY = "history"


class Engine(Protocol):
    """What the scorer's and the buffer controller's engines offer a start."""

    def restore(self, events: list[Event], now: datetime | None) -> None: ...

    def apply(self, ev: Event) -> None: ...

    def handle(self, ev: Event) -> Any: ...

    def resume(self, data: bytes) -> None: ...

    def checkpoint(self) -> bytes: ...


class Saved(msgspec.Struct):
    """A service's checkpoint: its engine's own state after the events before `offsets`."""

    offsets: dict[int, int]
    data: bytes


class Checkpoints:
    """One checkpoint per consumer group (and partitions held), written after each batch before its
    commit, so it is at the committed offsets or one batch past them (a crash in between)."""

    def __init__(self, client: Redis, prefix: str, group: str) -> None:
        self.r = client
        self.p = prefix
        self.group = group

    def _key(self, partitions: list[int]) -> str:
        return f"{self.p}checkpoint:{self.group}:{','.join(map(str, sorted(partitions)))}"

    async def save(self, partitions: list[int], offsets: dict[int, int], data: bytes) -> None:
        await self.r.set(self._key(partitions), msgspec.msgpack.encode(Saved(offsets, data)))

    async def load(self, partitions: list[int]) -> Saved | None:
        got = await self.r.get(self._key(partitions))
        if got is None:
            return None
        return msgspec.msgpack.decode(got if isinstance(got, bytes) else got.encode(), type=Saved)


E = TypeVar("E", bound=Engine)


class Start(NamedTuple, Generic[E]):
    """How a service built its state: from REDIS (objects, then events from the watermarks) or
    from HISTORY (every event from offset 0), and the engine that holds it."""

    engine: E
    source: str
    objects: int  # objects read from Redis
    events: int  # events replayed from the topic
    watermarks: dict[int, int]  # per partition, where the replay started
    resumed: bool  # the service's own checkpoint was taken back
    ahead: bool  # the snapshot is past what the group committed on some partition
    passed: dict[int, int]  # per partition: events below these, redelivered, only change the state
    committed: dict[int, int]  # per partition, the group's committed offset


class Objects(NamedTuple, Generic[E]):
    """The indexer's snapshot, its objects as events, and the engine they were restored into (None:
    not restored yet)."""

    snap: Snapshot
    events: list[Event]
    restored: E | None = None


class Early(NamedTuple, Generic[E]):
    """What a service builds before its group assigns it partitions (prepare): the objects, and the
    state for the partitions it expects, with the checkpoint that state took back."""

    objects: Objects[E]
    partitions: list[int]
    start: Start[E] | None  # None: not built (Redis holds no state for those partitions)
    saved: Saved | None


async def rebuild(
    bus: Bus, topic: str, group: str, handle: Callable[[Event], Any], start: Mapping[int, int] | None = None
) -> int:
    """Replay what the group already committed (from `start` per partition, else the beginning),
    to rebuild in-memory state without emitting. Returns how many events were replayed."""
    count = 0
    for msg in await bus.history(topic, group, start):
        try:
            ev = decode_message(msg)
            handle(ev)
        except InputError:
            continue  # it went to the dead-letter topic the first time (as it does again if handled again)
        count += 1
    return count


async def read_objects(index: RedisIndex, partitions: int, engine: E | None = None) -> Objects[E]:
    """Read the snapshot of `partitions` partitions, decode its objects and restore them into
    `engine` (if given), in a thread: each part as soon as it is read, while Redis sends the next.
    An early snapshot is as good as a late one (the replay starts at its watermarks), and the
    objects do not depend on which partitions the service is given."""
    loop = asyncio.get_running_loop()
    one = ThreadPoolExecutor(1, "berth-objects")  # parts in order, one at a time
    parts: list[asyncio.Future[tuple[list[Unpacked], list[str]]]] = []
    try:
        snap = await index.snapshot(
            INDEX_WATERMARKS, partitions, lambda part: parts.append(loop.run_in_executor(one, unpack_objects, part))
        )
        unpacked = await asyncio.gather(*parts)
    finally:
        one.shutdown(wait=False, cancel_futures=True)

    def restore() -> list[Event]:
        events = relisted([u for got, _ in unpacked for u in got])
        for _, bad in unpacked:
            for reason in bad:
                log.warning("object in Redis passed over", extra={"reason": reason})
        if engine is not None:
            engine.restore(events, parse_time(snap.clock) if snap.clock else None)
        return events

    return Objects(snap, await asyncio.to_thread(restore), engine)


async def prepare(
    bus: Bus, index: RedisIndex, checkpoints: Checkpoints, topic: str, partitions: list[int], engine: E
) -> Early[E]:
    """A service starts this before it joins its group: the objects are read and restored into
    `engine`, then the state for `partitions` (those it expects: all of the topic's) is built on
    them as start_state builds it, while the join waits (the CPU work in a thread: the join, its
    heartbeats, the HTTP server go on meanwhile). start_state takes that state if the group gives it
    these partitions and neither the group's commit nor its checkpoint moved since; otherwise it
    builds again from the objects."""
    with COLLECTOR.building():
        objects = await read_objects(index, len(partitions), engine)
        if not any(p in objects.snap.watermarks for p in partitions):
            return Early(objects, partitions, None, None)  # history: replayed once assigned
        start, saved = await _build(bus, checkpoints, topic, partitions, objects, engine)
    return Early(objects, partitions, start, saved)


def begin(
    bus: Bus, index: RedisIndex, checkpoints: Checkpoints, topic: str, partitions: list[int], engine: E
) -> asyncio.Future[Early[E]]:
    """prepare() started now, while the service goes on to join its group; start_state awaits it.
    An error only it had (the service stopped before its first take-over) is not logged at exit."""
    building = asyncio.ensure_future(prepare(bus, index, checkpoints, topic, partitions, engine))
    building.add_done_callback(lambda f: f.cancelled() or f.exception())
    return building


async def start_state(
    bus: Bus,
    index: RedisIndex,
    checkpoints: Checkpoints,
    topic: str,
    partitions: list[int],
    engine: E,
    early: Awaitable[Early[E]] | None = None,
) -> Start[E]:
    """Build a service's state (the module's docstring says how) in `engine`, a fresh one, or take
    the one `early` (prepare(), started before) built if it holds: Start.engine. It handles nothing
    after this that it has handled before: events below `passed` are for engine.apply only. The
    engine's longer work runs in a thread, so that the group's heartbeats go on."""
    if early is None:
        objects: Objects[E] = await read_objects(index, max(partitions, default=0) + 1)
    else:
        got = await early
        if got.start is not None and await _holds(bus, checkpoints, topic, got):
            if got.partitions == partitions:
                return got.start
            # other partitions, nothing moved: the objects are good, the engine they went into is
            # not (it took a checkpoint or events back); again in `engine`
            objects = got.objects._replace(restored=None)
        else:
            # the group moved on since (a standby taking over long after its start: replaying from
            # the early watermarks could reach past the topic's retention), or Redis held no state
            # then: read afresh
            objects = await read_objects(index, max(partitions, default=0) + 1)
    with COLLECTOR.building():
        start, _ = await _build(bus, checkpoints, topic, partitions, objects, engine)
    return start


async def _holds(bus: Bus, checkpoints: Checkpoints, topic: str, early: Early[E]) -> bool:
    """The group's commit and its checkpoint are still what an early state was built from."""
    assert early.start is not None
    if await bus.committed_offsets(topic, checkpoints.group) != early.start.committed:
        return False
    return await checkpoints.load(early.partitions) == early.saved


async def _build(
    bus: Bus,
    checkpoints: Checkpoints,
    topic: str,
    partitions: list[int],
    objects: Objects[E],
    engine: E,
) -> tuple[Start[E], Saved | None]:
    """The state for `partitions` from `objects`, in the engine they were restored into (else
    restored into `engine` now; from history: in `engine`), and the checkpoint it loaded."""
    snap, events, restored = objects
    marks = {p: w for p, w in snap.watermarks.items() if p in partitions}
    committed = await bus.committed_offsets(topic, checkpoints.group)
    if not marks:
        n = await rebuild(bus, topic, checkpoints.group, engine.handle)
        return Start(engine, HISTORY, 0, n, {}, False, False, {}, committed), None
    # objects may be as late as the watermarks read after them: past the commit, the events in
    # between are already in the state when they arrive
    ahead = any(w > committed.get(p, 0) for p, w in snap.after.items() if p in partitions)
    saved = await checkpoints.load(partitions)
    usable = saved is not None and all(saved.offsets.get(p, 0) >= committed.get(p, 0) for p in partitions)
    if restored is not None:
        engine = restored
    else:
        await asyncio.to_thread(engine.restore, events, parse_time(snap.clock) if snap.clock else None)
    replay = engine.apply if usable else engine.handle  # what the checkpoint has seen, state only
    n = await rebuild(bus, topic, checkpoints.group, replay, start=marks)
    passed: dict[int, int] = {}
    if saved is not None and usable:
        await asyncio.to_thread(engine.resume, saved.data)
        passed = {p: o for p, o in saved.offsets.items() if o > committed.get(p, 0)}
    return Start(engine, REDIS, len(events), n, marks, usable, ahead, passed, committed), saved
