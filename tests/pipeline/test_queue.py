"""The retry queue: backoff, queueing-hint judgement, and changes kept for pods still backing off."""

from __future__ import annotations

import numpy as np
import pytest

from berth.core.scheduler.queue import Group, UnschedulableQueue, Waiting

VB, LA = "VolumeBinding", "LoadAwareScheduling"


def failed(q: UnschedulableQueue, *keys: str, at: float = 0.0, by: frozenset[str] = frozenset({VB})) -> None:
    for k in keys:
        q.failed(k, at, "no", by)


@pytest.mark.parametrize(
    ("attempts", "eligible_at"),
    [(1, 1.0), (2, 2.0), (3, 4.0), (4, 8.0), (5, 10.0), (9, 10.0)],
)
def test_backoff_doubles_up_to_ten_seconds(attempts: int, eligible_at: float) -> None:
    q = UnschedulableQueue()
    for _ in range(attempts):
        failed(q, "p")
    assert q.pods["p"].eligible_at == eligible_at


def test_a_change_during_backoff_makes_the_pod_due_once_its_backoff_is_over() -> None:
    q = UnschedulableQueue()
    failed(q, "a", "b")
    assert q.eligible(0.5, True, frozenset({VB})) == []
    assert q.take_due(0.9) == []
    assert q.take_due(1.0) == ["a", "b"]
    assert q.take_due(5.0) == [] and not q.has_due


def test_a_change_for_other_plugins_or_without_a_clock_marks_nothing() -> None:
    q = UnschedulableQueue()
    failed(q, "a")
    assert q.eligible(0.5, True, frozenset({LA})) == []
    assert not q.has_due
    assert q.eligible(0.5, False, frozenset({VB})) == ["a"]  # no clock: no backoff at all
    assert not q.has_due


def test_the_hint_decides_which_backing_off_pods_become_due() -> None:
    q = UnschedulableQueue()
    failed(q, "a", "b", by=frozenset({LA}))

    def only_b(group: Group, members: list[Waiting]) -> np.ndarray:
        return np.array([w.key == "b" for w in members])

    assert q.eligible(0.5, True, frozenset({LA}), only_b) == []
    assert q.take_due(1.0) == ["b"]


def test_removed_or_failed_again_pods_are_not_taken() -> None:
    q = UnschedulableQueue()
    failed(q, "gone", "again", "kept")
    q.eligible(0.5, True, frozenset({VB}))
    q.remove("gone")
    failed(q, "again", at=0.6)  # a new attempt and backoff: the old mark is void
    assert q.take_due(10.0) == ["kept"]
    failed(q, "kept", at=10.0)  # as the engine does: the taken pod is retried, and fails again here
    assert q.eligible(0.7, True, frozenset({VB})) == []
    assert q.take_due(10.0) == ["again"]  # marked again by the change at 0.7


def test_marking_is_not_repeated_for_pods_already_due() -> None:
    q = UnschedulableQueue()
    failed(q, "a")
    for t in (0.1, 0.2, 0.3):
        q.eligible(t, True, frozenset({VB}))
    assert len(q._due) == 1
