"""Property: RetryQueue.helped (hints made when a group first asks for them, groups a change helps
none of passed over) retries and marks due exactly the pods a plain scan does, pod by pod, with
kube's queueing-hint rule: a pod is helped unless every plugin that rejected it and registered the
change has a hint that says no."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from berth.core.api.core.model import Pod
from berth.core.api.kinds import convert
from berth.core.cache.state import ClusterState
from berth.core.framework.events import Action, ClusterEvent, Hint, never
from berth.core.framework.runtime.profile import Interest
from berth.core.framework.types import Mask
from berth.core.scheduler.queue import RetryQueue
from tests.builders import pod as raw_pod

PLUGINS = ("A", "B", "C", "D")
NOW = 5.0

# per plugin: not interested, interested with no hint, or a hint: never, or helps the pods whose
# name is in the set
hint_st = st.one_of(st.none(), st.just("nohint"), st.just("never"), st.frozensets(st.integers(0, 11)))
pod_st = st.tuples(
    st.frozensets(st.sampled_from(PLUGINS), max_size=3),  # rejected by
    st.integers(1, 4),  # failed attempts (backoff 1, 2, 4, 8 s from its failure time)
    st.sampled_from([0.0, 1.0, 3.0, 4.5]),  # when it last failed
)


@dataclass
class _Profile:
    state: ClusterState
    interests: tuple[Interest, ...]

    def interested(self, resource: str, action: Action) -> tuple[Interest, ...]:
        return tuple(i for i in self.interests if i.event.matches(resource, action))


def _factory(answer: Any) -> Any:
    def make(state: ClusterState, obj: Any, now: datetime) -> Hint:
        if answer == "never":
            return never

        def hint(pods: list[Pod | None], version: int | None) -> Mask:
            return np.array([p is None or int(p.name[1:]) in answer for p in pods], dtype=bool)

        return hint

    return make


def _oracle(q: RetryQueue, plugins: dict[str, Any], clock: bool) -> tuple[list[str], set[str]]:
    """Pod by pod: (the pods taken, in failure order; the pods marked due)."""
    interested = {name for name, a in plugins.items() if a is not None}
    taken, marked = [], set()
    for w in sorted(q.pods.values(), key=lambda w: w.seq):
        if w.rejected_by and not (w.rejected_by & interested):
            continue
        cares = w.rejected_by & interested
        if any(plugins[n] == "nohint" for n in cares) or not cares:
            helped = True
        else:
            pod_no = int(w.key.split("/p")[1])
            helped = any(plugins[n] != "never" and pod_no in plugins[n] for n in cares)
        if not helped:
            continue
        if not clock or w.eligible_at <= NOW:
            taken.append(w.key)
        elif not w.due:
            marked.add(w.key)
    return taken, marked


@settings(max_examples=300, deadline=None)
@given(
    pods=st.lists(pod_st, min_size=1, max_size=12),
    hints=st.fixed_dictionaries({p: hint_st for p in PLUGINS}),
    due=st.frozensets(st.integers(0, 11)),
    clock=st.booleans(),
)
def test_helped_is_the_plain_scan(
    pods: list[tuple[frozenset[str], int, float]], hints: dict[str, Any], due: frozenset[int], clock: bool
) -> None:
    state = ClusterState()
    interests = tuple(
        Interest(name, ClusterEvent("Node", Action.ALL), None if a == "nohint" else _factory(a))
        for name, a in hints.items()
        if a is not None
    )
    q = RetryQueue(_Profile(state, interests))  # type: ignore[arg-type]
    for i in range(len(pods)):
        state.apply(convert(raw_pod(f"p{i}")))
    for i, (rejected, attempts, at) in enumerate(pods):
        for _ in range(attempts):
            q.failed(f"default/p{i}", at, "no", rejected)
    for i in due:  # some already marked by an earlier change (their backoff not over)
        w = q.pods.get(f"default/p{i}")
        if w is not None and w.eligible_at > NOW:
            w.due = True
    before = {k: w.due for k, w in q.pods.items()}
    want, marked = _oracle(q, hints, clock)
    now = datetime.fromtimestamp(NOW, UTC)
    got = q.helped("Node", Action.UPDATE, object(), now, clock)
    assert got == want
    assert {k for k, w in q.pods.items() if w.due and not before[k]} == marked


def test_a_plugin_that_cares_but_has_no_hint_retries_the_whole_group() -> None:
    """Not only the hinted plugins decide: B cares about the change and has no hint, so A's no
    is not enough (the plain scan's rule, as a table row the property may take long to find)."""
    state = ClusterState()
    interests = (
        Interest("A", ClusterEvent("Node", Action.ALL), _factory("never")),
        Interest("B", ClusterEvent("Node", Action.ALL), None),
    )
    q = RetryQueue(_Profile(state, interests))  # type: ignore[arg-type]
    q.failed("default/p0", 0.0, "no", frozenset({"A", "B"}))
    q.failed("default/p1", 0.0, "no", frozenset({"A"}))
    now = datetime.fromtimestamp(NOW, UTC)
    assert q.helped("Node", Action.UPDATE, object(), now, True) == ["default/p0"]
