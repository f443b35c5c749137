"""Invariants of volume binding, checked against a brute-force oracle."""

from __future__ import annotations

from typing import Any

import msgspec
from hypothesis import given
from hypothesis import strategies as st

from berth.core.api.core.model import PersistentVolume, PersistentVolumeClaim
from berth.core.cache.pvindex import available
from berth.core.cache.state import ClusterState
from berth.core.config.kubeschedulerconfig import parse_config
from berth.core.plugins.volumebinding import BIND_CONFLICT
from berth.core.scheduler.schedule_one import Scheduler
from tests.builders import NOW, cluster, node, pod, pv, pvc, storage_class, zone_affinity

SIZES = ["1Gi", "5Gi", "10Gi", "20Gi", "100Gi"]
MODES = [("ReadWriteOnce",), ("ReadWriteOnce", "ReadOnlyMany"), ("ReadWriteMany",)]


@st.composite
def clusters(draw: Any) -> list[dict[str, Any]]:
    n_nodes = draw(st.integers(1, 5))
    objs: list[dict[str, Any]] = [storage_class("a"), storage_class("b")]
    objs += [node(f"n{i}", zone=f"z{i % 2}", cpu="4") for i in range(n_nodes)]
    for i in range(draw(st.integers(0, 14))):
        where = draw(st.one_of(st.integers(0, n_nodes - 1), st.just(-1)))
        affinity = zone_affinity(f"z{i % 2}") if where < 0 else None
        objs.append(
            pv(
                f"pv{i:02d}",
                draw(st.sampled_from(SIZES)),
                on=None if where < 0 else f"n{where}",
                affinity=affinity,
                cls=draw(st.sampled_from("ab")),
                modes=draw(st.sampled_from(MODES)),
            )
        )
    claim = 0
    for p in range(draw(st.integers(1, 6))):
        names = []
        for _ in range(draw(st.integers(1, 3))):
            names.append(f"c{claim}")
            objs.append(
                pvc(
                    f"c{claim}",
                    draw(st.sampled_from(SIZES)),
                    cls=draw(st.sampled_from("ab")),
                    modes=draw(st.sampled_from(MODES[:2])),
                )
            )
            claim += 1
        objs.append(pod(f"p{p}", tuple(names), cpu="1", created=f"2026-11-01T10:00:{p:02d}Z"))
    return objs


def fits(v: PersistentVolume, c: PersistentVolumeClaim, node_name: str, state: ClusterState) -> bool:
    n = state.nodes.get(node_name)
    assert n is not None
    return (
        v.storage_class == c.storage_class
        and v.capacity >= (c.request or 0)
        and set(c.access_modes) <= set(v.access_modes)
        and v.volume_mode == c.volume_mode
        and (v.node_affinity is None or v.node_affinity.matches(n.labels, n.name))
    )


def oracle(state: ClusterState, claims: list[PersistentVolumeClaim], node_name: str) -> dict[str, str] | None:
    """FindMatchingVolume by brute force: smallest request first, smallest PV first, ties by name."""
    chosen: dict[str, str] = {}
    for c in sorted(claims, key=lambda c: c.request or 0):
        pool = sorted(
            (v for v in state.pvs.values() if available(v) and v.name not in chosen.values()),
            key=lambda v: (v.capacity, v.name),
        )
        match = next((v for v in pool if fits(v, c, node_name, state)), None)
        if match is None:
            return None
        chosen[c.key] = match.name
    return chosen


@given(clusters())
def test_decisions_agree_with_oracle_and_never_share_a_pv(objs: list[dict[str, Any]]) -> None:
    state = cluster(*objs)
    sched = Scheduler(parse_config(None).build(state))
    taken: set[str] = set()
    for p in state.pending_pods():
        claims = [state.pvcs[f"{p.namespace}/{v.claim_name}"] for v in p.volumes]
        expected = {n.name: oracle(state, claims, n.name) for n in state.nodes.all()}
        outcome = sched.decide(p, NOW)
        d = outcome.decision
        for name, result in d.nodes.items():
            assert (BIND_CONFLICT not in result.reasons) == (expected[name] is not None), name
        if d.status == "Scheduled":
            assert d.node is not None
            got = {b.claim: b.pv for b in d.volume_bindings}
            assert got == expected[d.node]
            for claim_key, pv_name in got.items():
                assert pv_name not in taken
                taken.add(pv_name or "")
                assert fits(state.pvs[pv_name or ""], state.pvcs[claim_key], d.node, state)
            assert outcome.reservation is not None
            state.reserve(outcome.reservation)


@given(clusters())
def test_same_input_same_decisions(objs: list[dict[str, Any]]) -> None:
    def run() -> bytes:
        state = cluster(*objs)
        return msgspec.json.encode(Scheduler(parse_config(None).build(state)).run(state.pending_pods(), NOW))

    assert run() == run()
