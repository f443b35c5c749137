"""The PV index kept up to date incrementally answers like one built from scratch."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from berth.core.kinds import convert
from berth.core.pvindex import ClassIndex
from berth.core.state import ClusterState
from tests.builders import node, pv, pvc, zone_affinity

SIZES = ["1Gi", "2Gi", "5Gi", "10Gi"]
ops = st.lists(
    st.tuples(st.sampled_from(["put", "drop"]), st.integers(0, 9), st.sampled_from(SIZES), st.integers(-2, 3)),
    min_size=1,
    max_size=40,
)


def nodes_state() -> ClusterState:
    state = ClusterState()
    for i in range(4):
        state.apply(convert(node(f"n{i}", zone=f"z{1 + i % 2}")))
    return state


@given(ops, st.lists(st.sampled_from(SIZES), min_size=1, max_size=3), st.integers(1, 3))
def test_incremental_equals_rebuilt(steps: list[Any], requests: list[str], every: int) -> None:
    """Also checks the answers best() keeps per claim shape: several shapes, asked every few steps."""
    state = nodes_state()
    live = ClassIndex()
    live.ensure(state.nodes)
    current: dict[str, Any] = {}
    claims = [convert(pvc("c", r)) for r in requests]
    for step, (op, i, size, where) in enumerate(steps):
        name = f"pv{i}"
        if op == "put":  # where < 0: a zonal PV that fits every node of one zone
            placed = {"affinity": zone_affinity(f"z{-where}")} if where < 0 else {"on": f"n{where}"}
            current[name] = convert(pv(name, size, **placed))
            live.put(current[name])
        else:
            current.pop(name, None)
            live.drop(name)
        live.ensure(state.nodes)
        fresh = ClassIndex()
        for v in current.values():
            fresh.put(v)
        fresh.ensure(state.nodes)
        n = len(state.nodes.valid)
        claim = claims[step % len(claims)]
        if step % every:
            continue
        got = live.best(claim, n, [])
        want = fresh.best(claim, n, [])
        assert [live.order[e].name if e >= 0 else None for e in got] == [
            fresh.order[e].name if e >= 0 else None for e in want
        ]


def test_node_label_change_moves_pvs() -> None:
    state = nodes_state()
    state.apply(
        convert(
            pv(
                "zonal",
                "10Gi",
                affinity={
                    "required": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "disk", "operator": "Exists"}]}]}
                },
            )
        )
    )
    idx = state.class_index("local")
    assert not (idx.best(convert(pvc("c")), len(state.nodes.valid), []) >= 0).any()
    state.apply(convert(node("n2", labels={"disk": "ssd"})))
    idx = state.class_index("local")
    best = idx.best(convert(pvc("c")), len(state.nodes.valid), [])
    assert np.flatnonzero(best >= 0).tolist() == [state.nodes.slot["n2"]]
    assert [v.name for v in idx.per_node(state.nodes.slot["n2"])] == ["zonal"]


def test_stale_resource_version_is_ignored() -> None:
    state = nodes_state()
    newer = pv("a", "10Gi", on="n1", metadata={"resourceVersion": "5"})
    older = pv("a", "1Gi", on="n1", metadata={"resourceVersion": "4"})
    assert state.apply(convert(newer))
    assert not state.apply(convert(older))
    assert not state.apply(convert(newer))
    assert state.pvs["a"].capacity == convert(newer).capacity
    assert not state.apply(convert(older), deleted=True)
    assert "a" in state.pvs
