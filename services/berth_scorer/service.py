"""The scorer's handler: the engine decides, the store makes reservations atomic across replicas.

Before each batch it checks that the store still holds its state (the scorer's epoch key,
berth.adapters.store.epoch). If Redis lost it, the dedup marks are written again from the decisions topic
and this scorer's reservations from its engine, before anything is decided again.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

import msgspec

from berth.adapters.runtime.bootstrap import REDIS, Start
from berth.adapters.runtime.worker import StreamHandler
from berth.adapters.store.epoch import epoch_lost
from berth.core.api.core.resources import PODS
from berth.core.api.watch import Event
from berth.core.cache.state import Reservation
from berth.core.pipeline.records import DecisionRecord, encode_record
from berth.core.pipeline.scorer import ScorerEngine
from berth.core.ports import DECISIONS, Bus, Message, ReservationStore
from berth_scorer.binder import Binder, BindError

if TYPE_CHECKING:
    from berth.adapters.runtime.metrics import Metrics  # prometheus_client: not for an embedded replay

log = logging.getLogger("berth.scorer")


class Scorer(StreamHandler):
    def __init__(
        self,
        engine: ScorerEngine,
        bus: Bus,
        store: ReservationStore,
        topic: str = DECISIONS,
        metrics: Metrics | None = None,
        binder: Binder | None = None,
    ) -> None:
        """binder: bind the pods berth schedules itself, and serve the extender's bind (--bind)."""
        self.engine = engine
        self.binder = binder
        if binder is not None:
            engine.serve(binder.scheduler_name)
        self.bus = bus
        self.store = store
        self.topic = topic
        self.metrics = metrics
        self._sent: dict[str, None] = {}  # decision ids sent, marked as emitted once the broker has them
        self.epoch: str | None = None  # the token of the store's state, once seen or set

    async def handle(self, ev: Event) -> None:
        await self.publish(self.engine.handle(ev))

    def apply_only(self, ev: Event) -> None:
        self.engine.apply(ev)

    async def before_batch(self) -> None:
        await self.check_store()

    def kinds(self) -> frozenset[tuple[str, str]]:
        return self.engine.reads()

    async def publish(self, records: list[DecisionRecord]) -> None:
        """Reserve and emit decisions the engine made (once each: see on_flushed)."""
        for key in self.engine.take_released():  # first: what this event freed may be taken below
            await self.store.release(key)
        for r in records:
            if r.status == "Scheduled":
                held = self.engine.state.reserved(r.pod)
                if not await self._reserve(r.pod, r.node or "", held):
                    log.info("reservation conflict", extra={"decision_id": r.decision_id, "pod": r.pod, "node": r.node})
                    continue
                if self.binder is not None and held is not None and self.binder.ours(self.engine, r.pod):
                    try:
                        await self.binder.write(self.engine, held)
                    except BindError:
                        await self.store.release(r.pod)  # revoked: the pod is decided again later
                        continue
            if r.decision_id not in self._sent and not await self.store.decided(r.decision_id):
                await self._preempt(r)
                await self.bus.send(self.topic, encode_record(r), r.pod.encode())
                self._sent[r.decision_id] = None
                if self.metrics is not None:
                    self.metrics.decisions.labels(r.status).inc()
                log.info(
                    r.message, extra={"decision_id": r.decision_id, "pod": r.pod, "status": r.status, "node": r.node}
                )

    async def adopt(self, got: Start[ScorerEngine]) -> dict[str, Any]:
        """A take-over's engine goes into use. A Redis that lost the scorer's state is recovered
        first: the decided marks come back from the decisions topic before the start-time decisions
        below are published or deduplicated, and the holdings they are decided against include this
        engine's reservations."""
        fresh = got.engine
        await self.check_store(fresh)
        late: list[DecisionRecord] = []
        if got.source == REDIS and (got.ahead or not got.resumed):
            # pods whose events this group has not handled (or whose waiting it does not know):
            # from here on, decisions an uninterrupted run need not have made, under ids of their own
            fresh.diverge(_positions(got.watermarks, got.committed))
            # in a thread, as the group's heartbeats go on
            decided = await asyncio.to_thread(fresh.decide_pending, await self.store.holdings(), got.ahead)
            if got.ahead:
                late = decided
        else:
            await self.realign(fresh)
        fresh.take_released()
        self.engine = fresh
        if late:
            await self.publish(late)
            await self.bus.flush()
            await self.on_flushed()
        return {"pods": len(fresh.state.pods), "decided": len(late)}

    async def check_store(self, engine: ScorerEngine | None = None) -> None:
        """Before a batch, and before a take-over's first decisions are published: the store still
        holds this scorer's state, or it is recovered first (engine: whose reservations to take
        again; the one in use unless given)."""
        now = await self.store.epoch()
        if now is not None and not epoch_lost(self.epoch, now):
            self.epoch = now  # as this process left it, or as a scorer before it did (a restart)
            return
        await self.recover(lost=self.epoch is not None, engine=engine)

    async def recover(self, lost: bool, engine: ScorerEngine | None = None) -> None:
        """The store has no state (lost: it had some while this process ran; else: it was emptied
        before, or berth starts afresh): every decision on the decisions topic is marked as
        emitted again, and this scorer takes its engine's reservations again."""
        engine = engine or self.engine
        decided = decision_ids(await self.bus.records(self.topic))
        if lost or decided:
            log.warning(
                "Redis lost the scorer's state: marking decisions from the decisions topic, taking reservations again",
                extra={"decisions": len(decided), "reservations": len(engine.state.held())},
            )
            if self.metrics is not None:
                self.metrics.redis_lost.labels("scorer").inc()
        await self.store.mark_decided(decided)
        await self.retake(engine)
        self.epoch = await self.store.claim_epoch()

    async def realign(self, engine: ScorerEngine) -> None:
        """The store's reservations made what `engine` holds. A take-over's engine is an uninterrupted
        run's at the group's commit (or its checkpoint), while the store may hold what the process
        before it reserved and released in a batch it did not commit: decided again against those,
        the redelivered batch could find a conflict its first run did not, and a decision would come
        out again with other contents. The scorers' reservations are the active scorer's (one
        member of the group holds the topic; the others stand by)."""
        for pod, node in (await self.store.holdings()).items():
            held = engine.state.reserved(pod)
            if held is not None and held.node == node:
                pvs = sorted(pv for _, pv in held.bindings)
                if await self.store.reservation(pod) == (node, pvs):
                    continue
            await self.store.release(pod)
        await self.retake(engine)

    async def retake(self, engine: ScorerEngine) -> None:
        """Take the engine's reservations in the store again (an empty store: only another replica
        recovering at the same time can have taken their PVs since; those pods are decided again)."""
        for held in engine.state.held():
            pvs = [pv for _, pv in held.bindings]
            if not await self.store.reserve(held.pod.key, held.node, pvs, {**held.pod.requests, PODS: 1}):
                log.info("reservation lost while recovering", extra={"pod": held.pod.key, "node": held.node})
                engine.revoke(held.pod.key)

    async def _preempt(self, r: DecisionRecord) -> None:
        """A preemption of a pod berth schedules itself, in --bind mode: the scorer carries it out."""
        node, victims = r.nominated_node, r.victims
        if self.binder is None or not isinstance(node, str) or not isinstance(victims, list):
            return
        if self.binder.ours(self.engine, r.pod):
            await self.binder.preempt(self.engine, r.pod, node, victims)

    async def on_flushed(self) -> None:
        """The broker acknowledged every record sent so far: mark their decisions as emitted. A crash
        before this repeats those decisions (their batch is redelivered), it never loses one."""
        if self._sent:
            await self.store.mark_decided(list(self._sent))
            self._sent.clear()

    async def _reserve(self, key: str, node: str, held: Reservation | None) -> bool:
        """Take the reservation in the store too; revoked in the engine if another replica was first."""
        pvs = [pv for _, pv in held.bindings] if held else []
        requests = {**held.pod.requests, PODS: 1} if held else {}
        budget = self.engine.budget(node, requests)
        ok = await self.store.reserve(key, node, pvs, requests, budget)
        if self.metrics is not None:
            self.metrics.reservations.labels("taken" if ok else "conflict").inc()
        if not ok:
            self.engine.revoke(key)  # another replica took the PVs or the room first
        return ok

    async def bind(self, namespace: str, name: str, uid: str, node: str) -> str:
        """The extender's bind: kube-scheduler chose the node and its VolumeBinding PreBind has bound the
        pod's volumes; berth binds the pod. "" when bound, else why not."""
        if self.binder is None:
            return "berth: the scorer does not bind (run `berth scorer --bind`)"
        await self.check_store()  # it reserves: not in a Redis that lost the other reservations
        engine = self.engine
        key = f"{namespace}/{name}"
        pod = engine.state.pods.get(key)
        if pod is None:
            return f"berth: pod {key} is not known to berth yet"
        if uid and pod.uid and uid != pod.uid:
            return f"berth: pod {key} has uid {pod.uid}, not {uid}"
        outcome = engine.place(pod, node)
        held = outcome.reservation
        if held is None:
            return f"berth: {outcome.decision.message}"
        await self.store.release(key)  # any earlier reservation of berth's own choice
        if not await self._reserve(key, node, held):
            return f"berth: the reservation for {key} on {node} was lost to another scorer"
        try:
            await self.binder.write(engine, held, volumes=False)
        except BindError as e:
            await self.store.release(key)
            return f"berth: {e}"
        return ""


def _positions(watermarks: dict[int, int], committed: dict[int, int]) -> str:
    """Where a start's state came from: per partition, the indexer's watermark and the group's commit."""
    return ",".join(f"{p}:{watermarks.get(p, 0)}:{committed.get(p, 0)}" for p in sorted({*watermarks, *committed}))


class _Decided(msgspec.Struct, rename="camel"):
    decision_id: str


def decision_ids(messages: list[Message]) -> list[str]:
    """The decision ids on the decisions topic (a record that does not read as one is passed over)."""
    out: list[str] = []
    for msg in messages:
        try:
            out.append(_decode_decided(msg.value).decision_id)
        except msgspec.DecodeError:
            continue
    return out


_decode_decided = msgspec.json.Decoder(_Decided).decode
