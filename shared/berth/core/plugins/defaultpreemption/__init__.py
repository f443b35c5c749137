"""DefaultPreemption (PostFilter), as kube-scheduler's defaultpreemption plugin and preemption evaluator.

When no node fits a pod, find a node where evicting lower-priority pods makes room: the eligibility
checks, a dry run on each node whose status is Unschedulable (remove every lower-priority pod,
then add back, most important first, each pod that still lets the preemptor fit, PDB-violating
ones before the others), and pickOneNodeForPreemption's order to choose among the candidates.

The dry run reuses this profile's PreFilter and Filter (`dry_run`), with the pods taken off the
ClusterState for the call (`ClusterState.lift` / `put_back`): every plugin that keeps state of its
own (InterPodAffinity, PodTopologySpread, NodePorts, ...) follows through its pod_changed, as
kube's PreFilterExtensions RemovePod / AddPod do. When every filter is removal-safe for the pod
(node-local ones always; PodTopologySpread and VolumeRestrictions always; InterPodAffinity unless
the pod has required pod affinity), a node that only the node fit (NodeResourcesFit) rejected is
dry-run by arithmetic on its free amounts instead: every other filter passed it with all the pods
in place and still does with fewer (`_by_amounts`).

Where kube is random berth is deterministic (docs/plugins.md, DefaultPreemption):
- the dry run starts at offset crc32(pod's namespace/name) mod the number of potential nodes, the
  potential nodes being in node-name order (kube: rand.Int31n), and runs one node after another;
- victims of equal priority and start time are ordered by namespace/name;
- candidates still tied after the start-time criterion go to the smallest node name.
"""

from __future__ import annotations

import zlib
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from itertools import compress
from typing import Any

import numpy as np
import numpy.typing as npt

from berth.core import framework as fwk
from berth.core.api.core.model import Pod
from berth.core.api.scheduling.model import NEVER, PodDisruptionBudget
from berth.core.cache.extension import StateExtension
from berth.core.cache.state import ClusterState
from berth.core.plugins.defaultpreemption.args import DefaultPreemptionArgs

NAME = "DefaultPreemption"
Args = DefaultPreemptionArgs

NO_VICTIMS = "No preemption victims found for incoming pod"
NOT_HELPFUL = "Preemption is not helpful for scheduling"
NOT_ELIGIBLE_NEVER = "not eligible due to preemptionPolicy=Never."
NOT_ELIGIBLE_TERMINATING = "not eligible due to a terminating pod on the nominated node."
DISRUPTION_TARGET = "DisruptionTarget"
PREEMPTION_BY_SCHEDULER = "PreemptionByScheduler"
_SHIFT = 2**31  # pickOneNodeForPreemption sums priorities shifted to be non-negative
KEPT = 8  # Verdicts kept, for as many (priority, wants) of preemptors, the least recently used dropped
TOUCHES = 4096  # past this many node touches since, Verdicts start again
KEYS_KEPT = 65536  # candidates whose keys are kept, at most


class PreemptionStore(StateExtension):
    """PodDisruptionBudgets and the pods on each node (a ClusterState extension)."""

    kinds: tuple[type, ...] = (PodDisruptionBudget,)
    assigned_only = True

    def __init__(self) -> None:
        self.pdbs: dict[str, PodDisruptionBudget] = {}
        self.pods_on: dict[str, dict[str, Pod]] = {}
        self._placed: dict[str, str] = {}  # pod key -> node
        # what the placed pods' priorities come from, (spec.priority, priorityClassName), and how many
        # pods each: the lowest priority on any node without a pass over the pods
        self._sources: Counter[tuple[int | None, str]] = Counter()

    def apply(self, state: ClusterState, obj: Any, deleted: bool) -> None:
        if deleted:
            self.pdbs.pop(obj.key, None)
        else:
            self.pdbs[obj.key] = obj

    def pod_changed(self, state: ClusterState, old: Pod | None, new: Pod | None) -> None:
        key = (new or old).key  # type: ignore[union-attr]
        prev = self._placed.pop(key, None)
        if prev is not None:
            gone = self.pods_on[prev].pop(key, None)
            if (
                gone is not None
                and new is not None
                and new.node_name == prev
                and not new.terminated
                and gone.priority == new.priority
                and gone.priority_class_name == new.priority_class_name
            ):  # its priority's source counted already: only the pod object is replaced
                self._placed[key] = prev
                self.pods_on[prev][key] = new
                return
            if gone is not None:
                source = (gone.priority, gone.priority_class_name)
                self._sources[source] -= 1
                if not self._sources[source]:
                    del self._sources[source]
        if new is not None and new.node_name and not new.terminated:
            self._placed[key] = new.node_name
            self.pods_on.setdefault(new.node_name, {})[key] = new
            self._sources[(new.priority, new.priority_class_name)] += 1

    def lowest(self, priority: Callable[[Pod], int]) -> int | None:
        """The lowest priority of a pod on a node (None: no pod is on a node), as priority resolves
        it now (ClusterState.priority)."""
        return min((priority(Pod("", "", priority=p, priority_class_name=c)) for p, c in self._sources), default=None)


@dataclass(frozen=True)
class Candidate:
    node: str
    victims: tuple[Pod, ...]  # most important first
    pdb_violations: int


@dataclass(frozen=True)
class Room:
    """For the dry run by arithmetic: the slots it may judge, what the node fit checks (resource,
    wanted) and, per checked resource, allocatable - requested on every slot now."""

    judged: fwk.Mask
    wants: list[tuple[str, int]]
    free: list[npt.NDArray[np.int64]]
    reason: Callable[[str], str]
    safe: bool  # the filters are removal-safe for the pod whatever leaves; else asked per node
    statuses: fwk.NodeToStatus
    fit: str  # the node fit's plugin name
    nominated: frozenset[int]  # slots with nominated pods: the dry run proper
    added: dict[int, dict[str, int]]  # slots with nominated pods taken by amounts: what they request

    def blocked(self, slot: int) -> tuple[fwk.Code, tuple[str, ...]] | None:
        """On a node the node fit rejects first, the next plugin's status there when all its failures
        are UnschedulableAndUnresolvable: it stays as pods leave (where removal-safe), so the node
        can be judged by amounts too; None otherwise."""
        if slot in self.nominated:
            return None
        failing = self.statuses.failing(slot)
        if len(failing) < 2 or failing[0][0] != self.fit:
            return None
        hits = failing[1][1]
        if any(f.code is not fwk.Code.UNRESOLVABLE for f in hits):
            return None
        return fwk.Code.UNRESOLVABLE, tuple(f.reason for f in hits)


@dataclass(frozen=True)
class Rejected:
    """A node the dry run could not make fit: its status there."""

    code: fwk.Code
    reasons: tuple[str, ...]


class Verdicts:
    """Dry-run verdicts by amounts on nodes only the node fit rejected, for preemptors of one priority
    and one set of wants, kept while their nodes stay untouched (ClusterState.touched_since). A
    verdict reads the node's pods and free amounts, the nominated pods' requests taken there, and
    `now` where it ranked pods with and without a start time; nothing else of the preemptor."""

    def __init__(self, state: ClusterState) -> None:
        self.change, self.generation, self.priorities = state.changes, state.generation, state.priority_changes
        self._by_node: dict[str, tuple[Candidate | Rejected, dict[str, int] | None, datetime | None]] = {}

    def current(self, state: ClusterState) -> bool:
        """Bring up to date: forget the nodes touched since; False when that is no longer known."""
        if state.generation != self.generation or state.priority_changes != self.priorities:
            return False
        touched = state.touched_since(self.change, TOUCHES)
        if touched is None:
            return False
        names = state.nodes.names
        for slot in set(touched):
            name = names[slot] if slot < len(names) else None
            if name is not None:
                self._by_node.pop(name, None)
        self.change = state.changes
        return True

    def get(self, node: str, added: dict[str, int] | None, now: datetime) -> Candidate | Rejected | None:
        kept = self._by_node.get(node)
        if kept is None or kept[1] != added or (kept[2] is not None and kept[2] != now):
            return None
        return kept[0]

    def put(
        self, node: str, verdict: Candidate | Rejected, added: dict[str, int] | None, pods: list[Pod], now: datetime
    ) -> None:
        started = [p.start_time is not None for p in pods]
        self._by_node[node] = (verdict, added, now if any(started) and not all(started) else None)


def offset_of(pod: Pod, n: int) -> int:
    """Where the dry run starts among n potential nodes: deterministic, spread by the pod's name."""
    return zlib.crc32(pod.key.encode()) % n


class DefaultPreemption:
    name = NAME

    def __init__(self, args: DefaultPreemptionArgs, handle: ClusterState) -> None:
        self.args = args
        self.state = handle
        self.store = PreemptionStore()
        self.offset: Callable[[Pod, int], int] = offset_of
        self._verdicts: dict[tuple[int, tuple[tuple[str, int], ...]], Verdicts] = {}  # see _kept
        self._kept_keys: dict[int, tuple[Candidate, Keys]] = {}  # see _keys
        self._keys_at: tuple[datetime, int] | None = None

    def extension(self) -> PreemptionStore:
        return self.store

    # ---- PostFilter ------------------------------------------------------------------------------
    def post_filter(self, cycle: fwk.Cycle, statuses: fwk.NodeToStatus, dry_run: fwk.DryRun) -> fwk.PostFilterResult:
        pod = cycle.pod
        eligible, why = self.eligible(pod, statuses, dry_run.nominated_node(pod))
        if not eligible:
            return fwk.PostFilterResult(fwk.Status(fwk.Code.UNSCHEDULABLE, f"preemption: {why}", NAME))
        nodes = self.state.nodes
        if not len(nodes):
            return fwk.PostFilterResult(fwk.Status(fwk.Code.UNSCHEDULABLE, "", NAME))  # kube fails before PostFilter
        counts: dict[str, int] = {}
        if self.no_lower_priority(pod):  # every potential node's dry run would find no victims
            tried = int(np.count_nonzero(statuses.rejected(fwk.Code.UNSCHEDULABLE)))
            candidates: list[Candidate] = []
            if tried:
                counts[NO_VICTIMS] = tried
        else:
            candidates, rejected = self.find_candidates(cycle, statuses, dry_run)
            tried = len(rejected)
            for r in rejected.values():
                for reason in r.reasons:
                    counts[reason] = counts.get(reason, 0) + 1
        if not candidates:
            others = len(nodes) - tried
            if others:
                counts[NOT_HELPFUL] = counts.get(NOT_HELPFUL, 0) + others
            message = f"preemption: {fwk.fit_error(len(nodes), counts)}"
            return fwk.PostFilterResult(fwk.Status(fwk.Code.UNSCHEDULABLE, message, NAME), nominated_node="")
        best = select(candidates, self._keys(cycle.now))
        return fwk.PostFilterResult(
            fwk.Status(fwk.Code.SUCCESS, "", NAME), nominated_node=best.node, victims=tuple(p.key for p in best.victims)
        )

    # ---- eligibility (PodEligibleToPreemptOthers) ----------------------------------------------
    def eligible(self, pod: Pod, statuses: fwk.NodeToStatus | None, nominated: str | None = None) -> tuple[bool, str]:
        """nominated: the pod's nominated node as kube's latest object of it says (None: the pod's own)."""
        if self.state.preemption_policy(pod) == NEVER:
            return False, NOT_ELIGIBLE_NEVER
        if nominated is None:
            nominated = pod.nominated_node
        if not nominated:
            return True, ""
        status = None if statuses is None else statuses.get(nominated)
        if status is not None and status.code is fwk.Code.UNRESOLVABLE:
            return True, ""
        mine = self.state.priority(pod)
        for other in self.store.pods_on.get(nominated, {}).values():
            if other.deleting and self.state.priority(other) < mine and _preempted(other):
                return False, NOT_ELIGIBLE_TERMINATING
        return True, ""

    # ---- candidates ----------------------------------------------------------------------------
    def no_lower_priority(self, pod: Pod) -> bool:
        """No pod on any node has a lower priority than this one (a cluster without PriorityClasses):
        then the dry run of every node ends in kube's "No preemption victims found"."""
        lowest = self.store.lowest(self.state.priority)
        return lowest is None or lowest >= self.state.priority(pod)

    def candidate_count(self, potential: int) -> int:
        """kube's calculateNumCandidates."""
        n = potential * self.args.min_candidate_nodes_percentage // 100
        n = max(n, self.args.min_candidate_nodes_absolute)
        return min(n, potential)

    def find_candidates(
        self, cycle: fwk.Cycle, statuses: fwk.NodeToStatus, dry_run: fwk.DryRun
    ) -> tuple[list[Candidate], dict[str, Rejected]]:
        """The dry run from the offset over the potential nodes (status Unschedulable), in order,
        until there is a non-violating candidate and numCandidates in all. Returns the candidates
        (non-violating first) and the status of every dry-run node that is not one. The nodes are
        taken as many at a time as candidates are still wanted (numCandidates at a time with node-local
        filters); each node's verdict is its own, so the outcome is the same as one after another."""
        slots, names = self.state.nodes.by_name()
        potential = list(compress(names, statuses.rejected(fwk.Code.UNSCHEDULABLE)[slots].tolist()))
        if not potential:
            return [], {}
        wanted = self.candidate_count(len(potential))
        start = self.offset(cycle.pod, len(potential))
        order = potential[start:] + potential[:start]
        pdbs = list(self.store.pdbs.values())
        room = self._room(cycle, statuses, dry_run)
        clean: list[Candidate] = []
        violating: list[Candidate] = []
        rejected: dict[str, Rejected] = {}
        i = 0
        while i < len(order):
            # never a node past the one where the search ends: each adds one candidate at most
            size = wanted if dry_run.node_local else max(1, wanted - len(clean) - len(violating))
            batch, i = order[i : i + size], i + size
            results = self.victims_on(cycle, batch, dry_run, pdbs, room)
            for node in batch:
                found = results[node]
                if isinstance(found, Rejected):
                    rejected[node] = found
                    continue
                group = violating if found.pdb_violations else clean
                if len(group) < wanted:
                    group.append(found)
                if clean and len(clean) + len(violating) >= wanted:
                    return clean + violating, rejected
        return clean + violating, rejected

    def _room(self, cycle: fwk.Cycle, statuses: fwk.NodeToStatus, dry_run: fwk.DryRun) -> Room | None:
        """Where the dry run can be done by arithmetic: on the nodes that only the node fit
        (NodeResourcesFit) rejected, where the filters are removal-safe for this pod (dry_run.removal_safe,
        for the pod, else for the node's lower-priority pods). Every other filter passed there with all
        the pods in place, and still passes when those pods leave it."""
        fit = dry_run.node_fit
        if fit is None:
            return None
        nodes = self.state.nodes
        wants = fit.wants(cycle.pod)
        free = [nodes.allocatable(name) - nodes.requested(name) for name, _ in wants]
        judged = statuses.only(fit.name)
        nominated = set()
        taken: dict[int, dict[str, int]] = {}
        whole = dry_run.nominated_columns(cycle)
        slot_of = nodes.slot.get
        if whole is not None:  # every node's nominated pods taken by amounts, as columns
            every, rows, by_name = whole
            taken = {slot: added for node, added in every.items() if (slot := slot_of(node)) is not None}
            at = np.fromiter((slot_of(node, -1) for node in rows), dtype=np.int64, count=len(rows))
            known = at >= 0
            for col, (name, _) in zip(free, wants, strict=True):
                if name in by_name:
                    col[at[known]] -= by_name[name][known]
        else:
            amounts = dry_run.nominated_amounts(cycle)
            for node in dry_run.nominated(cycle.pod):
                slot = slot_of(node)
                if slot is None:
                    continue
                added = None if amounts is None else amounts.get(node)
                if added is not None:  # the node fit alone reads them: their requests are taken too
                    taken[slot] = added
                    continue
                judged[slot] = False  # the dry run proper
                nominated.add(slot)
            if taken:
                slots = np.fromiter(taken, dtype=np.int64, count=len(taken))
                for col, (name, _) in zip(free, wants, strict=True):
                    got = np.fromiter((a.get(name, 0) for a in taken.values()), dtype=np.int64, count=len(taken))
                    col[slots] -= got
        safe = dry_run.removal_safe(cycle)
        return Room(judged, wants, free, fit.reason, safe, statuses, fit.name, frozenset(nominated), taken)

    def victims_on(
        self,
        cycle: fwk.Cycle,
        nodes: list[str],
        dry_run: fwk.DryRun,
        pdbs: list[PodDisruptionBudget],
        room: Room | None = None,
    ) -> dict[str, Candidate | Rejected]:
        """kube's SelectVictimsOnNode on each of these nodes: by arithmetic where `room` allows, else
        on the ClusterState with pods lifted for the call (_dry_run_proper), each node alone unless the
        filters are node-local."""
        key = importance(cycle.now, self.state.priority)
        priority = self.state.priority
        mine = priority(cycle.pod)
        now = cycle.now.timestamp()
        out: dict[str, Candidate | Rejected] = {}
        lower: dict[str, list[Pod]] = {}
        slot_of = self.state.nodes.slot
        kept = self._kept(cycle, room, pdbs)
        for node in nodes:
            if kept is not None and room is not None and room.judged[slot_of[node]]:
                verdict = kept.get(node, room.added.get(slot_of[node]), cycle.now)
                if verdict is not None:
                    out[node] = verdict
                    continue
            ranked = []  # importance(...) of each lower-priority pod, decorated (its namespace/name is unique)
            for k, p in self.store.pods_on.get(node, {}).items():
                prio = priority(p)
                if prio < mine:
                    ranked.append((-prio, now if p.start_time is None else p.start_time.timestamp(), k, p))
            if not ranked:
                out[node] = Rejected(fwk.Code.UNRESOLVABLE, (NO_VICTIMS,))
                continue
            ranked.sort(key=lambda r: r[:3])
            pods = [r[3] for r in ranked]
            judged = None
            if room is not None:
                slot = slot_of[node]
                blocked = None if room.judged[slot] else room.blocked(slot)
                if (room.judged[slot] or blocked is not None) and (room.safe or dry_run.removal_safe(cycle, pods)):
                    judged = self._by_amounts(node, [r[2] for r in ranked], pods, room, pdbs, blocked)
                    if kept is not None and judged is not None and room.judged[slot]:
                        kept.put(node, judged, room.added.get(slot), pods, cycle.now)
            if judged is None:
                lower[node] = pods
            else:
                out[node] = judged
        groups = [lower] if dry_run.node_local else [{node: pods} for node, pods in lower.items()]
        for group in groups:
            if group:
                out.update(self._dry_run_proper(cycle, group, dry_run, pdbs, key))
        return out

    def _dry_run_proper(
        self,
        cycle: fwk.Cycle,
        lower: dict[str, list[Pod]],
        dry_run: fwk.DryRun,
        pdbs: list[PodDisruptionBudget],
        key: Callable[[Pod], tuple[int, float, str]],
    ) -> dict[str, Candidate | Rejected]:
        """SelectVictimsOnNode on the ClusterState, on these nodes at once (lower: each node's
        lower-priority pods, most important first): every pod lifted, then each step puts back the
        next pod of every node and keeps it where the pod still fits."""
        out: dict[str, Candidate | Rejected] = {}
        slots = {node: self.state.nodes.slot[node] for node in lower}
        with self._lifted([p for pods in lower.values() for p in pods]):
            feasible, found = dry_run(cycle, lower)  # only these nodes' answers are read
            queues: dict[str, list[tuple[Pod, bool]]] = {}
            for node, pods in lower.items():
                if not feasible[slots[node]]:
                    status = found.get(node)
                    out[node] = (
                        Rejected(status.code, status.reasons) if status else Rejected(fwk.Code.UNSCHEDULABLE, ())
                    )
                    continue
                bad, good = split_by_pdb(pods, pdbs)
                queues[node] = [(p, True) for p in bad] + [(p, False) for p in good]
            victims: dict[str, list[Pod]] = {node: [] for node in queues}
            violations = dict.fromkeys(queues, 0)
            for step in range(max((len(q) for q in queues.values()), default=0)):
                trying = [(node, q[step]) for node, q in queues.items() if step < len(q)]
                for _, (pod, _) in trying:
                    self.state.put_back(pod)
                fits, _ = dry_run(cycle, lower)
                for node, (pod, violates) in trying:
                    if not fits[slots[node]]:
                        self.state.lift(pod.key)
                        victims[node].append(pod)
                        violations[node] += violates
        for node, queue in queues.items():
            chosen = victims[node]
            if not chosen:
                out[node] = Rejected(fwk.Code.ERROR, (f'expected at least one victim pod on node "{node}"',))
                continue
            if queue[0][1] and not queue[-1][1]:  # violating and non-violating: back in importance order
                chosen.sort(key=key)
            out[node] = Candidate(node, tuple(chosen), violations[node])
        return out

    def _keys(self, now: datetime) -> Callable[[Candidate], Keys]:
        """candidate_keys, kept per candidate for this `now` and these PriorityClasses: Verdicts give
        the next preemptor the same candidates."""
        if self._keys_at != (now, self.state.priority_changes):
            self._kept_keys, self._keys_at = {}, (now, self.state.priority_changes)
        kept, priority = self._kept_keys, self.state.priority

        def keys(c: Candidate) -> Keys:
            got = kept.get(id(c))
            if got is None or got[0] is not c:  # the candidate is held, so its id is not reused
                if len(kept) >= KEYS_KEPT:
                    kept.clear()
                got = kept[id(c)] = (c, candidate_keys(c, now, priority))
            return got[1]

        return keys

    def _kept(self, cycle: fwk.Cycle, room: Room | None, pdbs: list[PodDisruptionBudget]) -> Verdicts | None:
        """The verdicts by amounts kept for pods of this priority and these wants, up to date with the
        state (the nodes touched since left out); None where none are kept: PDBs (their budgets
        change without a node changing) or filters not removal-safe for the pod."""
        if room is None or not room.safe or pdbs:
            return None
        key = (self.state.priority(cycle.pod), tuple(room.wants))
        kept = self._verdicts.pop(key, None)
        if kept is None or not kept.current(self.state):
            kept = Verdicts(self.state)
        self._verdicts[key] = kept  # the most recently used last
        while len(self._verdicts) > KEPT:
            del self._verdicts[next(iter(self._verdicts))]
        return kept

    def _by_amounts(
        self,
        node: str,
        keys: list[str],
        pods: list[Pod],
        room: Room,
        pdbs: list[PodDisruptionBudget],
        blocked: tuple[fwk.Code, tuple[str, ...]] | None = None,
    ) -> Candidate | Rejected | None:
        """The dry run on one node by its free amounts, with the same order and outcome; None when a
        pod's requests are not counted on this node (the dry run proper decides then). pods: the
        lower-priority ones, most important first; keys: their namespace/names; blocked: the status of
        the next filter on a node the node fit rejects first (Room.blocked)."""
        slot = self.state.nodes.slot[node]
        names = [name for name, _ in room.wants]
        amounts: list[list[int]] = []
        for k in keys:
            counted = self.state.usage_of(k)
            if counted is None or counted[0] != node:
                return None
            on = counted[1]
            amounts.append([on.get(name, 0) for name in names])
        # slack: what is left of each checked resource with every lower-priority pod gone, beyond
        # what the pod wants; it fits while no slack is negative
        slack = [int(col[slot]) - want for col, (_, want) in zip(room.free, room.wants, strict=True)]
        for a in amounts:
            slack = [s + x for s, x in zip(slack, a, strict=True)]
        if min(slack) < 0:
            return Rejected(
                fwk.Code.UNSCHEDULABLE, tuple(room.reason(n) for n, s in zip(names, slack, strict=True) if s < 0)
            )
        if blocked is not None:  # the node fit passes with them all gone; the next filter still fails
            return Rejected(*blocked)
        flags = violates_pdb(pods, pdbs)
        order = [i for i, v in enumerate(flags) if v] + [i for i, v in enumerate(flags) if not v]
        chosen: list[int] = []
        for i in order:
            after = [s - x for s, x in zip(slack, amounts[i], strict=True)]
            if min(after) >= 0:
                slack = after
            else:
                chosen.append(i)
        if not chosen:
            return Rejected(fwk.Code.ERROR, (f'expected at least one victim pod on node "{node}"',))
        if any(flags) and not all(flags):  # violating and non-violating: back in importance order
            chosen.sort()
        return Candidate(node, tuple(pods[i] for i in chosen), sum(flags[i] for i in chosen))

    @contextmanager
    def _lifted(self, pods: list[Pod]) -> Iterator[None]:
        """The pods off the state for the call; whichever are still off come back afterwards."""
        for p in pods:
            self.state.lift(p.key)
        try:
            yield
        finally:
            for p in pods:
                if p.key not in self.state.pods:
                    self.state.put_back(p)


def _preempted(pod: Pod) -> bool:
    """Terminating because the scheduler preempted it: the first DisruptionTarget condition is True
    with reason PreemptionByScheduler."""
    cond = next((c for c in pod.conditions if c.type == DISRUPTION_TARGET), None)
    return cond is not None and cond.status == "True" and cond.reason == PREEMPTION_BY_SCHEDULER


def start_of(pod: Pod, now: datetime) -> datetime:
    """kube's GetPodStartTime: status.startTime, or now when unset."""
    return pod.start_time or now


def importance(now: datetime, priority: Callable[[Pod], int]) -> Callable[[Pod], tuple[int, float, str]]:
    """Sort key, most important first (kube's MoreImportantPod): higher priority, then earlier start,
    then namespace/name (berth's tie-break)."""
    return lambda p: (-priority(p), start_of(p, now).timestamp(), p.key)


def split_by_pdb(pods: list[Pod], pdbs: list[PodDisruptionBudget]) -> tuple[list[Pod], list[Pod]]:
    """kube's filterPodsWithPDBViolation: (violating, non-violating), each in the given order."""
    flags = violates_pdb(pods, pdbs)
    return [p for p, v in zip(pods, flags, strict=True) if v], [p for p, v in zip(pods, flags, strict=True) if not v]


def violates_pdb(pods: list[Pod], pdbs: list[PodDisruptionBudget]) -> list[bool]:
    """Whether evicting each pod, in the given order, breaks a PDB. The budgets
    (status.disruptionsAllowed) are fresh for each call; a pod named in a PDB's disruptedPods does
    not use it up."""
    if not pdbs:
        return [False] * len(pods)
    allowed = [pdb.disruptions_allowed for pdb in pdbs]
    out = []
    for pod in pods:
        hit = False
        for i, pdb in enumerate(pdbs):
            if not pdb.covers(pod) or pod.name in pdb.disrupted_pods:
                continue
            allowed[i] -= 1
            if allowed[i] < 0:
                hit = True
        out.append(hit)
    return out


# pickOneNodeForPreemption's criteria for a candidate, each smaller first
Keys = tuple[int, int, int, int, float]


def candidate_keys(c: Candidate, now: datetime, priority: Callable[[Pod], int]) -> Keys:
    """PDB violations, the highest victim priority, the sum of the victims' priorities (shifted),
    their number, and the latest earliest start among the highest-priority victims (negated)."""
    prios = [priority(p) for p in c.victims]
    top = prios[0] if prios else -(2**31)
    earliest = min(
        (start_of(p, now).timestamp() for p, q in zip(c.victims, prios, strict=True) if q == top), default=0.0
    )
    return c.pdb_violations, top, sum(q + _SHIFT for q in prios), len(prios), -earliest


def select(candidates: list[Candidate], keys: Callable[[Candidate], Keys]) -> Candidate:
    """kube's pickOneNodeForPreemption; ties after the start-time criterion go to the node name."""
    if len(candidates) == 1:
        return candidates[0]
    return min(candidates, key=lambda c: (*keys(c), c.node))  # criterion by criterion: one lexical order


def new(args: DefaultPreemptionArgs | None, handle: ClusterState) -> DefaultPreemption:
    return DefaultPreemption(args or DefaultPreemptionArgs(), handle)


__all__ = ["NAME", "Args", "DefaultPreemption", "candidate_keys", "new"]
