"""Noticing that Redis lost berth's data: a restart without persistence, or a failover to a replica
that lagged. Nothing in Redis says so by itself, so each service that keeps state there owns an epoch
key, `{p}epoch:{service}`, holding a token. The service claims it before its first write (set if
missing, else the token there is adopted) and checks it before it relies on that state again: the
key gone, or holding another token (another replica found it gone and recovered first), means the
state behind it is gone too, and the service rebuilds it from the topics. The indexer also compares
its watermarks with what its group committed (`index_behind`), which catches a replica that kept the
epoch key but lagged behind on the index.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from redis.asyncio import Redis

INDEXER = "indexer"
SCORER = "scorer"


def epoch_key(prefix: str, service: str) -> str:
    return f"{prefix}epoch:{service}"


async def read_epoch(client: Redis, prefix: str, service: str) -> str | None:
    got = await client.get(epoch_key(prefix, service))
    return got.decode() if isinstance(got, bytes) else got


async def claim_epoch(client: Redis, prefix: str, service: str) -> str:
    """The token in the epoch key: a new one if the key is missing, else the one already there."""
    token = uuid.uuid4().hex
    had = await client.set(epoch_key(prefix, service), token, nx=True, get=True)
    if had is None:
        return token
    return had.decode() if isinstance(had, bytes) else str(had)


def epoch_lost(seen: str | None, now: str | None) -> bool:
    """Whether the state behind an epoch token this process saw (`seen`, None: none yet) is gone."""
    return seen is not None and now != seen


def index_behind(watermarks: Mapping[int, int], committed: Mapping[int, int]) -> dict[int, int]:
    """Partitions whose index in Redis is behind what the indexer's group committed, with the offset
    the index reaches there (0: nothing of it). In a healthy Redis the watermark is written before
    the offset is committed, so it is never behind."""
    return {p: watermarks.get(p, 0) for p, end in sorted(committed.items()) if watermarks.get(p, 0) < end}
