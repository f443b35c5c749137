"""The scorer: every pending pod gets a decision when its event is applied, against the state then.

Scheduled decisions are reserved at once, so later pods see their PVs and their load. Pods that do
not fit wait in the unschedulable queue and are retried when a relevant change arrives. A later
MODIFIED event with the decided node confirms the reservation; DELETED releases it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import msgspec

from berth.core.api.core.model import Node, Pod
from berth.core.api.core.resources import CPU, MEMORY
from berth.core.api.kinds import KINDS
from berth.core.api.watch import Event, ListMarker
from berth.core.cache.state import ClusterState, Reservation
from berth.core.config.kubeschedulerconfig import SchedulerConfig
from berth.core.framework.events import Action, PodUpdate, pod_update
from berth.core.pipeline.applier import Applier
from berth.core.pipeline.overrun import OverRunObserver
from berth.core.pipeline.records import DecisionRecord
from berth.core.pipeline.reservations import Reservations
from berth.core.pipeline.stats import NodeUse, RunStats, StatsObserver
from berth.core.scheduler.queue import RetryQueue, Waiting
from berth.core.scheduler.schedule_one import Outcome, Scheduler


class _Waiting(msgspec.Struct, array_like=True):
    key: str
    attempts: int
    eligible_at: float
    message: str
    rejected_by: list[str]
    seq: int
    due: bool


class _Held(msgspec.Struct, array_like=True):
    pod: str
    node: str
    bindings: list[list[str]]
    provisions: list[str]


class _Checkpoint(msgspec.Struct):
    now: datetime | None
    seq: int
    waiting: list[_Waiting]
    held: list[_Held]
    placed: dict[str, str]
    nominated: dict[str, str]
    lineage: str = ""  # absent from checkpoints written before it: an uninterrupted run's


_encode = msgspec.msgpack.Encoder().encode
_decode = msgspec.msgpack.Decoder(_Checkpoint).decode


def decision_id(pod: Pod, attempt: int, lineage: str = "") -> str:
    """Stable across replays and services: the pod's identity, its version and the attempt, and the
    engine's lineage once its run has left the uninterrupted one's (ScorerEngine.diverge)."""
    seed = f"{pod.uid or pod.key}/{pod.resource_version}/{attempt}"
    if lineage:
        seed += f"/{lineage}"
    return hashlib.sha1(seed.encode(), usedforsecurity=False).hexdigest()[:16]


# Pod fields whose change cannot move a pending pod: version and status churn, and what the scorer
# handles before comparing (a node, a finished phase, a deletion). Every other field of the model
# counts, so a field added to Pod is compared unless it is named here (tests/pipeline/test_spec_changed.py).
STATUS_ONLY = frozenset({"resource_version", "conditions", "creation", "phase", "node_name", "deleting"})
PLACEMENT = tuple(f for f in Pod.__struct_fields__ if f not in STATUS_ONLY)


def spec_changed(old: Pod, new: Pod) -> bool:
    """A pending pod's update that could change its placement (not status or version churn)."""
    return any(getattr(old, k) != getattr(new, k) for k in PLACEMENT)


_ADD_OR_UPDATE = Action.ADD | Action.UPDATE


def _action(obj: Any, old: Any, deleted: bool) -> Action:
    """The change's kube ActionType (pods: ScorerEngine._pod_event). The applier knows the previous
    object of pods and nodes only: other kinds' adds and updates are not told apart (a retry too
    many, never one too few)."""
    if deleted:
        return Action.DELETE
    if old is not None:
        return Action.UPDATE
    return Action.ADD if isinstance(obj, Node) else _ADD_OR_UPDATE


def _time_at(seconds: float) -> datetime:
    """The UTC time of a Unix timestamp, at most the latest a datetime holds (a log's clock may be at
    the end of year 9999, and a backoff past it)."""
    latest = datetime.max.replace(tzinfo=UTC)
    return latest if seconds >= latest.timestamp() else datetime.fromtimestamp(seconds, UTC)


class ScorerEngine:
    """One profile's scorer: applies events, decides pending pods, and keeps the retry queue, the
    reservations and the run's statistics (each its own part)."""

    def __init__(
        self,
        config: SchedulerConfig,
        label: str = "default",
        top_nodes: int | None = None,
        preemption_grace: float | None = None,
        incremental: bool = True,
    ) -> None:
        """preemption_grace: carry preemptions out (`berth replay`): the victims leave the state that
        many log seconds after the decision and the preemptor is retried then. None (the services):
        the API server deletes them, and their events say so. incremental: the Scheduler's option
        (node-local plugins' answers kept per pod signature)."""
        self.state = ClusterState()
        # one scheduler per profile, by schedulerName; pods of other schedulers are skipped
        self.schedulers = {
            p.scheduler_name: Scheduler(p.build(self.state), top_nodes, incremental) for p in config.profiles
        }
        self.scheduler = self.schedulers[config.default.scheduler_name]
        self.applier = Applier(self.state)
        interests = tuple(i for s in self.schedulers.values() for i in s.profile.interests)
        self.queue = RetryQueue(replace(self.scheduler.profile, interests=interests))
        self.reservations = Reservations(self.state)
        self.observer = StatsObserver(label)
        self.overrun = OverRunObserver()
        self._hold: datetime | None = None
        self._hold_at: int | None = None
        self._listing: set[tuple[str, str]] | None = None  # kinds the watcher is listing (ListMarker)
        self._last: Event | None = None  # the latest event handled: end_of_log's decisions point at it
        self.preemption_grace = preemption_grace
        self._evictions: list[tuple[float, Pod, str, tuple[str, ...], DecisionRecord]] = []
        self._evicted: set[str] = set()
        self.lineage = ""  # see diverge
        # the kinds whose objects change this state: its extensions are all attached by now
        self._reads = frozenset(key for key, kind in KINDS.items() if self.state.reads(kind.model))

    @property
    def stats(self) -> RunStats:
        return self.observer.stats

    def hold_until(self, start: datetime) -> None:
        """Events before `start` only build the state; pods still pending then are decided at `start`."""
        self._hold = start

    def hold_through(self, position: int) -> None:
        """Events up to this position only build the state (the log's initial lists:
        berth.core.pipeline.initial); pods still pending then are decided at it."""
        self._hold_at = position

    def _holding(self, ev: Event) -> bool:
        if self._hold is not None and (not self.applier.has_clock or self.applier.now < self._hold):
            return True
        return bool(self._listing) or (self._hold_at is not None and ev.position < self._hold_at)

    def _listed(self, marker: ListMarker) -> None:
        """berth's watcher starts its first lists (begin: decide nothing until each kind's is complete,
        as kube-scheduler waits for its caches), or one of them is complete (end)."""
        if marker.begin:
            self._listing = set(marker.begin)
        elif marker.end is not None and self._listing is not None:
            self._listing.discard(marker.end)

    def restore(self, events: list[Event], now: datetime | None) -> None:
        """Start from the objects as they are (a snapshot) instead of their history: apply them,
        nothing decided. Then either resume() a checkpoint or decide_pending()."""
        if now is not None:
            self.applier.now, self.applier.has_clock = now, True
        for ev in events:
            self.applier.apply(ev)

    def reads(self) -> frozenset[tuple[str, str]]:
        """The kinds (API group, kind) whose objects change this engine's state. A consumer may leave
        the others undecoded (`parse_event`'s `only`): their events still move the clock, and
        nothing else reads them here (Deployments, Jobs, ResourceQuotas are the buffer controller's).
        The same set on every call, so that a decoder kept per set is found by identity."""
        return self._reads

    def diverge(self, start: str) -> None:
        """This engine's decisions from here on may differ from an uninterrupted run's: it starts from
        a state that run never had at this point (the indexer's, ahead of the group's commit, or
        without the queue's attempts). Its decision ids then name this start, so that none repeats
        the id of a decision an earlier process emitted with other contents (its attempts counted
        again from what this start knows). start: what the state was built from (the same start
        gives the same ids, as it gives the same decisions)."""
        seed = f"{self.lineage}/{start}"
        self.lineage = hashlib.sha1(seed.encode(), usedforsecurity=False).hexdigest()[:8]

    def checkpoint(self) -> bytes:
        """What the engine keeps beyond the objects: the clock, the waiting pods, the reservations
        and nominations it holds. With the objects as of the same event, resume() makes an engine
        that decides as this one does from there."""
        seq, waiting = self.queue.saved()
        held = [
            _Held(key, r.node, [list(b) for b in r.bindings], list(r.provisions))
            for key in self.reservations.pods()
            if (r := self.state.reserved(key)) is not None
        ]
        nominated = self.scheduler.nominator.held()
        return _encode(
            _Checkpoint(
                self.applier.now if self.applier.has_clock else None,
                seq,
                [
                    _Waiting(w.key, w.attempts, w.eligible_at, w.message, sorted(w.rejected_by), w.seq, w.due)
                    for w in waiting
                ],
                held,
                self.reservations.placed_all(),
                nominated,
                self.lineage,
            )
        )

    def resume(self, data: bytes) -> None:
        """Take back a checkpoint() over objects as of the same event (see restore)."""
        cp = _decode(data)
        self.lineage = cp.lineage
        if cp.now is not None:
            self.applier.now, self.applier.has_clock = cp.now, True
        self.queue.restore(
            cp.seq,
            (
                Waiting(w.key, w.attempts, w.eligible_at, w.message, frozenset(w.rejected_by), w.seq, w.due)
                for w in cp.waiting
            ),
        )
        for h in cp.held:
            pod = self.state.pods.get(h.pod)
            if pod is not None:
                self.reservations.hold(
                    Reservation(pod, h.node, tuple((c, v) for c, v in h.bindings), tuple(h.provisions))
                )
        self.reservations.restore_placed(cp.placed)
        for key, node in cp.nominated.items():
            pod = self.state.pods.get(key)
            if pod is not None:
                self.scheduler.nominator.hold(pod, node)

    def apply(self, ev: Event) -> None:
        """The event's change to the state only: nothing decided, queued or reserved (events a
        checkpoint already accounts for)."""
        self.applier.apply(ev)

    def decide_pending(self, held: Mapping[str, str], waiting: bool = False) -> list[DecisionRecord]:
        """Pods the engine knows nothing of beyond their objects: take back the reservations the
        store holds (pod -> node), then decide the pods still pending, not reserved nor nominated,
        as a restarted kube-scheduler does; waiting: the waiting pods too (changes they missed may
        help them), which emit a decision only if its outcome changed. Returns those decisions."""
        out: list[DecisionRecord] = []
        at = Event("ADDED", None, None, b"", b"")
        for pod in self.state.pending_pods():
            if self.state.reserved(pod.key) or self.scheduler.nominator.holds(pod.key):
                continue
            if pod.key in self.queue:
                if waiting:
                    self._decide(pod, at, out, self.queue.attempts(pod.key) + 1, retry=True)
                continue
            node = held.get(pod.key)
            if node is not None and self.place(pod, node).reservation is not None:
                continue
            self._decide(pod, at, out, 1)
        return out

    def handle(self, ev: Event) -> list[DecisionRecord]:
        self.observer.event()
        self._last = ev
        applied = self.applier.apply(ev)
        obj = applied.obj
        cls = type(obj)  # models are final classes
        if cls is Pod and obj.key in self._evicted:
            self.state.lift(obj.key)  # a victim berth evicted: later events of it are of a pod gone
            obj, cls = None, type(None)
        self.overrun.advance(self.applier.now if self.applier.has_clock else None)
        if cls is Pod:
            self.overrun.pod(obj, ev.deleted)
        elif cls is Node:
            self.overrun.node(obj, ev.deleted)
        out: list[DecisionRecord] = []
        if ev.marker is not None:
            self._listed(ev.marker)
        if self._hold is not None or self._hold_at is not None or self._listing is not None:
            if self._holding(ev):
                return []
            self._release(ev, out)
            return out
        if self.queue.has_due and self.applier.has_clock:
            for pod in self.queue.to_retry(self.queue.take_due(self.applier.now.timestamp())):
                self._decide(pod, ev, out, self.queue.attempts(pod.key) + 1, retry=True)
        if obj is not None:
            if cls is Pod:
                action = self._pod_event(obj, applied.old, ev, out)
            else:  # what the change is to waiting pods, when there are any
                action = _action(obj, applied.old, ev.deleted) if self.queue.pods else None
            if action is not None and self.queue.pods:
                now, has_clock = self.applier.now, self.applier.has_clock
                change = PodUpdate(applied.old, obj) if cls is Pod and action & Action.UPDATE else obj
                keys = self.queue.helped(cls.__name__, action, change, now, has_clock)
                for pod in self.queue.to_retry(keys):
                    self._decide(pod, ev, out, self.queue.attempts(pod.key) + 1, retry=True)
        if self._evictions:
            self._evict_due(ev, out)
        return out

    def _release(self, ev: Event, out: list[DecisionRecord]) -> None:
        """The hold is over: decide the pods pending now, as a scheduler that has synced its caches
        (waiting pods are retried: the changes they missed may help them)."""
        self._hold = self._hold_at = self._listing = None
        for pod in self.state.pending_pods():
            if self.state.reserved(pod.key) is not None or self.scheduler.nominator.holds(pod.key):
                continue
            if pod.key in self.queue:
                self._decide(pod, ev, out, self.queue.attempts(pod.key) + 1, retry=True)
            else:
                self._decide(pod, ev, out, 1)

    def end_of_log(self) -> list[DecisionRecord]:
        """The log is over: a hold still on is released, and the pods due for a retry are retried, each
        as if the clock had moved past its backoff (kube-scheduler would retry them then)."""
        out: list[DecisionRecord] = []
        at = self._last or Event("ADDED", None, None, b"", b"")
        if self._hold is not None or self._hold_at is not None or self._listing is not None:
            self._release(at, out)
        while self.queue.has_due:
            eligible = self.queue.next_due()
            if eligible is None:
                break
            if not self.applier.has_clock or eligible > self.applier.now.timestamp():
                self.applier.now = _time_at(eligible)
                self.applier.has_clock = True
            for pod in self.queue.to_retry(self.queue.take_due(eligible)):
                self.stats.retried_at_end += 1
                self._decide(pod, at, out, self.queue.attempts(pod.key) + 1, retry=True)
        return out

    def _evict_due(self, ev: Event, out: list[DecisionRecord]) -> None:
        """Carry out the preemptions whose grace is over: the victims go (as their deletion would),
        then the preemptor and the waiting pods that change can help are retried."""
        while self._evictions and self.applier.has_clock:
            now = self.applier.now.timestamp()
            due = [e for e in self._evictions if e[0] <= now]
            if not due:
                return
            self._evictions = [e for e in self._evictions if e[0] > now]
            for _, preemptor, node, victims, record in due:
                still = self.scheduler.nominator.holds(preemptor.key)  # not cleared by a later preemption
                priorities = []
                helped: list[str] = []
                for key in victims:
                    pod = self.state.lift(key)
                    if pod is None:
                        continue
                    self._evicted.add(key)
                    self.reservations.forget(key)
                    self.overrun.pod(pod, True)  # as its deletion would tell
                    priorities.append(self.state.priority(pod))
                    helped += self.queue.helped("Pod", Action.DELETE, pod, self.applier.now, True)
                self.observer.preempted(record, node, tuple(priorities))
                self.scheduler.nominator.forget(preemptor.key)
                current = self.state.pods.get(preemptor.key)
                if current is not None and current.pending and self.state.reserved(current.key) is None:
                    if still:  # kube retries it with status.nominatedNodeName set: that node first
                        current = msgspec.structs.replace(current, nominated_node=node)
                    self._decide(current, ev, out, record.attempt + 1)  # the nomination's next attempt
                for pod in self.queue.to_retry([k for k in dict.fromkeys(helped) if k != preemptor.key]):
                    self._decide(pod, ev, out, self.queue.attempts(pod.key) + 1, retry=True)

    def _pod_event(self, pod: Pod, old: Any, ev: Event, out: list[DecisionRecord]) -> Action | None:
        """Decide a new pending pod; returns what the change is to waiting pods, None when it cannot
        help them: DELETE for a pod deleted, finished or moved away from its node (kube's
        AssignedPodDelete), ADD for a pod newly on a node, for an assigned pod's update
        UPDATE_POD_LABEL (new labels) and/or UPDATE_POD_SCALE_DOWN (requests down). ADD and updates
        only where a plugin of the profile registered them (InterPodAffinity, PodTopologySpread,
        NodeResourcesFit), so other profiles retry nothing more than before."""
        key = pod.key
        if ev.deleted or pod.terminated:
            self.queue.remove(key)
            self.reservations.forget(key)
            self.scheduler.nominator.forget(key)
            return Action.DELETE
        was = old.node_name if isinstance(old, Pod) else ""
        if pod.node_name:
            self.queue.remove(key)
            self.reservations.bound(key, pod.node_name)
            self.scheduler.nominator.forget(key)
            if was and was != pod.node_name:
                return Action.DELETE
            assert old is None or isinstance(old, Pod)
            if not was:
                action = Action.ADD
            elif old is None or not self.queue.pods:
                return None  # an update helps nobody when none waits
            else:
                action = pod_update(old, pod)
            return action if action and self.queue.registered("Pod", action) else None
        if self.state.reserved(key) is not None:
            return None  # decided already, waiting for the API server to agree
        if self.scheduler.nominator.holds(key):
            return None  # nominated, waiting for its victims to go
        if key in self.queue and isinstance(old, Pod) and not spec_changed(old, pod):
            return None
        self._decide(pod, ev, out, self.queue.attempts(key) + 1)
        return None

    def serve(self, scheduler_name: str) -> None:
        """Decide this scheduler's pods too: with its profile if the config has one, else with the
        first (binder mode: berth is the scheduler its pods name)."""
        self.schedulers.setdefault(scheduler_name, self.scheduler)

    def budget(self, node: str, resources: Iterable[str]) -> dict[str, int]:
        """Per resource: the node's allocatable less the pods bound there, as this engine sees it now.
        Reservations are left out: the store counts those, across replicas."""
        nodes = self.state.nodes
        slot = nodes.slot.get(node)
        if slot is None:
            return {}
        reserved = self.state.reserved_on(node)
        return {
            r: int(nodes.allocatable(r)[slot]) - (int(nodes.requested(r)[slot]) - reserved.get(r, 0)) for r in resources
        }

    def take_released(self) -> list[str]:
        return self.reservations.take_released()

    def evaluate(self, pod: Pod) -> Outcome:
        """The pod against the state now, every node listed, nothing kept (the extender's filter and
        prioritize). A reservation the pod already holds is left out while it is evaluated."""
        held = self.state.reserved(pod.key)
        if held is None:
            return self.scheduler.evaluate(pod, self.applier.now)
        self.state.release(pod.key)
        try:
            return self.scheduler.evaluate(pod, self.applier.now)
        finally:
            self.state.reserve(held)

    def place(self, pod: Pod, node: str) -> Outcome:
        """Reserve the pod on the node another scheduler chose (the extender's bind), in place of any
        reservation it held; no reservation if it does not fit there."""
        held = self.state.reserved(pod.key)
        if held is not None:
            self.state.release(pod.key)
        outcome = self.scheduler.decide(pod, self.applier.now, on=node)
        if outcome.reservation is None:
            if held is not None:
                self.state.reserve(held)
            return outcome
        self.reservations.hold(outcome.reservation)
        self.queue.remove(pod.key)
        return outcome

    def revoke(self, key: str) -> None:
        """Undo a Scheduled decision another replica beat us to; the pod waits and is retried."""
        self.reservations.revoke(key)
        self.queue.failed(key, self.applier.now.timestamp(), "reservation lost to another scorer")
        self.observer.revoke(key)
        self.overrun.revoke(key)

    def _decide(self, pod: Pod, ev: Event, out: list[DecisionRecord], attempt: int, retry: bool = False) -> None:
        scheduler = self.schedulers.get(pod.scheduler_name)
        if scheduler is None:  # another scheduler's pod: left alone, counted
            self.observer.skipped(pod.key)
            return
        if scheduler.pre_enqueue(pod).rejects:  # held back (scheduling gates) until an update lets it through
            self.observer.gated(pod.key)
            return
        outcome = scheduler.decide(pod, self.applier.now)
        d = outcome.decision
        emit = True
        if outcome.reservation is not None:
            self.reservations.hold(outcome.reservation)
            self.queue.remove(pod.key)
        elif d.status == "Unschedulable":
            changed = self.queue.failed(pod.key, self.applier.now.timestamp(), d.message, outcome.rejected_by)
            emit = changed or not retry or isinstance(d.nominated_node, str)
        post = outcome.post_filter
        if post is not None and post.nominated_node == "":
            self.scheduler.nominator.clear(pod.key)  # kube clears the pod's nominatedNodeName
        elif isinstance(d.nominated_node, str) and d.nominated_node and isinstance(d.victims, list):
            self.scheduler.clear_nominations(pod, d.nominated_node, d.victims)
        if not emit:
            return
        record = DecisionRecord.of(
            d, self.applier.ts, decision_id(pod, attempt, self.lineage), ev.position, attempt, outcome.reasons
        )
        out.append(record)
        if self.preemption_grace is not None and isinstance(d.nominated_node, str) and isinstance(d.victims, list):
            due = self.applier.now.timestamp() + self.preemption_grace if self.applier.has_clock else 0.0
            self._evictions.append((due, pod, d.nominated_node, tuple(d.victims), record))
            # kube's nominator: until then later pods of no higher priority see the preemptor on its node
            self.queue.remove(pod.key)
            self.scheduler.nominator.hold(pod, d.nominated_node)
        point = self.observer.decided(record)
        self.overrun.decided(record, pod, point.reason, self.reservations.held(pod.key))

    def finish(self) -> RunStats:
        """Stats at the end of the run: bindings still standing and node utilization."""
        stats = self.stats
        stats.bindings = self.reservations.bindings()
        nodes = self.state.nodes
        cpu_req, cpu_alloc = nodes.requested(CPU), nodes.allocatable(CPU)
        mem_req, mem_alloc = nodes.requested(MEMORY), nodes.allocatable(MEMORY)
        stats.nodes = [
            NodeUse(name, int(cpu_req[s]), int(cpu_alloc[s]), int(mem_req[s]), int(mem_alloc[s]))
            for name, s in sorted(nodes.slot.items())
        ]
        return stats
