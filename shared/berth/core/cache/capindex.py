"""CSIStorageCapacity objects per storage class, matched against every node at once.

Upstream scans all objects in an unspecified order and takes the first that
fits; berth scans them in namespace/name order, so the choice is deterministic.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from berth.core.api.core.model import CSIStorageCapacity
from berth.core.api.meta.quantity import bytes_capped, ceil_units
from berth.core.cache.nodes import NodeTable

Ints = npt.NDArray[np.int64]
_NONE = np.iinfo(np.int64).max


class CapacityIndex:
    def __init__(self) -> None:
        self.objects: dict[str, CSIStorageCapacity] = {}
        self._dirty = True
        self._labels = -1
        self.order: list[CSIStorageCapacity] = []
        self.limit = np.zeros(0, dtype=np.int64)
        self.pair_slot = np.zeros(0, dtype=np.int64)
        self.pair_entry = np.zeros(0, dtype=np.int64)

    def put(self, obj: CSIStorageCapacity) -> None:
        self.objects[obj.key] = obj
        self._dirty = True

    def drop(self, key: str) -> None:
        if self.objects.pop(key, None) is not None:
            self._dirty = True

    def _ensure(self, nodes: NodeTable) -> None:
        if not self._dirty and self._labels == nodes.label_version:
            return
        self._dirty = False
        self._labels = nodes.label_version
        self.order = sorted((o for o in self.objects.values() if o.limit is not None), key=lambda o: o.key)
        self.limit = np.array([bytes_capped(ceil_units(o.limit or 0)) for o in self.order], dtype=np.int64)
        slots = [np.flatnonzero(nodes.label_selector_mask(o.node_topology)) for o in self.order]
        counts = np.array([len(s) for s in slots], dtype=np.int64)
        self.pair_slot = np.concatenate(slots).astype(np.int64) if slots else np.zeros(0, dtype=np.int64)
        self.pair_entry = np.repeat(np.arange(len(self.order), dtype=np.int64), counts)

    def first_fit(self, request_bytes: int, nodes: NodeTable) -> Ints:
        """Per slot, the first object (in key order) whose limit covers the request, or -1."""
        self._ensure(nodes)
        pm = (self.limit >= bytes_capped(request_bytes))[self.pair_entry]
        best = np.full(len(nodes.valid), _NONE, dtype=np.int64)
        np.minimum.at(best, self.pair_slot[pm], self.pair_entry[pm])
        best[best == _NONE] = -1
        return best
