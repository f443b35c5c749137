"""Writing the indexer's operations to Redis: one Lua call per chunk of operations, each applied only
when its resourceVersion is newer than the one stored (so redelivery is harmless). Each call first
checks that Redis still holds the index the indexer wrote (its epoch, and its watermarks where it
expects them, berth.adapters.store.epoch); if not, it applies nothing and the indexer rebuilds the index."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import NamedTuple

import msgspec
from redis.asyncio import Redis
from redis.asyncio.cluster import RedisCluster

from berth.adapters.store.epoch import INDEXER, claim_epoch
from berth.core.pipeline.indexer import Op

# ARGV[1] prefix, ARGV[2] JSON [[guard key or "", rv or "", [[cmd, key, args...], ...], length of
# its object's bytes (operations that write one)], ...], ARGV[3] the epoch token expected in
# {p}epoch:indexer ("": not checked), ARGV[4] JSON [[watermark key, least offset expected], ...],
# ARGV[5] JSON [[watermark key, offset], ...] raised after the operations, ARGV[6] JSON [[key, time],
# ...] set where later than what is there (the clock), ARGV[7] the objects' bytes, one after another
# in the operations' order. Two commands of berth's own: OBJSET key (the operation's object, and its
# name in the set of objects) and OBJDEL key. KEYS[1] names the slot (Redis Cluster), every key
# shares its hash tag. Returns -1, having applied nothing, when the epoch or a watermark is not
# what was expected.
_APPLY = """
local p = ARGV[1]
if ARGV[3] ~= '' and redis.call('GET', p .. 'epoch:indexer') ~= ARGV[3] then return -1 end
for _, w in ipairs(cjson.decode(ARGV[4])) do
  if tonumber(redis.call('GET', p .. w[1]) or '0') < tonumber(w[2]) then return -1 end
end
local applied, blob, at = 0, ARGV[7], 1
for _, op in ipairs(cjson.decode(ARGV[2])) do
  local guard, rv, actions, size = op[1], op[2], op[3], op[4]
  local from = at
  if size then at = at + size end
  local fresh = true
  if guard ~= '' then
    local have = redis.call('GET', p .. guard)
    if have and tonumber(have) and tonumber(rv) and tonumber(have) >= tonumber(rv) then fresh = false end
  end
  if fresh then
    if guard ~= '' then redis.call('SET', p .. guard, rv) end
    for _, a in ipairs(actions) do
      if a[1] == 'OBJSET' then
        redis.call('SET', p .. 'obj:' .. a[2], string.sub(blob, from, at - 1))
        redis.call('SADD', p .. 'objects', a[2])
      elseif a[1] == 'OBJDEL' then
        redis.call('DEL', p .. 'obj:' .. a[2])
        redis.call('SREM', p .. 'objects', a[2])
      else
        local args = {a[1], p .. a[2]}
        for i = 3, #a do args[#args + 1] = a[i] end
        redis.call(unpack(args))
      end
    end
    applied = applied + 1
  end
end
for _, kv in ipairs(cjson.decode(ARGV[5])) do
  if tonumber(redis.call('GET', p .. kv[1]) or '-1') < tonumber(kv[2]) then redis.call('SET', p .. kv[1], kv[2]) end
end
for _, kv in ipairs(cjson.decode(ARGV[6])) do
  local have = redis.call('GET', p .. kv[1])
  if not have or have < kv[2] then redis.call('SET', p .. kv[1], kv[2]) end
end
return applied
"""

CHUNK = 500
SNAPSHOT_CHUNK = 1000  # objects per MGET when a service reads them all
_NO_GUARD = ("", "")
_encode = msgspec.json.Encoder().encode
CLOCK = "clock"


class Snapshot(NamedTuple):
    """Every object the indexer keeps, read in chunks while it may write on: each object is as some
    batch between the watermarks read before and after left it (an object the batches after
    `watermarks` changed comes again from the topic; see berth.adapters.runtime.bootstrap). Partitions
    without a watermark are left out."""

    watermarks: dict[int, int]  # per partition, read before the objects: replay from here
    after: dict[int, int]  # the same, read after them: no object is newer than this
    clock: str  # the newest event time indexed, read after the objects
    objects: list[tuple[str, bytes]]  # (kind/namespace/name, msgpack of its wire Struct); [] if taken


Watermarks = Mapping[tuple[str, int], int]  # (topic, partition) -> offset


class IndexLost(Exception):
    """Redis no longer holds the index this indexer wrote (berth.adapters.store.epoch)."""


class RedisIndex:
    def __init__(self, client: Redis, prefix: str = "berth:") -> None:
        self.r = client
        self.p = prefix
        self._apply = client.register_script(_APPLY)
        self._slot = [prefix + "objects"]  # KEYS[1] of every script: where Redis Cluster runs it

    async def apply(
        self,
        ops: list[Op],
        watermarks: Watermarks | None = None,
        clock: str = "",
        *,
        epoch: str = "",
        expect: Watermarks | None = None,
    ) -> int:
        """Apply operations in order, all at once (one Lua call per CHUNK in one MULTI/EXEC, one
        round trip; one call for them all on a Redis Cluster, whose pipelines cannot load scripts),
        so a reader never sees part of a batch; returns how many were fresh. `watermarks` ((topic,
        partition) -> next offset) are raised by the last call, after them, and so is the clock (the
        newest event time indexed), where it is later. Each call first checks the epoch token
        (unless "") and that each watermark in `expect` is at least there; if not, it applies
        nothing and IndexLost is raised."""
        if not ops and not watermarks:
            return 0
        cluster = isinstance(self.r, RedisCluster)
        size = max(len(ops), 1) if cluster else CHUNK
        checks = _encode([(_watermark_key(t, p), offset) for (t, p), offset in sorted((expect or {}).items())])
        calls: list[list[str | bytes | int]] = []
        for i in range(0, len(ops), size):
            values: list[bytes] = []
            rows: list[tuple[object, ...]] = []
            for op in ops[i : i + size]:
                guard = op.guard or _NO_GUARD
                if op.value is None:
                    rows.append((guard[0], guard[1], op.actions))
                else:
                    values.append(op.value)
                    rows.append((guard[0], guard[1], op.actions, len(op.value)))
            calls.append([self.p, _encode(rows), epoch, checks, b"[]", b"[]", b"".join(values)])
        if not calls:
            calls.append([self.p, b"[]", epoch, checks, b"[]", b"[]", b""])
        marks = [[_watermark_key(topic, p), str(o)] for (topic, p), o in sorted((watermarks or {}).items())]
        calls[-1][4] = _encode(marks)
        if clock:
            calls[-1][5] = _encode([[CLOCK, clock]])
        if len(calls) == 1:
            got = [int(await self._apply(keys=self._slot, args=calls[0]))]
        else:
            async with self.r.pipeline(transaction=True) as pipe:
                for args in calls:
                    await self._apply(keys=self._slot, args=args, client=pipe)
                got = [int(n) for n in await pipe.execute()]
        if -1 in got:
            raise IndexLost("the index's epoch or watermarks are not what this indexer wrote")
        return sum(got)

    async def claim_epoch(self) -> str:
        """The index's epoch token, set now if Redis has none (berth.adapters.store.epoch)."""
        return await claim_epoch(self.r, self.p, INDEXER)

    async def snapshot(
        self, topic: str, partitions: int, take: Callable[[list[tuple[str, bytes]]], object] | None = None
    ) -> Snapshot:
        """The watermarks of the partitions, then every object (names, then values MGET in chunks
        of SNAPSHOT_CHUNK, pipelined: Redis is never held long), then the watermarks and the clock.
        take: given each part of the objects as it is read, in order (8 chunks), instead of
        Snapshot.objects (a reader that decodes one part while Redis sends the next)."""
        keys = [self.p + _watermark_key(topic, p) for p in range(partitions)]
        before = await self.r.mget(keys)
        names = sorted(_text(n) for n in await self.r.smembers(self.p + "objects"))
        objects: list[tuple[str, bytes]] = []
        cluster = isinstance(self.r, RedisCluster)  # (its pipelines refuse MGET: one at a time there)
        for i in range(0, len(names), SNAPSHOT_CHUNK * 8):
            part = names[i : i + SNAPSHOT_CHUNK * 8]
            chunks = [
                [f"{self.p}obj:{n}" for n in part[j : j + SNAPSHOT_CHUNK]] for j in range(0, len(part), SNAPSHOT_CHUNK)
            ]
            if cluster:
                got = [v for chunk in chunks for v in await self.r.mget(chunk)]
            else:
                async with self.r.pipeline(transaction=False) as pipe:
                    for chunk in chunks:
                        pipe.mget(chunk)
                    got = [v for values in await pipe.execute() for v in values]
            read = [
                (n, v if isinstance(v, bytes) else v.encode()) for n, v in zip(part, got, strict=True) if v is not None
            ]
            if take is None:
                objects += read
            else:
                take(read)
        *after, clock = await self.r.mget([*keys, self.p + CLOCK])
        return Snapshot(_marks(before), _marks(after), _text(clock) if clock else "", objects)

    async def node_pvs(self, node: str, storage_class: str) -> list[tuple[str, int]]:
        """A node's available local PVs of a class, smallest first: (name, capacity bytes)."""
        got: list[tuple[bytes, float]] = await self.r.zrange(
            f"{self.p}pvidx:{node}:{storage_class}", 0, -1, withscores=True
        )  # type: ignore[assignment]
        return [(_text(name), int(score)) for name, score in got]

    async def used(self, node: str) -> dict[str, int]:
        got = await self.r.hgetall(f"{self.p}used:{node}")
        return {_text(k): int(v) for k, v in got.items() if int(v)}

    async def watermark(self, topic: str, partition: int) -> int:
        got = await self.r.get(self.p + _watermark_key(topic, partition))
        return int(got) if got is not None else 0

    async def watermarks(self, topic: str, partitions: list[int]) -> dict[int, int]:
        """The watermark of each partition (0 where there is none)."""
        return {p: await self.watermark(topic, p) for p in partitions}


def _watermark_key(topic: str, partition: int) -> str:
    """Without the prefix: the Lua script adds it, as it does to every key it writes."""
    return f"watermark:{topic}:{partition}"


def _marks(values: list[bytes | str | None]) -> dict[int, int]:
    return {p: int(v) for p, v in enumerate(values) if v is not None}


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value
