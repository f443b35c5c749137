"""The buffer controller: CapacityBuffer statuses and readiness as the cluster changes.

A change to a buffer, a pod template or a workload a buffer names is reconciled at once. Pod and
quota churn only marks its namespace; marked namespaces are reconciled once the churn has gone on
for SETTLE seconds of log time (a controller's work queue does the same batching). readyReplicas,
which places fake pods through the scheduler, is recomputed on buffer-shaping changes and otherwise
once per resync period of log time, as a controller's periodic reconcile would. A record is emitted only when a buffer's status or readiness differs from what was
last emitted.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import msgspec

from berth.core.api.watch import Event
from berth.core.cache.state import ClusterState
from berth.core.config.kubeschedulerconfig import SchedulerConfig
from berth.core.controllers.capacitybuffer import fakepods
from berth.core.controllers.capacitybuffer.controller import BufferResult, reconcile
from berth.core.controllers.capacitybuffer.status import status_json
from berth.core.controllers.capacitybuffer.store import BufferStore
from berth.core.pipeline.applier import Applier
from berth.core.pipeline.records import BufferStatusRecord
from berth.core.pipeline.stats import BufferPoint, RunStats
from berth.core.scheduler.schedule_one import Scheduler

RESYNC_SECONDS = 60.0
SETTLE_SECONDS = 5.0


def _keep_transition_times(status: dict[str, Any], last: tuple[dict[str, Any], int] | None) -> dict[str, Any]:
    """A condition whose status did not change keeps its lastTransitionTime, as the API conventions say."""
    if last is None or "conditions" not in status:
        return status
    before = {c.get("type"): c for c in last[0].get("conditions", [])}
    conditions = []
    for c in status["conditions"]:
        old = before.get(c.get("type"))
        if old is not None and old.get("status") == c.get("status") and "lastTransitionTime" in old:
            c = {**c, "lastTransitionTime": old["lastTransitionTime"]}
        conditions.append(c)
    return {**status, "conditions": conditions}


class _Emitted(msgspec.Struct, array_like=True):
    status: dict[str, Any]
    ready: int


class _Checkpoint(msgspec.Struct):
    now: datetime | None
    last: dict[str, _Emitted]
    ready: dict[str, int]
    synced_at: float | None
    marked: list[str]
    marked_at: float | None


_encode = msgspec.msgpack.Encoder().encode
_decode = msgspec.msgpack.Decoder(_Checkpoint).decode

_WORKLOADS = ("Deployment", "ReplicaSet", "StatefulSet", "Job", "ReplicationController")


class BufferEngine:
    def __init__(
        self,
        config: SchedulerConfig,
        resync: float = RESYNC_SECONDS,
        max_chunks: int = 1000,
        sleep: bool = True,
    ) -> None:
        self.store = BufferStore()
        self.state = ClusterState(extensions=[self.store])
        self.scheduler = Scheduler(config.build(self.state), top_nodes=0)
        # the plugins' state is read only to place fake pods, once a buffer exists: until then it
        # sleeps (only what it is built from is kept), and then follows every event
        if sleep:
            self.state.sleep(keep=(self.store,))
        self.applier = Applier(self.state)
        self.resync = resync
        self.max_chunks = max_chunks
        self.stats = RunStats()
        self._last: dict[str, tuple[dict[str, Any], int]] = {}
        self._ready: dict[str, int] = {}
        self._synced_at: float | None = None
        self._marked: set[str] = set()
        self._marked_at: float | None = None

    def restore(self, events: list[Event], now: datetime | None) -> None:
        """Start from the objects as they are (a snapshot) instead of their history: each is applied
        as its event would be, and what would be emitted is taken as emitted already (resume() a
        checkpoint then to know what was)."""
        if now is not None:
            self.applier.now, self.applier.has_clock = now, True
        for ev in events:
            self.handle(ev)

    def apply(self, ev: Event) -> None:
        """The event's change to the state only (events a checkpoint already accounts for)."""
        self.applier.apply(ev)
        self.store.take_dirty()

    def checkpoint(self) -> bytes:
        """What the engine keeps beyond the objects: the clock, what it last emitted per buffer and
        the readiness it counted, when it last resynced, the namespaces waiting to settle."""
        return _encode(
            _Checkpoint(
                self.applier.now if self.applier.has_clock else None,
                {k: _Emitted(s, n) for k, (s, n) in self._last.items()},
                self._ready,
                self._synced_at,
                sorted(self._marked),
                self._marked_at,
            )
        )

    def resume(self, data: bytes) -> None:
        """Take back a checkpoint() over objects as of the same event."""
        cp = _decode(data)
        if cp.now is not None:
            self.applier.now, self.applier.has_clock = cp.now, True
        self._last = {k: (e.status, e.ready) for k, e in cp.last.items()}
        self._ready = dict(cp.ready)
        self._synced_at = cp.synced_at
        self._marked = set(cp.marked)
        self._marked_at = cp.marked_at
        self.store.take_dirty()

    def handle(self, ev: Event) -> list[BufferStatusRecord]:
        applied = self.applier.apply(ev)
        store = self.store
        if store.dirty:
            self._marked |= store.take_dirty()
        if not store.buffers:
            return []
        if self.state.asleep:
            self.state.wake()
        # every event moves the clock, bookmarks and stale events included: the periodic refresh fires on them too
        now = self.applier.now.timestamp()
        if self._marked and self._marked_at is None:
            self._marked_at = now
        shaped = applied.obj is not None and self._shapes(applied.obj)
        due = self._synced_at is None or now - self._synced_at >= self.resync or not self.applier.has_clock
        settled = self._marked_at is not None and now - self._marked_at >= SETTLE_SECONDS
        if not (shaped or due or settled):
            return []
        self._marked, self._marked_at = set(), None
        results = reconcile(self.store, self.applier.now)
        if due or shaped:
            self._synced_at = now
            place, release = fakepods.scheduler_placer(self.scheduler, self.applier.now)
            self._ready = fakepods.count_ready(results, place, release, self.max_chunks)
        return self._emit(results, ev)

    def _shapes(self, obj: Any) -> bool:
        """Can this change alter a buffer's chunk or replicas? Then readiness is recomputed at once."""
        kind = type(obj).__name__
        if kind in ("CapacityBuffer", "PodTemplate"):
            return True
        if kind not in _WORKLOADS:
            return False
        return any(
            b.namespace == obj.namespace and b.spec.scalable_ref is not None and b.spec.scalable_ref.name == obj.name
            for b in self.store.buffers.values()
        )

    def _emit(self, results: list[BufferResult], ev: Event) -> list[BufferStatusRecord]:
        ready = self._ready
        out = []
        for r in results:
            if not r.processed:
                continue
            status = _keep_transition_times(status_json(r.status), self._last.get(r.buffer.key))
            now = (status, ready.get(r.buffer.key, 0))
            if self._last.get(r.buffer.key) == now:
                continue
            self._last[r.buffer.key] = now
            ts = self.applier.ts
            fake = min(fakepods.wanted(r), self.max_chunks)
            out.append(
                BufferStatusRecord(
                    ts=ts,
                    position=ev.position,
                    buffer=r.buffer.key,
                    status=status,
                    ready_replicas=now[1],
                    fake_pods=fake,
                )
            )
            self.stats.buffers.append(BufferPoint(ts, ev.position, r.buffer.key, r.status.replicas or 0, now[1]))
        return out
