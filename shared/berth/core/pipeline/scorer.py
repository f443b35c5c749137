"""The scorer: every pending pod gets a decision when its event is applied, against the state then.

Scheduled decisions are reserved at once, so later pods see their PVs and their load. Pods that do
not fit wait in the unschedulable queue and are retried when a relevant change arrives. A later
MODIFIED event with the decided node confirms the reservation; DELETED releases it.
"""

from __future__ import annotations

import copy
import hashlib
from collections import Counter
from collections.abc import Iterable
from datetime import datetime
from typing import Any

import numpy as np

from berth.core.decision import Decision
from berth.core.events import Event
from berth.core.framework import Hint, Mask
from berth.core.model import Pod
from berth.core.pipeline.applier import Applier
from berth.core.pipeline.queue import Group, UnschedulableQueue, Waiting
from berth.core.pipeline.records import DecisionRecord, RejectRecord
from berth.core.pipeline.stats import Binding, DecisionPoint, NodeUse, RunStats
from berth.core.plugins import REQUEUE
from berth.core.quantity import ceil_units
from berth.core.resources import CPU, MEMORY
from berth.core.scheduler import Outcome, Profile, Scheduler
from berth.core.state import ClusterState


def decision_id(pod: Pod, attempt: int) -> str:
    """Stable across replays and services: the pod's identity, its version and the attempt."""
    seed = f"{pod.uid or pod.key}/{pod.resource_version}/{attempt}"
    return hashlib.sha1(seed.encode(), usedforsecurity=False).hexdigest()[:16]


def main_reason(d: Decision) -> str:
    if d.status == "Scheduled":
        return ""
    counts = Counter(r for n in d.nodes.values() for r in n.reasons)
    if not counts:
        return d.message
    return min(counts.items(), key=lambda kv: (-kv[1], kv[0]))[0]


def _spec_changed(old: Pod, new: Pod) -> bool:
    """A pending pod's update that could change its placement (not status or version churn)."""
    keep = ("requests", "volumes", "node_selector", "affinity", "tolerations", "priority")
    return any(getattr(old, k) != getattr(new, k) for k in keep)


class ScorerEngine:
    def __init__(
        self,
        profile: Profile,
        label: str = "default",
        top_nodes: int | None = None,
    ) -> None:
        self.state = ClusterState(extensions=profile.extensions)
        self.scheduler = Scheduler(self.state, profile, top_nodes)
        self.applier = Applier(self.state)
        self.queue = UnschedulableQueue()
        self.stats = RunStats(label=label)
        self._bindings: dict[str, list[Binding]] = {}  # PVs berth chose, per pod, while they stand
        self._placed: dict[str, str] = {}  # pod -> the node berth chose
        self._released: list[str] = []  # reservations ended since take_released()
        self._hold: datetime | None = None
        self._group_pods: dict[frozenset[str], tuple[int, list[Pod | None]]] = {}

    def hold_until(self, start: datetime) -> None:
        """Events before `start` only build the state; pods still pending then are decided at `start`."""
        self._hold = start

    def handle(self, ev: Event) -> tuple[list[DecisionRecord], RejectRecord | None]:
        self.stats.events += 1
        applied = self.applier.apply(ev)
        obj = applied.obj
        out: list[DecisionRecord] = []
        if self._hold is not None:
            if not self.applier.has_clock or self.applier.now < self._hold:
                return [], None
            self._hold = None
            for pod in self.state.pending_pods():
                if self.state.reserved(pod.key) is None:
                    self._decide(pod, ev, out, 1)
            return out, None
        if self.queue.has_due and self.applier.has_clock:
            self._retry_due(ev, out)
        if obj is None:
            return out, None
        relevant = True
        kind = type(obj).__name__
        if isinstance(obj, Pod):
            relevant = self._pod_event(obj, applied.old, ev, out)
            kind = "PodGone"
        if relevant and self.queue:
            self._retry(ev, out, REQUEUE.get(kind, frozenset()), obj)
        return out, None

    def _pod_event(self, pod: Pod, old: Any, ev: Event, out: list[DecisionRecord]) -> bool:
        """Decide a new pending pod; returns whether the change can help waiting pods."""
        key = pod.key
        if ev.deleted or pod.terminated:
            self.queue.remove(key)
            self._forget(key)
            return True
        reserved = self.state.reserved(key)
        if pod.node_name:
            self.queue.remove(key)
            if self._placed.get(key, pod.node_name) != pod.node_name:
                self._forget(key)  # bound elsewhere by someone else: berth's choice is void
            elif key in self._placed and reserved is None:
                self._released.append(key)  # confirmed: the binding now counts, not the reservation
            return isinstance(old, Pod) and bool(old.node_name) and old.node_name != pod.node_name
        if reserved is not None:
            return False  # decided already, waiting for the API server to agree
        if key in self.queue and isinstance(old, Pod) and not _spec_changed(old, pod):
            return False
        self._decide(pod, ev, out, self.queue.attempts(key) + 1)
        return False

    def _forget(self, key: str) -> None:
        self._bindings.pop(key, None)
        if self._placed.pop(key, None) is not None:
            self._released.append(key)

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
        out, self._released = self._released, []
        return out

    def evaluate(self, pod: Pod) -> Outcome:
        """The pod against the state now, every node listed, nothing kept (the extender's filter and
        prioritize). A reservation the pod already holds is left out while it is evaluated."""
        scheduler = copy.copy(self.scheduler)
        scheduler.top_nodes = None
        scheduler.observe = None
        held = self.state.reserved(pod.key)
        if held is None:
            return scheduler.decide(pod, self.applier.now)
        self.state.release(pod.key)
        try:
            return scheduler.decide(pod, self.applier.now)
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
        self.state.reserve(outcome.reservation)
        self.queue.remove(pod.key)
        self._placed[pod.key] = node
        self._bindings[pod.key] = self._binding_stats(outcome.reservation.bindings)
        return outcome

    def revoke(self, key: str) -> None:
        """Undo a Scheduled decision another replica beat us to; the pod waits and is retried."""
        self.state.release(key)
        self._bindings.pop(key, None)
        self._placed.pop(key, None)
        self.queue.failed(key, self.applier.now.timestamp(), "reservation lost to another scorer")
        for i in range(len(self.stats.decisions) - 1, -1, -1):
            if self.stats.decisions[i].pod == key:
                del self.stats.decisions[i]
                break

    def _retry(self, ev: Event, out: list[DecisionRecord], helps: frozenset[str], obj: Any = None) -> None:
        now = self.applier.now.timestamp()
        hints = self._hints(helps, obj)
        judge = None
        if hints:

            def judge(group: Group, members: list[Waiting]) -> Mask | None:
                """kube's QueueingHint: retry unless every plugin that rejected the pod and cares about
                this change says it does not help."""
                cares = group.rejected & helps
                if not cares <= hints.keys():
                    return None
                pods = self._pods_of(group, members)
                helped = np.zeros(len(members), dtype=bool)
                for name in cares:
                    helped |= hints[name](pods, group.version)
                return helped

        for key in self.queue.eligible(now, self.applier.has_clock, helps, judge):
            pod = self.state.pods.get(key)
            if pod is None or not pod.pending or self.state.reserved(key) is not None:
                self.queue.remove(key)
                continue
            self._decide(pod, ev, out, self.queue.attempts(key) + 1, retry=True)

    def _retry_due(self, ev: Event, out: list[DecisionRecord]) -> None:
        """Pods a change helped while they backed off, now that their backoff is over (kube
        flushes its backoff queue the same way)."""
        for key in self.queue.take_due(self.applier.now.timestamp()):
            pod = self.state.pods.get(key)
            if pod is None or not pod.pending or self.state.reserved(key) is not None:
                self.queue.remove(key)
                continue
            self._decide(pod, ev, out, self.queue.attempts(key) + 1, retry=True)

    def _pods_of(self, group: Group, members: list[Waiting]) -> list[Pod | None]:
        """The members' pods, kept per group version as the hints' own caches are: an update that
        leaves a waiting pod in its group does not change what the hints read (see _spec_changed)."""
        got = self._group_pods.get(group.rejected)
        if got is None or got[0] != group.version:
            got = (group.version, [self.state.pods.get(w.key) for w in members])
            self._group_pods[group.rejected] = got
        return got[1]

    def _hints(self, helps: frozenset[str], obj: Any) -> dict[str, Hint]:
        """Per plugin that can tell, whether this change can make it accept a given pod."""
        out = {}
        for plugin in self.scheduler.profile.filters:
            hint = getattr(plugin, "queueing_hint", None)
            if plugin.name in helps and hint is not None:
                fn = hint(self.state, obj, self.applier.now)
                if fn is not None:
                    out[plugin.name] = fn
        return out

    def _decide(self, pod: Pod, ev: Event, out: list[DecisionRecord], attempt: int, retry: bool = False) -> None:
        outcome = self.scheduler.decide(pod, self.applier.now)
        d = outcome.decision
        emit = True
        if outcome.reservation is not None:
            self.state.reserve(outcome.reservation)
            self.queue.remove(pod.key)
            self._placed[pod.key] = outcome.reservation.node
            self._bindings[pod.key] = self._binding_stats(outcome.reservation.bindings)
        elif d.status == "Unschedulable":
            changed = self.queue.failed(pod.key, self.applier.now.timestamp(), d.message, outcome.rejected_by)
            emit = changed or not retry
        if not emit:
            return
        ts = self.applier.ts
        out.append(DecisionRecord.of(d, ts, decision_id(pod, attempt), ev.position, attempt))
        self.stats.decisions.append(DecisionPoint(ts, ev.position, d.status, main_reason(d), pod.key))

    def _binding_stats(self, bindings: tuple[tuple[str, str], ...]) -> list[Binding]:
        out = []
        for claim_key, pv_name in bindings:
            pv, pvc = self.state.pvs.get(pv_name), self.state.pvcs.get(claim_key)
            if pv is not None and pvc is not None:
                out.append(
                    Binding(claim_key, pv_name, pv.storage_class, ceil_units(pvc.request or 0), ceil_units(pv.capacity))
                )
        return out

    def finish(self) -> RunStats:
        """Stats at the end of the run: bindings still standing and node utilization."""
        self.stats.bindings = [b for key in sorted(self._bindings) for b in self._bindings[key]]
        nodes = self.state.nodes
        cpu_req, cpu_alloc = nodes.requested(CPU), nodes.allocatable(CPU)
        mem_req, mem_alloc = nodes.requested(MEMORY), nodes.allocatable(MEMORY)
        self.stats.nodes = [
            NodeUse(name, int(cpu_req[s]), int(cpu_alloc[s]), int(mem_req[s]), int(mem_alloc[s]))
            for name, s in sorted(nodes.slot.items())
        ]
        return self.stats
