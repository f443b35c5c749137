"""What berth placed, and the PVs it holds, from the decision until the API server confirms it, the
pod goes, or another replica's reservation wins (kube's assumed pods and volumes)."""

from __future__ import annotations

from berth.core.api.meta.quantity import ceil_units
from berth.core.cache.state import ClusterState, Reservation
from berth.core.pipeline.stats import Binding


class Reservations:
    def __init__(self, state: ClusterState) -> None:
        self.state = state
        self._placed: dict[str, str] = {}  # pod -> the node berth chose
        self._bindings: dict[str, list[Binding]] = {}  # PVs berth chose, per pod, while they stand
        self._released: list[str] = []  # reservations ended since take_released()

    def hold(self, r: Reservation) -> None:
        """Reserve a Scheduled decision in the state (the node's room, its PVs and claims)."""
        self.state.reserve(r)
        self._placed[r.pod.key] = r.node
        self._bindings[r.pod.key] = self._binding_stats(r.bindings)

    def placed(self, key: str) -> str | None:
        return self._placed.get(key)

    def pods(self) -> list[str]:
        """The pods berth placed, in the order it placed them."""
        return list(self._placed)

    def placed_all(self) -> dict[str, str]:
        return dict(self._placed)

    def restore_placed(self, placed: dict[str, str]) -> None:
        """Where berth placed pods, as placed_all() gave it (a checkpoint), in that order."""
        self._placed = dict(placed)

    def bound(self, key: str, node: str) -> None:
        """The API server says the pod is on `node`: berth's choice is confirmed, or void if elsewhere."""
        if self._placed.get(key, node) != node:
            self.forget(key)  # bound elsewhere by someone else: berth's choice is void
        elif key in self._placed and self.state.reserved(key) is None:
            self._released.append(key)  # confirmed: the binding now counts, not the reservation

    def forget(self, key: str) -> None:
        """The pod is gone or bound elsewhere: its reservation ends."""
        self._bindings.pop(key, None)
        if self._placed.pop(key, None) is not None:
            self._released.append(key)

    def revoke(self, key: str) -> None:
        """Undo a reservation another replica beat us to (released from the state too)."""
        self.state.release(key)
        self._bindings.pop(key, None)
        self._placed.pop(key, None)

    def take_released(self) -> list[str]:
        """Reservations ended since the last call (the store releases them across replicas)."""
        out, self._released = self._released, []
        return out

    def held(self, key: str) -> list[Binding]:
        """The PVs berth chose for the pod, while its decision stands."""
        return self._bindings.get(key, [])

    def bindings(self) -> list[Binding]:
        """PVs chosen by Scheduled decisions that still stand, by pod."""
        return [b for key in sorted(self._bindings) for b in self._bindings[key]]

    def _binding_stats(self, bindings: tuple[tuple[str, str], ...]) -> list[Binding]:
        out = []
        for claim_key, pv_name in bindings:
            pv, pvc = self.state.pvs.get(pv_name), self.state.pvcs.get(claim_key)
            if pv is not None and pvc is not None:
                out.append(
                    Binding(claim_key, pv_name, pv.storage_class, ceil_units(pvc.request or 0), ceil_units(pv.capacity))
                )
        return out
