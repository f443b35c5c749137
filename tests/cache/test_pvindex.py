"""The PV index kept up to date incrementally answers like one built from scratch."""

from __future__ import annotations

from typing import Any

import msgspec
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from berth.core.api.core.model import PersistentVolume
from berth.core.api.kinds import convert
from berth.core.cache.pvindex import ClassIndex
from berth.core.cache.state import ClusterState
from berth.core.config.kubeschedulerconfig import parse_config
from berth.core.scheduler.schedule_one import Scheduler
from tests.builders import NOW, node, pod, pv, pvc, storage_class, zone_affinity

SIZES = ["1Gi", "2Gi", "5Gi", "10Gi"]
ops = st.lists(
    st.tuples(st.sampled_from(["put", "drop"]), st.integers(0, 9), st.sampled_from(SIZES), st.integers(-2, 3)),
    min_size=1,
    max_size=40,
)


def fitting(idx: ClassIndex, slot: int) -> list[PersistentVolume]:
    """The available PVs the index holds as fitting one node, smallest first (read off its arrays)."""
    groups = idx.group_id[idx.group_slot == slot]
    entries = np.union1d(idx.pair_entry[idx.pair_slot == slot], np.flatnonzero(np.isin(idx.group, groups)))
    return [idx.order[i] for i in entries if idx.alive[i]]


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
    assert [v.name for v in fitting(idx, state.nodes.slot["n2"])] == ["zonal"]


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


# A PV of one of a few names, in one of a few shapes: taking it (drop) and giving it back as it was
# (put the same) revives its dead entry; a put of another shape inserts a new one.
pv_shapes = st.tuples(
    st.integers(0, 5),
    st.sampled_from(SIZES),
    st.integers(-2, 3),
    st.sampled_from(["a", "b"]),
    st.sampled_from([("ReadWriteOnce",), ("ReadWriteOnce", "ReadWriteMany")]),
    st.sampled_from(["Filesystem", "Block"]),
)
claim_shapes = st.tuples(
    st.sampled_from(SIZES),
    st.sampled_from([None, "a"]),
    st.sampled_from([("ReadWriteOnce",), ("ReadWriteMany",)]),
    st.sampled_from(["Filesystem", "Block"]),
)


def shaped_pv(i: int, size: str, where: int, tier: str, modes: tuple[str, ...], mode: str) -> Any:
    placed = {"affinity": zone_affinity(f"z{-where}")} if where < 0 else {"on": f"n{where}"}
    return convert(
        pv(f"pv{i}", size, modes=modes, metadata={"labels": {"tier": tier}}, spec={"volumeMode": mode}, **placed)
    )


def shaped_claim(size: str, tier: str | None, modes: tuple[str, ...], mode: str) -> Any:
    spec: dict[str, Any] = {"volumeMode": mode}
    if tier is not None:
        spec["selector"] = {"matchLabels": {"tier": tier}}
    return convert(pvc("c", size, modes=modes, spec=spec))


@given(
    st.lists(pv_shapes, max_size=8),
    st.lists(
        st.tuples(st.sampled_from(["put", "drop", "drop", "back", "back", "ask"]), pv_shapes, st.booleans()),
        max_size=50,
    ),
    st.lists(claim_shapes, min_size=1, max_size=3),
)
def test_kept_answers_equal_fresh_ones_through_takes_and_returns(
    first: list[Any], steps: list[Any], shapes: list[Any]
) -> None:
    """best()'s answers kept per claim shape, patched as PVs are taken and come back (revived in
    place), equal those of an index built from scratch at every step they are asked."""
    state = nodes_state()
    live = ClassIndex()
    current = {f"pv{s[0]}": shaped_pv(*s) for s in first}
    for v in current.values():
        live.put(v)
    live.ensure(state.nodes)
    taken: dict[str, Any] = {}
    claims = [shaped_claim(*s) for s in shapes]
    n = len(state.nodes.valid)
    for step, (op, shape, settle) in enumerate(steps):
        name = f"pv{shape[0]}"
        if op == "put":
            current[name] = shaped_pv(*shape)
            taken.pop(name, None)
            live.put(current[name])
        elif op == "drop" and name in current:  # taken by a claim: kept to come back as it was
            taken[name] = current.pop(name)
            live.drop(name)
        elif op == "back" and name in taken:
            current[name] = taken.pop(name)
            live.put(current[name])
        if not settle and op != "ask":  # the change waits, pending, for a later ensure
            continue
        live.ensure(state.nodes)
        fresh = ClassIndex()
        for v in current.values():
            fresh.put(v)
        fresh.ensure(state.nodes)
        claim = claims[step % len(claims)]
        got, want = live.best(claim, n, []), fresh.best(claim, n, [])
        assert [live.order[e].name if e >= 0 else None for e in got] == [
            fresh.order[e].name if e >= 0 else None for e in want
        ]
        assert [[p.name for p in fitting(live, s)] for s in range(n)] == [
            [p.name for p in fitting(fresh, s)] for s in range(n)
        ]


_NODES = 4
scheduling = st.lists(
    st.one_of(
        st.tuples(st.just("node"), st.integers(0, _NODES - 1), st.sampled_from(["z1", "z2"])),
        st.tuples(st.just("pv"), st.integers(0, 7), st.integers(-2, _NODES - 1), st.sampled_from(SIZES)),
        st.tuples(st.just("pv-delete"), st.integers(0, 7)),
        st.tuples(st.just("pvc"), st.integers(0, 3), st.sampled_from(SIZES[:2])),
        st.tuples(st.just("decide"), st.lists(st.integers(0, 3), max_size=2, unique=True)),
        st.tuples(st.just("decide"), st.lists(st.integers(0, 3), min_size=1, max_size=2, unique=True)),
        st.tuples(st.just("decide"), st.lists(st.integers(0, 3), min_size=1, max_size=2, unique=True)),
        st.tuples(st.just("release"), st.integers(0, 9)),
        st.tuples(st.just("release"), st.integers(0, 9)),
        st.tuples(st.just("release"), st.integers(0, 9)),
    ),
    min_size=20,
    max_size=80,
)


@settings(max_examples=300, deadline=None)
@given(scheduling)
def test_decisions_with_kept_pv_answers_equal_those_with_a_fresh_index(evs: list[Any]) -> None:
    """Nodes, PVs and PVCs changing, pods decided (their PVs reserved) and deleted (their PVs given
    back, revived in the index): every decision, byte for byte, is the one a scheduler gives whose
    PV indexes are rebuilt from scratch before each decision."""
    sides = [ClusterState() for _ in range(2)]
    schedulers = [Scheduler(parse_config(None).build(s)) for s in sides]
    setup = [storage_class("local"), *(node(f"n{i}", zone=f"z{1 + i % 2}") for i in range(_NODES))]
    for raw in setup:
        for s in sides:
            s.apply(convert(raw))
    placed: list[Any] = []
    for seq, ev in enumerate(evs, start=1):
        raw: dict[str, Any] | None = None
        deleted = False
        if ev[0] == "node":
            raw = node(f"n{ev[1]}", zone=ev[2])
        elif ev[0] in ("pv", "pv-delete"):
            where = ev[2] if ev[0] == "pv" else 0
            placed_on = {"affinity": zone_affinity(f"z{-where}")} if where < 0 else {"on": f"n{where}"}
            raw, deleted = pv(f"pv{ev[1]}", ev[3] if ev[0] == "pv" else "1Gi", **placed_on), ev[0] == "pv-delete"
        elif ev[0] == "pvc":
            raw = pvc(f"c{ev[1]}", ev[2])
        elif ev[0] == "release" and placed:
            raw, deleted = placed.pop(ev[1] % len(placed)), True
        if raw is not None:
            raw["metadata"]["resourceVersion"] = str(seq)
            for s in sides:
                s.apply(convert(raw), deleted)
            continue
        if ev[0] != "decide":
            continue
        p = pod(f"p{seq}", tuple(f"c{c}" for c in ev[1]))
        got = []
        for s, sched in zip(sides, schedulers, strict=True):
            if s is sides[1]:
                for index in s.pv_index.values():
                    index._built_labels = -1  # the next ensure rebuilds it, keeping nothing
            outcome = sched.decide(convert(p), NOW)
            if outcome.reservation is not None:
                s.reserve(outcome.reservation)
            got.append(msgspec.json.encode(outcome.decision))
        assert got[0] == got[1], ev
        if got[0] and b'"Scheduled"' in got[0]:
            placed.append(p)
