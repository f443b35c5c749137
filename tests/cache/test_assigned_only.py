"""Extensions that say `assigned_only` are not told of pods on no node: their state is what it is
when every change is told (the plain path), whatever happens to the pods."""

from __future__ import annotations

import weakref
from typing import Any

import msgspec
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from berth.core.api.kinds import convert
from berth.core.cache.state import ClusterState, Reservation
from berth.core.config.kubeschedulerconfig import parse_config
from berth.core.pipeline.scorer import ScorerEngine
from tests.builders import node, pod

NODES = ("n0", "n1")
PODS = ("p0", "p1", "p2")
# what happens to a pod: (action, node index, labels variant)
STEPS = st.tuples(
    st.sampled_from(PODS),
    st.sampled_from(["pending", "nominated", "bound", "finished", "deleted", "reserved", "released"]),
    st.integers(0, len(NODES) - 1),
    st.integers(0, 1),
)


def _pod(name: str, node_name: str, labels: int, rv: int, phase: str = "", nominated: str = "") -> Any:
    raw = pod(name, node_name=node_name, metadata={"resourceVersion": str(rv), "labels": {"app": f"a{labels}"}})
    if phase or nominated:
        raw["status"] = {"phase": phase or "Pending", "nominatedNodeName": nominated}
    return convert(raw)


def _engines() -> tuple[ClusterState, ClusterState]:
    states = []
    for _ in range(2):
        state = ScorerEngine(parse_config(None)).state
        for n in NODES:
            state.apply(convert(node(n)))
        states.append(state)
    fast, plain = states
    plain._told_of_unassigned = lambda: tuple(plain.extensions)  # type: ignore[method-assign]
    plain._unassigned = tuple(plain.extensions)
    return fast, plain


def _same(a: Any, b: Any, seen: set[int]) -> bool:
    if id(a) in seen:
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, weakref.ref | ClusterState) or callable(a):
        return True
    if isinstance(a, np.ndarray):
        return bool(a.shape == b.shape and np.array_equal(a, b))
    if isinstance(a, msgspec.Struct | str | int | float | bool | frozenset | set | type(None)):
        return bool(a == b)
    seen.add(id(a))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k], seen) for k in a)
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(_same(x, y, seen) for x, y in zip(a, b, strict=True))
    if hasattr(a, "__dict__"):
        return _same(vars(a), vars(b), seen)
    slots = [n for c in type(a).__mro__ for n in getattr(c, "__slots__", ())]
    if slots:
        return all(_same(getattr(a, n, None), getattr(b, n, None), seen) for n in slots)
    return bool(a == b)


@given(st.lists(STEPS, max_size=30))
@settings(max_examples=150, deadline=None)
def test_extensions_told_only_of_assigned_pods_keep_the_plain_paths_state(steps: list[Any]) -> None:
    fast, plain = _engines()
    assert any(e.assigned_only for e in fast.extensions)
    for rv, (name, action, n, labels) in enumerate(steps, start=1):
        for state in (fast, plain):
            current = state.pods.get(f"default/{name}")
            if action == "reserved":
                if current is not None and current.pending and state.reserved(current.key) is None:
                    state.reserve(Reservation(current, NODES[n]))
            elif action == "released":
                state.release(f"default/{name}")
            elif action == "deleted":
                if current is not None:
                    state.apply(current, deleted=True)
            elif action in ("pending", "nominated"):
                state.apply(_pod(name, "", labels, rv, nominated=NODES[n] if action == "nominated" else ""))
            else:
                state.apply(_pod(name, NODES[n], labels, rv, "Succeeded" if action == "finished" else ""))
    for a, b in zip(fast.extensions, plain.extensions, strict=True):
        assert type(a) is type(b)
        assert _same(vars(a), vars(b), set()), type(a).__name__
