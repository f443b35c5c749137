"""Pods that could not be placed yet, retried on relevant changes with backoff, as kube-scheduler does.

Backoff doubles from 1 s to at most 10 s of log time per failed attempt (kube's podInitialBackoffSeconds
and podMaxBackoffSeconds). A pod becomes eligible again when its backoff has passed and a change
arrives that can undo what rejected it (kube's queueing hints: each plugin names the kinds whose
changes matter to it). A change that helps a pod still in backoff is not lost: the pod is marked due
(kube moves it to the backoff queue) and retried at the first event once its backoff is over
(`take_due`). Logs without timestamps have no clock: there every relevant change retries.

`RetryQueue` adds what the scorer engine needs to retry: which plugins a change can help (their
EnqueueExtensions) and their queueing hints over each group of waiting pods.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
import numpy.typing as npt

from berth.core.api.core.model import Pod
from berth.core.framework.events import Action, Hint, never
from berth.core.framework.runtime.profile import Interest, Profile

INITIAL_BACKOFF = 1.0
MAX_BACKOFF = 10.0


@dataclass
class Waiting:
    key: str
    attempts: int
    eligible_at: float
    message: str
    rejected_by: frozenset[str] = frozenset()
    seq: int = 0  # when it first failed: retry order
    due: bool = False  # a change helped it during its backoff: retried once the backoff is over


class Snapshot:
    """A group's members in a fixed order, their eligible_at and whether they are due (updated in
    place as eligible() marks them), with the earliest eligible_at and how many are not marked due."""

    __slots__ = ("at", "due", "first", "members", "undue", "version")

    def __init__(self, version: int, members: list[Waiting]) -> None:
        self.version = version
        self.members = members
        at = [w.eligible_at for w in members]
        self.at = np.array(at, dtype=np.float64)
        self.due = np.fromiter((w.due for w in members), dtype=bool, count=len(members))
        self.first = min(at, default=math.inf)
        self.undue = len(members) - int(np.count_nonzero(self.due))


class Group:
    """The waiting pods that the same plugins rejected; `version` changes with its members."""

    def __init__(self, rejected: frozenset[str]) -> None:
        self.rejected = rejected
        self.members: dict[str, Waiting] = {}
        self.version = 0
        self._snap: Snapshot | None = None

    def snapshot(self) -> Snapshot:
        """Rebuilt only when the members changed."""
        if self._snap is None or self._snap.version != self.version:
            self._snap = Snapshot(self.version, list(self.members.values()))
        return self._snap


class UnschedulableQueue:
    def __init__(self, initial: float = INITIAL_BACKOFF, maximum: float = MAX_BACKOFF) -> None:
        self.initial = initial
        self.maximum = maximum
        self.pods: dict[str, Waiting] = {}
        self._groups: dict[frozenset[str], Group] = {}  # by the plugins that rejected them
        self._versions = itertools.count(1)  # one counter for all groups: a version names one member list
        self._seq = 0
        self._due: list[tuple[float, int, int, Waiting]] = []  # heap by eligible_at; stale entries skipped
        self._pushed = itertools.count()

    def __len__(self) -> int:
        return len(self.pods)

    def __contains__(self, key: str) -> bool:
        return key in self.pods

    def failed(self, key: str, now: float, message: str, rejected_by: frozenset[str] = frozenset()) -> bool:
        """Record a failed attempt. Returns True when the outcome changed (new pod or new message)."""
        w = self.pods.get(key)
        attempts = 1 if w is None else w.attempts + 1
        backoff = min(self.maximum, self.initial * 2 ** (attempts - 1))
        changed = w is None or w.message != message
        if w is None:
            self._seq += 1
        else:
            self._ungroup(w)
        new = Waiting(key, attempts, now + backoff, message, rejected_by, self._seq if w is None else w.seq)
        self.pods[key] = new
        group = self._groups.get(rejected_by)
        if group is None:
            group = self._groups[rejected_by] = Group(rejected_by)
        group.members[key] = new
        group.version = next(self._versions)
        return changed

    def attempts(self, key: str) -> int:
        w = self.pods.get(key)
        return 0 if w is None else w.attempts

    def rejected_by(self, key: str) -> frozenset[str]:
        w = self.pods.get(key)
        return frozenset() if w is None else w.rejected_by

    def remove(self, key: str) -> None:
        w = self.pods.pop(key, None)
        if w is not None:
            self._ungroup(w)

    def _ungroup(self, w: Waiting) -> None:
        group = self._groups[w.rejected_by]
        del group.members[w.key]
        group.version = next(self._versions)
        if not group.members:
            del self._groups[w.rejected_by]

    def eligible(
        self,
        now: float,
        has_clock: bool,
        helps: frozenset[str] | None = None,
        judge: Callable[[Group, list[Waiting]], npt.NDArray[np.bool_] | bool] | None = None,
    ) -> list[str]:
        """Pods whose backoff is over and whose rejecting plugins `helps` names (None: any), in the
        order they first failed. judge(group, members): which members the change can help (the
        plugins' queueing hints, over a whole group at once), True for all of them, False for none."""
        found: list[Waiting] = []
        for rejected, group in self._groups.items():
            if rejected and helps is not None and rejected.isdisjoint(helps):
                continue
            snap = group.snapshot()
            if has_clock and now < snap.first and not snap.undue:
                continue  # none eligible yet, and all already due: nothing to take or to mark
            # past that test some member is eligible or still to be marked, so the judge is asked
            helped: npt.NDArray[np.bool_] | bool = True
            if judge is not None and rejected:
                helped = judge(group, snap.members)
                if helped is False or (helped is not True and not helped.any()):
                    continue  # helps none of them: nothing to take or to mark
            members, due = snap.members, snap.due
            if has_clock:
                ok = snap.at <= now
                backing_off = ~ok & ~due  # already due: nothing more to note
            else:
                ok = np.ones(len(members), dtype=bool)
                backing_off = np.zeros(len(members), dtype=bool)
            if helped is not True:
                ok &= helped
                backing_off &= helped
            found += [members[i] for i in np.flatnonzero(ok).tolist()]
            for i in np.flatnonzero(backing_off).tolist():
                w = members[i]
                w.due = due[i] = True
                snap.undue -= 1
                heapq.heappush(self._due, (w.eligible_at, w.seq, next(self._pushed), w))
        found.sort(key=lambda w: w.seq)
        return [w.key for w in found]

    def take_due(self, now: float) -> list[str]:
        """Pods a change helped during their backoff, whose backoff is over now, in failure order.
        Each is taken once: it is retried, and a new failure starts a new backoff."""
        out: list[Waiting] = []
        while self._due and self._due[0][0] <= now:
            w = heapq.heappop(self._due)[3]
            if self.pods.get(w.key) is w and w.due:  # else removed or failed again since
                w.due = False
                out.append(w)
        out.sort(key=lambda w: w.seq)
        return [w.key for w in out]

    @property
    def has_due(self) -> bool:
        return bool(self._due)

    def next_due(self) -> float | None:
        """When the next pod a change helped is due (its eligible_at); None when none is."""
        while self._due:
            at, _, _, w = self._due[0]
            if self.pods.get(w.key) is w and w.due:
                return at
            heapq.heappop(self._due)  # removed or failed again since
        return None

    def saved(self) -> tuple[int, list[Waiting]]:
        """What restore() takes back: the failure counter and every waiting pod, in failure order."""
        return self._seq, sorted(self.pods.values(), key=lambda w: w.seq)

    def restore(self, seq: int, waiting: Iterable[Waiting]) -> None:
        """The queue as saved() left it (a restarted service's checkpoint)."""
        self._seq = seq
        for w in waiting:
            self.pods[w.key] = w
            group = self._groups.get(w.rejected_by)
            if group is None:
                group = self._groups[w.rejected_by] = Group(w.rejected_by)
            group.members[w.key] = w
            group.version = next(self._versions)
            if w.due:
                heapq.heappush(self._due, (w.eligible_at, w.seq, next(self._pushed), w))


class RetryQueue(UnschedulableQueue):
    """The unschedulable queue of one profile: a cluster change retries the waiting pods that the
    plugins which rejected them registered for (kube's EnqueueExtensions), as their hints allow."""

    def __init__(self, profile: Profile, initial: float = INITIAL_BACKOFF, maximum: float = MAX_BACKOFF) -> None:
        super().__init__(initial, maximum)
        self.profile = profile
        self.state = profile.state
        self._group_pods: dict[frozenset[str], tuple[int, list[Pod | None]]] = {}
        # (resource, action) -> the plugins interested, and those of them with a hint
        self._interests: dict[tuple[str, Action], tuple[frozenset[str], tuple[Interest, ...]]] = {}

    def _interest(self, resource: str, action: Action) -> tuple[frozenset[str], tuple[Interest, ...]]:
        """The plugins registered for this change, and those of them with a hint."""
        got = self._interests.get((resource, action))
        if got is None:
            interests = self.profile.interested(resource, action)
            got = (frozenset(i.plugin for i in interests), tuple(i for i in interests if i.hint is not None))
            self._interests[(resource, action)] = got
        return got

    def registered(self, resource: str, action: Action) -> bool:
        """Whether a plugin of the profile registered this change."""
        return bool(self._interest(resource, action)[0])

    def helped(self, resource: str, action: Action, obj: Any, now: datetime, has_clock: bool) -> list[str]:
        """Waiting pods this change can help whose backoff is over, in the order they first failed.
        Those still backing off are marked due (see take_due)."""
        helps, hinted = self._interest(resource, action)
        judge = None
        if hinted:
            factories = {i.plugin: i.hint for i in hinted}
            hints: dict[str, Hint] = {}  # each plugin's hint for this change, made when a group first asks

            def judge(group: Group, members: list[Waiting]) -> npt.NDArray[np.bool_] | bool:
                """kube's QueueingHint: retry unless every plugin that rejected the pod and cares about
                this change says it does not help. A plugin whose hint is `never` is passed over."""
                cares = group.rejected & helps
                if not cares <= factories.keys():
                    return True
                helped: npt.NDArray[np.bool_] | bool = False
                pods = None
                for name in cares:
                    hint = hints.get(name)
                    if hint is None:
                        factory = factories[name]
                        assert factory is not None
                        hint = hints[name] = factory(self.state, obj, now)
                    if hint is never:
                        continue
                    if pods is None:
                        pods = self._pods_of(group, members)
                    answer = hint(pods, group.version)
                    helped = answer if helped is False else helped | answer
                return helped

        return self.eligible(now.timestamp(), has_clock, helps, judge)

    def to_retry(self, keys: Iterable[str]) -> Iterator[Pod]:
        """The pods of these keys that still wait for a node; the others leave the queue."""
        for key in keys:
            pod = self.state.pods.get(key)
            if pod is None or not pod.pending or self.state.reserved(key) is not None:
                self.remove(key)
                continue
            yield pod

    def _pods_of(self, group: Group, members: list[Waiting]) -> list[Pod | None]:
        """The members' pods, kept per group version as the hints' own caches are: an update that
        leaves a waiting pod in its group does not change what the hints read (see the scorer's
        spec_changed)."""
        got = self._group_pods.get(group.rejected)
        if got is None or got[0] != group.version:
            got = (group.version, [self.state.pods.get(w.key) for w in members])
            self._group_pods[group.rejected] = got
        return got[1]
