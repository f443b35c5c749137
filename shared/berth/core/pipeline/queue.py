"""Pods that could not be placed yet, retried on relevant changes with backoff, as kube-scheduler does.

Backoff doubles from 1 s to at most 10 s of log time per failed attempt (kube's podInitialBackoffSeconds
and podMaxBackoffSeconds). A pod becomes eligible again when its backoff has passed and a change
arrives that can undo what rejected it (kube's queueing hints: each plugin names the kinds whose
changes matter to it). Logs without timestamps have no clock: there every relevant change retries.
"""

from __future__ import annotations

from dataclasses import dataclass

INITIAL_BACKOFF = 1.0
MAX_BACKOFF = 10.0


@dataclass
class Waiting:
    key: str
    attempts: int
    eligible_at: float
    message: str
    rejected_by: frozenset[str] = frozenset()


class UnschedulableQueue:
    def __init__(self, initial: float = INITIAL_BACKOFF, maximum: float = MAX_BACKOFF) -> None:
        self.initial = initial
        self.maximum = maximum
        self.pods: dict[str, Waiting] = {}  # insertion order is retry order

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
        self.pods[key] = Waiting(key, attempts, now + backoff, message, rejected_by)
        return changed

    def attempts(self, key: str) -> int:
        w = self.pods.get(key)
        return 0 if w is None else w.attempts

    def remove(self, key: str) -> None:
        self.pods.pop(key, None)

    def eligible(self, now: float, has_clock: bool, helps: frozenset[str] | None = None) -> list[str]:
        """Pods whose backoff is over and whose rejecting plugins `helps` names (None: any)."""
        return [
            w.key
            for w in self.pods.values()
            if (not has_clock or w.eligible_at <= now)
            and (helps is None or not w.rejected_by or not helps.isdisjoint(w.rejected_by))
        ]
