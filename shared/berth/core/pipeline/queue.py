"""Pods that could not be placed yet, retried on relevant changes with backoff, as kube-scheduler does.

Backoff doubles from 1 s to at most 10 s of log time per failed attempt (kube's podInitialBackoffSeconds
and podMaxBackoffSeconds). A pod becomes eligible again when its backoff has passed and a change
arrives that can undo what rejected it (kube's queueing hints: each plugin names the kinds whose
changes matter to it). Logs without timestamps have no clock: there every relevant change retries.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

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


class Group:
    """The waiting pods that the same plugins rejected; `version` changes with its members."""

    def __init__(self, rejected: frozenset[str]) -> None:
        self.rejected = rejected
        self.members: dict[str, Waiting] = {}
        self.version = 0
        self._snap: tuple[int, list[Waiting], npt.NDArray[np.float64]] | None = None

    def snapshot(self) -> tuple[list[Waiting], npt.NDArray[np.float64]]:
        """Members in a fixed order and their eligible_at, rebuilt only when the members changed."""
        if self._snap is None or self._snap[0] != self.version:
            waiting = list(self.members.values())
            self._snap = (self.version, waiting, np.array([w.eligible_at for w in waiting], dtype=np.float64))
        return self._snap[1], self._snap[2]


class UnschedulableQueue:
    def __init__(self, initial: float = INITIAL_BACKOFF, maximum: float = MAX_BACKOFF) -> None:
        self.initial = initial
        self.maximum = maximum
        self.pods: dict[str, Waiting] = {}
        self._groups: dict[frozenset[str], Group] = {}  # by the plugins that rejected them
        self._versions = itertools.count(1)  # one counter for all groups: a version names one member list
        self._seq = 0

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
        judge: Callable[[Group, list[Waiting]], npt.NDArray[np.bool_] | None] | None = None,
    ) -> list[str]:
        """Pods whose backoff is over and whose rejecting plugins `helps` names (None: any), in the
        order they first failed. judge(group, members): which members the change can help (the
        plugins' queueing hints, over a whole group at once), or None for all of them."""
        found: list[Waiting] = []
        for rejected, group in self._groups.items():
            if rejected and helps is not None and rejected.isdisjoint(helps):
                continue
            members, at = group.snapshot()
            ok = at <= now if has_clock else np.ones(len(members), dtype=bool)
            if judge is not None and rejected and ok.any():
                helped = judge(group, members)
                if helped is not None:
                    ok &= helped
            found += [members[i] for i in np.flatnonzero(ok).tolist()]
        found.sort(key=lambda w: w.seq)
        return [w.key for w in found]
