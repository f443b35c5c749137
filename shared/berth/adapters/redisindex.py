"""Writing the indexer's operations to Redis: one Lua call per chunk of operations, each applied only
when its resourceVersion is newer than the one stored (so redelivery is harmless). Each call first
checks that Redis still holds the index the indexer wrote (its epoch, and its watermarks where it
expects them, berth.adapters.epoch); if not, it applies nothing and the indexer rebuilds the index."""

from __future__ import annotations

from collections.abc import Mapping

import msgspec
from redis.asyncio import Redis

from berth.adapters.epoch import INDEXER, claim_epoch
from berth.core.pipeline.indexer import Op

# ARGV[1] prefix, ARGV[2] JSON [[guard key or "", rv or "", [[cmd, key, args...], ...]], ...],
# ARGV[3] the epoch token expected in {p}epoch:indexer ("": not checked), ARGV[4] JSON [[watermark
# key, least offset expected], ...], then pairs of (watermark key, offset), raised after the operations.
# Returns -1, having applied nothing, when the epoch or a watermark is not what was expected.
_APPLY = """
local p = ARGV[1]
if ARGV[3] ~= '' and redis.call('GET', p .. 'epoch:indexer') ~= ARGV[3] then return -1 end
for _, w in ipairs(cjson.decode(ARGV[4])) do
  if tonumber(redis.call('GET', p .. w[1]) or '0') < tonumber(w[2]) then return -1 end
end
local applied = 0
for _, op in ipairs(cjson.decode(ARGV[2])) do
  local guard, rv, actions = op[1], op[2], op[3]
  local fresh = true
  if guard ~= '' then
    local have = redis.call('GET', p .. guard)
    if have and tonumber(have) and tonumber(rv) and tonumber(have) >= tonumber(rv) then fresh = false end
  end
  if fresh then
    if guard ~= '' then redis.call('SET', p .. guard, rv) end
    for _, a in ipairs(actions) do
      local args = {a[1], p .. a[2]}
      for i = 3, #a do args[#args + 1] = a[i] end
      redis.call(unpack(args))
    end
    applied = applied + 1
  end
end
for i = 5, #ARGV, 2 do
  if tonumber(redis.call('GET', p .. ARGV[i]) or '-1') < tonumber(ARGV[i + 1]) then redis.call('SET', p .. ARGV[i], ARGV[i + 1]) end
end
return applied
"""
CHUNK = 500
_NO_GUARD = ("", "")
_encode = msgspec.json.Encoder().encode


Watermarks = Mapping[tuple[str, int], int]  # (topic, partition) -> offset


class IndexLost(Exception):
    """Redis no longer holds the index this indexer wrote (berth.adapters.epoch)."""


class RedisIndex:
    def __init__(self, client: Redis, prefix: str = "berth:") -> None:
        self.r = client
        self.p = prefix
        self._apply = client.register_script(_APPLY)

    async def apply(
        self, ops: list[Op], watermarks: Watermarks | None = None, epoch: str = "", expect: Watermarks | None = None
    ) -> int:
        """Apply operations in order (one Lua call per CHUNK, all in one round trip); returns how many
        were fresh. `watermarks` ((topic, partition) -> next offset) are raised by the last call, after
        them. Each call first checks the epoch token (unless "") and that each watermark in `expect`
        is at least there; if not, it applies nothing and IndexLost is raised."""
        if not ops and not watermarks:
            return 0
        chunks = [
            _encode([(op.guard or _NO_GUARD) + (op.actions,) for op in ops[i : i + CHUNK]])
            for i in range(0, len(ops), CHUNK)
        ] or [b"[]"]
        checks = _encode([(_watermark_key(t, p), offset) for (t, p), offset in sorted((expect or {}).items())])
        calls: list[list[str | bytes | int]] = [[self.p, chunk, epoch, checks] for chunk in chunks]
        for (topic, partition), offset in sorted((watermarks or {}).items()):
            calls[-1] += [_watermark_key(topic, partition), offset]
        if len(calls) == 1:
            got = [int(await self._apply(keys=[], args=calls[0]))]
        else:
            async with self.r.pipeline(transaction=False) as pipe:
                for args in calls:
                    await self._apply(keys=[], args=args, client=pipe)
                got = [int(n) for n in await pipe.execute()]
        if -1 in got:
            raise IndexLost("the index's epoch or watermarks are not what this indexer wrote")
        return sum(got)

    async def claim_epoch(self) -> str:
        """The index's epoch token, set now if Redis has none (berth.adapters.epoch)."""
        return await claim_epoch(self.r, self.p, INDEXER)

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


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value
