"""The over-the-run observer on small, hand-checked histories."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from berth.core.api.core.model import Node, Pod
from berth.core.api.watch import WatchEvent
from berth.core.pipeline.overrun import LowerMedian, OverRunObserver, percentiles
from berth.core.pipeline.stats import BufferPoint
from tests.builders import node, pod

T0 = datetime(2026, 11, 1, 10, 0, tzinfo=UTC)


def model(obj: dict[str, Any]) -> Any:
    return WatchEvent("ADDED", obj, T0).decoded().model


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


@pytest.mark.parametrize(
    ("values", "want"),
    [
        ([], (0.0, 0.0, 0.0, 0.0)),
        ([3.0], (3.0, 3.0, 3.0, 3.0)),
        ([float(v) for v in range(1, 101)], (50.0, 90.0, 99.0, 100.0)),
        ([4.0, 1.0, 3.0, 2.0], (2.0, 4.0, 4.0, 4.0)),
    ],
)
def test_percentiles_are_nearest_rank(values: list[float], want: tuple[float, ...]) -> None:
    p = percentiles(values)
    assert (p.p50, p.p90, p.p99, p.max) == want


@given(st.lists(st.tuples(st.booleans(), st.integers(0, 40)), max_size=200))
def test_lower_median_kept_as_values_come_and_go(steps: list[tuple[bool, int]]) -> None:
    """LowerMedian against sorting the values again after every change (a removal takes out a value
    that is in, picked by the drawn number)."""
    median, values = LowerMedian(), []
    for remove, v in steps:
        if remove and values:
            gone = values[v % len(values)]
            median.remove(gone)
            values.remove(gone)
        else:
            median.add(v)
            values.append(v)
        ordered = sorted(values)
        assert median.median() == (ordered[(len(ordered) + 1) // 2 - 1] if ordered else 0)


def test_requests_over_allocatable_weighted_by_log_time() -> None:
    """Two 4-core nodes; a 2-core pod bound on n1 from 10 s to 30 s, then a 4-core one on n2 to 40 s."""
    o = OverRunObserver()
    n1, n2 = model(node("n1", cpu="4")), model(node("n2", cpu="4"))
    a = model(pod("a", cpu="2", node_name="n1"))
    b = model(pod("b", cpu="4", node_name="n2"))
    o.advance(at(0))
    o.node(n1, False)
    o.node(n2, False)
    o.advance(at(10))
    o.pod(a, False)
    o.advance(at(30))
    o.pod(a, True)
    o.pod(b, False)
    o.advance(at(40))
    o.pod(b, True)
    r = o.result([])
    # cpu: 0 for 10 s, 2/8 for 20 s, 4/8 for 10 s -> (5 + 5) / 40
    assert r.cpu.mean == pytest.approx(10 / 40) and r.cpu.peak == pytest.approx(0.5)
    # per-node spread: 0, then stddev(0.5, 0) = 0.25 for 20 s, then stddev(0, 1) = 0.5 for 10 s
    assert r.cpu_spread == pytest.approx((0.25 * 20 + 0.5 * 10) / 40)
    assert r.seconds == 40


def test_a_buffers_share_of_log_time_fully_ready() -> None:
    o = OverRunObserver()
    o.advance(at(0))
    o.advance(at(100))
    points = [
        BufferPoint("2026-11-01T10:00:20Z", 1, "ns/a", 2, 2),  # ready from 20 s
        BufferPoint("2026-11-01T10:01:00Z", 2, "ns/a", 2, 1),  # not from 60 s
        BufferPoint("2026-11-01T10:01:30Z", 3, "ns/a", 2, 2),  # ready again from 90 s to the end
        BufferPoint("2026-11-01T10:00:00Z", 1, "ns/b", 1, 0),
    ]
    assert o.result(points).buffers_ready == {"ns/a": pytest.approx(0.5), "ns/b": 0.0}


def test_stranded_capacity_against_the_median_live_pod() -> None:
    """Two 4-core 8Gi nodes. The median pod is the lower median of the live pods' requests."""
    o = OverRunObserver()
    n1, n2 = model(node("n1", cpu="4", memory="8Gi")), model(node("n2", cpu="4", memory="8Gi"))
    a = model(pod("a", cpu="1", memory="7Gi", node_name="n1"))
    b = model(pod("b", cpu="1", memory="1Gi", node_name="n2"))
    c = model(pod("c", cpu="500m", memory="512Mi", node_name="n1"))
    d = model(pod("d", cpu="3500m", memory="1Gi", node_name="n2"))
    o.advance(at(0))
    o.node(n1, False)
    o.node(n2, False)
    o.advance(at(10))
    o.pod(a, False)
    o.pod(b, False)  # median 1 core, 1Gi: n1 has exactly 1Gi free, room enough, so nothing stranded
    o.advance(at(20))
    o.pod(c, False)  # median 1 core, 1Gi: n1 has 512Mi free, so its 2.5 free cores are stranded
    o.advance(at(40))
    o.pod(c, True)
    o.pod(d, False)  # median 1 core, 1Gi: n2 has no free cpu (overcommitted), so its 6Gi free are stranded
    o.advance(at(50))
    r = o.result([])
    assert r.cpu_stranded.mean == pytest.approx(2.5 / 8 * 20 / 50) and r.cpu_stranded.peak == pytest.approx(2.5 / 8)
    assert r.memory_stranded.mean == pytest.approx(6 / 16 * 10 / 50)
    assert r.memory_stranded.peak == pytest.approx(6 / 16)
    # the plots' buckets are equally wide: their mean is the mean over the run
    s = r.series
    assert len(s.cpu_stranded) == len(s.seconds) > 0
    assert sum(s.cpu_stranded) / len(s.cpu_stranded) == pytest.approx(r.cpu_stranded.mean)
    assert sum(s.cpu) / len(s.cpu) == pytest.approx(r.cpu.mean)
    assert max(s.memory_stranded) == pytest.approx(6 / 16)


def test_time_to_schedule_quantiles_for_the_plot() -> None:
    assert OverRunObserver().result([]).wait_quantiles == []
    from berth.core.pipeline.overrun import quantiles

    q = quantiles([float(v) for v in range(1, 201)])
    assert len(q) == 101 and (q[0], q[50], q[100]) == (1.0, 100.0, 200.0)


NODE_SIZES = ((4000, 8 << 30), (0, 8 << 30), (4000, 0))  # a node may have no cpu or no memory to give
POD_SIZES = ((500, 1 << 30), (1500, 3 << 30), (0, 1 << 29))


@given(
    st.lists(
        st.tuples(st.sampled_from(("node", "pod")), st.integers(0, 2), st.integers(0, 2), st.integers(-1, 2)),
        max_size=60,
    )
)
def test_node_figures_follow_the_live_pods(steps: list[tuple[str, int, int, int]]) -> None:
    """Whatever nodes and pods do, each node's requests, free capacity and the spreads' sums are what
    a plain pass over the live nodes and pods gives (a pod's arrival and departure are kept in line)."""
    o = OverRunObserver()
    nodes: dict[str, tuple[int, int]] = {}
    pods: dict[str, tuple[str, int, int]] = {}
    for i, (what, a, b, c) in enumerate(steps):
        o.advance(at(i))
        if what == "node":
            name = f"n{a}"
            if c < 0:
                o.node(Node(name=name), True)
                nodes.pop(name, None)
            else:
                cpu, mem = NODE_SIZES[b]
                o.node(Node(name=name, allocatable={"cpu": cpu, "memory": mem}), False)
                nodes[name] = (cpu, mem)
        else:
            key, (cpu, mem) = f"p{a}", POD_SIZES[b]
            p = Pod("default", key, node_name=f"n{c}" if c >= 0 else "", requests={"cpu": cpu, "memory": mem})
            o.pod(p, c < 0)
            if c >= 0 and pods.get(f"default/{key}", ("",))[0] != f"n{c}":  # on its node: counted as it came
                pods[f"default/{key}"] = (f"n{c}", cpu, mem)
            elif c < 0:
                pods.pop(f"default/{key}", None)
    req = {
        n: [sum(p[1] for p in pods.values() if p[0] == n), sum(p[2] for p in pods.values() if p[0] == n)]
        for n in o._slot
    }
    assert {n: r for n, r in o._req.items() if r != [0, 0]} == {n: r for n, r in req.items() if r != [0, 0]}
    assert o._sum == [
        sum(p[1] for p in pods.values()),
        sum(p[2] for p in pods.values()),
        *(sum(a[i] for a in nodes.values()) for i in (0, 1)),
    ]
    for n, s in o._slot.items():
        alloc = nodes.get(n, (0, 0))
        assert (o._free[0][s], o._free[1][s]) == (max(0, alloc[0] - req[n][0]), max(0, alloc[1] - req[n][1]))
    for i, spread in enumerate(o._spread):
        ratios = [req.get(n, [0, 0])[i] / a[i] for n, a in nodes.items() if a[i]]
        assert spread.n == len(ratios)
        assert spread.s == pytest.approx(sum(ratios), abs=1e-9)
        assert spread.s2 == pytest.approx(sum(r * r for r in ratios), abs=1e-9)
