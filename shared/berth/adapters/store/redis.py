"""The ReservationStore port on Redis. Reservations are Lua scripts, so they are atomic across scorer replicas.

Keys (all under a configurable prefix, see docs/redis-layout.md):
  {p}decided:{id}      decision ids emitted, set once the broker acknowledged them (with a TTL)
  {p}resv:{node}       hash: resource -> requests reserved on the node by all scorer replicas
  {p}held:{pod}        hash: node, pvs (JSON), requests (JSON) of a reservation
  {p}pvowner:{pv}      the pod a PV is reserved for
  {p}epoch:scorer      the token standing for all of these (berth.adapters.store.epoch)
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from redis.asyncio import Redis

from berth.adapters.store.epoch import SCORER, claim_epoch, read_epoch

_RESERVE = """
local p, pod, node = ARGV[1], ARGV[2], ARGV[3]
local pvs, req, budget = cjson.decode(ARGV[4]), cjson.decode(ARGV[5]), cjson.decode(ARGV[7])
local held = redis.call('HGET', KEYS[1], 'node')
if held then
  if held == node and redis.call('HGET', KEYS[1], 'pvs') == ARGV[6] then return 1 end
  return 0
end
for _, pv in ipairs(pvs) do
  local owner = redis.call('GET', p .. 'pvowner:' .. pv)
  if owner and owner ~= pod then return 0 end
end
if ARGV[8] == '1' then
  for k, v in pairs(req) do
    local want = tonumber(v)
    if want > 0 then
      local room = tonumber(budget[k] or '0')
      local taken = tonumber(redis.call('HGET', p .. 'resv:' .. node, k) or '0')
      if taken + want > room then return 0 end
    end
  end
end
for _, pv in ipairs(pvs) do redis.call('SET', p .. 'pvowner:' .. pv, pod) end
for k, v in pairs(req) do redis.call('HINCRBY', p .. 'resv:' .. node, k, v) end
redis.call('HSET', KEYS[1], 'node', node, 'pvs', ARGV[6], 'requests', ARGV[5])
return 1
"""

_RELEASE = """
local p, pod = ARGV[1], ARGV[2]
local node = redis.call('HGET', KEYS[1], 'node')
if not node then return 0 end
for _, pv in ipairs(cjson.decode(redis.call('HGET', KEYS[1], 'pvs'))) do
  if redis.call('GET', p .. 'pvowner:' .. pv) == pod then redis.call('DEL', p .. 'pvowner:' .. pv) end
end
for k, v in pairs(cjson.decode(redis.call('HGET', KEYS[1], 'requests'))) do
  redis.call('HINCRBY', p .. 'resv:' .. node, k, '-' .. v)
end
redis.call('DEL', KEYS[1])
return 1
"""


def _amounts(value: Mapping[str, int]) -> str:
    """Requests as JSON with string values: Lua numbers are doubles and print with 14 digits."""
    return (
        json.dumps({k: str(int(v)) for k, v in value.items()}, sort_keys=True, separators=(",", ":")) if value else "{}"
    )


class RedisStore:
    def __init__(self, client: Redis, prefix: str = "berth:", decided_ttl_seconds: int = 7 * 24 * 3600) -> None:
        self.r = client
        self.p = prefix
        self.ttl = decided_ttl_seconds
        self._reserve = client.register_script(_RESERVE)
        self._release = client.register_script(_RELEASE)

    @classmethod
    def from_url(cls, url: str, prefix: str = "berth:", **kwargs: Any) -> RedisStore:
        return cls(Redis.from_url(url, **kwargs), prefix)

    async def decided(self, decision_id: str) -> bool:
        return bool(await self.r.exists(f"{self.p}decided:{decision_id}"))

    async def mark_decided(self, decision_ids: list[str]) -> None:
        for i in range(0, len(decision_ids), 10_000):  # a recovery marks a whole topic's
            async with self.r.pipeline(transaction=False) as pipe:
                for d in decision_ids[i : i + 10_000]:
                    pipe.set(f"{self.p}decided:{d}", 1, ex=self.ttl)
                await pipe.execute()

    async def reserve(
        self, pod: str, node: str, pvs: list[str], requests: Mapping[str, int], budget: Mapping[str, int] | None = None
    ) -> bool:
        checked = "1" if budget is not None else "0"
        args = [
            self.p,
            pod,
            node,
            json.dumps(list(pvs)),
            _amounts(requests),
            json.dumps(sorted(pvs)),
            _amounts(budget or {}),
            checked,
        ]
        return bool(await self._reserve(keys=[f"{self.p}held:{pod}"], args=args))

    async def release(self, pod: str) -> None:
        await self._release(keys=[f"{self.p}held:{pod}"], args=[self.p, pod])

    async def reservation(self, pod: str) -> tuple[str, list[str]] | None:
        held = await self.r.hgetall(f"{self.p}held:{pod}")
        if not held:
            return None
        node, pvs = held[b"node"], held[b"pvs"]
        return (node.decode() if isinstance(node, bytes) else node), list(json.loads(pvs))

    async def reserved(self, node: str) -> dict[str, int]:
        got = await self.r.hgetall(f"{self.p}resv:{node}")
        out = {}
        for k, v in got.items():
            if int(v):
                out[k.decode() if isinstance(k, bytes) else k] = int(v)
        return out

    async def epoch(self) -> str | None:
        return await read_epoch(self.r, self.p, SCORER)

    async def claim_epoch(self) -> str:
        return await claim_epoch(self.r, self.p, SCORER)

    async def holdings(self) -> dict[str, str]:
        out = {}
        async for key in self.r.scan_iter(f"{self.p}held:*", count=1000):
            node = await self.r.hget(key, "node")
            if node is not None:
                out[_text(key).removeprefix(f"{self.p}held:")] = _text(node)
        return out

    async def close(self) -> None:
        await self.r.aclose()


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value
