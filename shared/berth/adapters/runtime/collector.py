"""Garbage collection for processes whose state only grows (a replay, a scorer's cluster view).

CPython's collector walks every tracked object on its full passes. A cluster view of 5,000 nodes
and 100,000 PVs is millions of objects, almost none in reference cycles, and those passes took a
third of a replay. So objects that survive a batch are frozen (left out of collections); every
`thaw_every` events they are thawed and one full collection runs, so cyclic garbage is still
reclaimed, only later.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


class Collector:
    def __init__(self, freeze_every: int = 1000, thaw_every: int = 1_000_000) -> None:
        self.freeze_every = freeze_every
        self.thaw_every = thaw_every
        self._since_freeze = 0
        self._since_thaw = 0

    def handled(self, events: int) -> None:
        """Call after each batch with the number of events it held."""
        self._since_freeze += events
        self._since_thaw += events
        if self._since_thaw >= self.thaw_every:
            self._since_thaw = self._since_freeze = 0
            gc.unfreeze()
            gc.collect()
        elif self._since_freeze >= self.freeze_every:
            self._since_freeze = 0
            gc.freeze()

    @contextmanager
    def building(self) -> Iterator[None]:
        """While a state that lives on is built (a start from Redis), or a batch of messages is
        decoded before it is handled (berth.adapters.runtime.worker), no collection: nearly all of it
        survives (a batch's events until they are handled), and the passes would walk it again and
        again as it grows (a third of a build; for a batch, about a microsecond an event, a tenth
        of its decoding). Decoded events hold no reference cycle (wire Structs and models are
        trees). Then what was built is frozen, as after a batch."""
        enabled = gc.isenabled()
        gc.disable()
        try:
            yield
        finally:
            gc.freeze()
            if enabled:
                gc.enable()

    def close(self) -> None:
        """Thaw everything: the process goes back to the ordinary collector."""
        gc.unfreeze()


COLLECTOR = Collector()  # one per process: freezing is process-wide
