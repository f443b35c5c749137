"""Seeded names, uids, quantities and times, so the same seed gives the same bytes."""

from __future__ import annotations

import random
import uuid
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import TypeVar

T = TypeVar("T")

# what kube's rand.String draws from (no vowels, no confusable characters)
_ALPHANUMS = "bcdfghjklmnpqrstvwxz2456789"
GI = 2**30
KI = 2**10


class Ids:
    """All randomness of one run: one seeded generator, drawn from in a fixed order."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def uid(self) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def suffix(self, n: int = 5) -> str:
        """A generateName suffix (5 characters) or a pod-template-hash (10)."""
        return "".join(self.rng.choice(_ALPHANUMS) for _ in range(n))

    def hex(self, n: int = 8) -> str:
        return f"{self.rng.getrandbits(4 * n):0{n}x}"

    def weighted(self, items: Sequence[tuple[T, int]]) -> T:
        return self.rng.choices([v for v, _ in items], weights=[w for _, w in items])[0]

    def ip(self, prefix: str) -> str:
        return f"{prefix}.{self.rng.randrange(0, 256)}.{self.rng.randrange(1, 255)}"


def cpu(milli: int) -> str:
    """Millicores as the API server prints them: whole cores without a suffix."""
    return str(milli // 1000) if milli % 1000 == 0 else f"{milli}m"


def mem_ki(nbytes: int) -> str:
    """Bytes as Ki, the way kubelet and koordlet report memory."""
    return f"{nbytes // KI}Ki"


def mem(mib: int) -> str:
    """MiB as a request or limit: whole GiB when exact."""
    return f"{mib // 1024}Gi" if mib % 1024 == 0 else f"{mib}Mi"


def rfc3339(t: datetime) -> str:
    """Whole seconds, as in metadata timestamps and conditions."""
    return t.replace(microsecond=0).isoformat().replace("+00:00", "Z")


def at(start: datetime, ms: int) -> datetime:
    return start + timedelta(milliseconds=ms)
