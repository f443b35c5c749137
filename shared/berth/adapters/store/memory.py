"""The in-memory twin of the Redis store (the ReservationStore port), for the embedded pipeline and tests."""

from __future__ import annotations

import uuid
from collections.abc import Mapping


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
