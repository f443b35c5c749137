"""Properties: scores stay in 0..100, more usage never scores higher, incremental == rebuilt."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from berth.core.framework.events import never

from .builders import World, ago, node, node_metric, obj, pod, pod_usage
from .builders import least_used_rows as least_used

cpu_m = st.integers(min_value=0, max_value=200_000)
mem_mi = st.integers(min_value=0, max_value=400_000)
args_st = st.fixed_dictionaries(
    {
        "resourceWeights": st.dictionaries(st.sampled_from(["cpu", "memory"]), st.integers(1, 100), max_size=2),
        "dominantResourceWeight": st.integers(0, 100),
        "estimatedScalingFactors": st.fixed_dictionaries({"cpu": st.integers(1, 100), "memory": st.integers(1, 100)}),
        "scoreAccordingProdUsage": st.booleans(),
    }
)


@given(
    used=st.lists(st.tuples(st.integers(-(10**12), 10**13), st.integers(-(10**12), 10**13)), min_size=1, max_size=8),
    cap=st.lists(st.tuples(st.integers(0, 10**13), st.integers(0, 10**13)), min_size=8, max_size=8),
    weights=st.tuples(st.integers(0, 100), st.integers(0, 100)),
    dw=st.integers(0, 100),
)
def test_least_used_in_range(
    used: list[tuple[int, int]], cap: list[tuple[int, int]], weights: tuple[int, int], dw: int
) -> None:
    u = np.array(used, dtype=np.int64)
    c = np.array(cap[: len(used)], dtype=np.int64)
    s = least_used(u, c, np.array(weights, dtype=np.int64), dw)
    assert ((s >= 0) & (s <= 100)).all()


@given(
    base=st.tuples(st.integers(0, 10**13), st.integers(0, 10**13)),
    extra=st.tuples(st.integers(0, 10**12), st.integers(0, 10**12)),
    cap=st.tuples(st.integers(0, 10**13), st.integers(0, 10**13)),
    weights=st.tuples(st.integers(0, 100), st.integers(0, 100)),
    dw=st.integers(0, 100),
)
def test_least_used_monotone(
    base: tuple[int, int], extra: tuple[int, int], cap: tuple[int, int], weights: tuple[int, int], dw: int
) -> None:
    u = np.array([base, (base[0] + extra[0], base[1] + extra[1])], dtype=np.int64)
    c = np.array([cap, cap], dtype=np.int64)
    s = least_used(u, c, np.array(weights, dtype=np.int64), dw)
    assert s[1] <= s[0]


@given(
    args=args_st,
    alloc=st.tuples(st.integers(1, 256), st.integers(1, 1024)),
    low=st.tuples(cpu_m, mem_mi),
    more=st.tuples(cpu_m, mem_mi),
    incoming=st.tuples(st.integers(0, 64_000), st.integers(0, 100_000)),
    prod=st.booleans(),
    assigned=st.lists(st.tuples(st.integers(0, 8000), st.integers(0, 8000)), max_size=3),
)
def test_score_in_range_and_more_usage_never_scores_higher(
    args: dict[str, Any],
    alloc: tuple[int, int],
    low: tuple[int, int],
    more: tuple[int, int],
    incoming: tuple[int, int],
    prod: bool,
    assigned: list[tuple[int, int]],
) -> None:
    """Two identical nodes, one with more reported usage (node and prod pods)."""
    w = World(args)
    high = (low[0] + more[0], low[1] + more[1])
    for name, (c, m) in (("low", low), ("high", high)):
        w.apply(node(name, cpu=str(alloc[0]), memory=f"{alloc[1]}Gi"))
        w.apply(node_metric(name, cpu=f"{c}m", memory=f"{m}Mi", pods=[pod_usage("r", f"{c}m", f"{m}Mi")]))
        w.apply(pod("r", name, ns=name, scheduled=ago(3600)))
        for i, (pc, pm) in enumerate(assigned):
            w.apply(pod(f"a{i}", name, ns=name, cpu=f"{pc}m", memory=f"{pm}Mi"))
    labels = {"koordinator.sh/priority-class": "koord-prod" if prod else "koord-batch"}
    scores = w.score(pod("in", cpu=f"{incoming[0]}m", memory=f"{incoming[1]}Mi", labels=labels))
    assert all(0 <= v <= 100 for v in scores.values())
    assert scores["high"] <= scores["low"]


@given(
    alloc=st.integers(1, 128),
    low=cpu_m,
    more=cpu_m,
    thr=st.integers(0, 100),
)
def test_filter_monotone_in_usage(alloc: int, low: int, more: int, thr: int) -> None:
    w = World({"usageThresholds": {"cpu": thr}})
    for name, c in (("low", low), ("high", low + more)):
        w.apply(node(name, cpu=str(alloc)))
        w.apply(node_metric(name, cpu=f"{c}m"))
    got = w.filter(pod("in"))
    assert got["low"] is None or got["high"] is not None


# ---- incremental == rebuilt -------------------------------------------------
NODES = ["n0", "n1", "n2"]
pod_ev = st.tuples(
    st.just("pod"),
    st.sampled_from(["a", "b", "c", "d"]),
    st.sampled_from([*NODES, ""]),
    st.sampled_from(["500m", "2", "4"]),
    st.sampled_from([None, 10, 90, 3600]),  # scheduled seconds ago
    st.sampled_from([None, 9500, 5500, 7500]),  # priority
    st.sampled_from(["Running", "Succeeded"]),
    st.booleans(),  # deleted
)
metric_ev = st.tuples(
    st.just("metric"),
    st.sampled_from(NODES),
    st.sampled_from(["1", "3"]),
    st.lists(
        st.tuples(st.sampled_from(["a", "b", "c", "d"]), st.sampled_from(["koord-prod", "koord-batch"])), max_size=4
    ),
    st.sampled_from([30, 60, 120]),  # update, seconds ago
    st.booleans(),  # deleted
)
node_ev = st.tuples(st.just("node"), st.sampled_from(NODES), st.sampled_from(["16", "32"]), st.booleans())
ARGS = {
    "estimatedSecondsAfterPodScheduled": 60,
    "prodUsageIncludeSys": True,
    "aggregated": {"scoreAggregationType": "p95"},
}


def raw_of(ev: tuple[Any, ...]) -> tuple[dict[str, Any], bool]:
    if ev[0] == "pod":
        _, name, on, cpu, sched, prio, phase, deleted = ev
        raw = pod(name, on, cpu=cpu, scheduled=None if sched is None else ago(sched), priority=prio, phase=phase)
        return raw, deleted
    if ev[0] == "metric":
        _, on, cpu, reported, ago_s, deleted = ev
        pods = [pod_usage(n, "1", "1Gi", priority=p) for n, p in dict(reported).items()]
        agg = {"5m": {"p95": (cpu, "2Gi")}}
        return node_metric(
            on, cpu=cpu, memory="1Gi", update=ago(ago_s), pods=pods, system=("1", "1Gi"), agg=agg
        ), deleted
    _, name, cpu, deleted = ev
    return node(name, cpu=cpu), deleted


@given(st.lists(st.one_of(pod_ev, metric_ev, node_ev), max_size=30))
def test_incremental_equals_rebuilt(events: list[tuple[Any, ...]]) -> None:
    w = World(ARGS)
    final: dict[tuple[str, str], tuple[dict[str, Any], bool]] = {}
    for ev in events:
        raw, deleted = raw_of(ev)
        w.apply(raw, deleted)
        final[(raw["kind"], raw["metadata"]["name"])] = (raw, deleted)
    fresh = World(ARGS)
    for kind in ("Node", "NodeMetric", "Pod"):
        for (k, _), (raw, deleted) in final.items():
            if k == kind and not deleted:
                fresh.apply(raw)
    a, b = w.plugin.store, fresh.plugin.store
    assert set(a.pods) == set(b.pods)
    assert set(a.records) == set(b.records)
    for name, r in a.records.items():
        q = b.records[name]
        for attr in ("node_delta", "node_est", "prod_usage", "prod_delta"):
            assert np.array_equal(getattr(r, attr), getattr(q, attr)), (name, attr)
    incoming = pod("in", cpu="1")
    assert w.filter(incoming) == fresh.filter(incoming)
    assert w.score(incoming) == fresh.score(incoming)


@given(
    used=st.integers(-(10**13), 10**15),
    alloc=st.integers(1, 10**15),
    thr=st.integers(1, 1000),
)
def test_threshold_test_is_go_round(used: int, alloc: int, thr: int) -> None:
    """The filter tests used/alloc*100 >= thr + 0.5 instead of Round(used/alloc*100) > thr."""
    from berth.core.plugins.loadawarescheduling.vectors import round_half_away

    pct = float(np.float64(used) / np.float64(alloc) * 100)
    assert (round_half_away(pct) > thr) == (pct >= thr + 0.5)


@given(
    metrics=st.lists(
        st.tuples(
            st.integers(1, 64),  # allocatable cpu
            st.one_of(st.none(), st.tuples(cpu_m, mem_mi, st.sampled_from([0, 100, 400]))),  # usage, age s
        ),
        min_size=1,
        max_size=5,
    ),
    incoming=st.tuples(st.integers(0, 64_000), st.integers(0, 100_000)),
    prod=st.booleans(),
    args=st.fixed_dictionaries(
        {
            "usageThresholds": st.fixed_dictionaries({"cpu": st.integers(0, 100), "memory": st.integers(0, 100)}),
            "prodUsageThresholds": st.fixed_dictionaries({"cpu": st.integers(0, 100)}),
            "filterExpiredNodeMetrics": st.booleans(),
            "enableScheduleWhenNodeMetricsExpired": st.booleans(),
        }
    ),
)
def test_single_node_check_agrees_with_filter(
    metrics: list[tuple[int, tuple[int, int, int] | None]],
    incoming: tuple[int, int],
    prod: bool,
    args: dict[str, Any],
) -> None:
    """passes() (the queueing hint's check) is the Filter for one node."""
    w = World(args)
    for i, (alloc, m) in enumerate(metrics):
        w.apply(node(f"n{i}", cpu=str(alloc), memory="256Gi"))
        if m is not None:
            w.apply(node_metric(f"n{i}", cpu=f"{m[0]}m", memory=f"{m[1]}Mi", update=ago(m[2])))
    labels = {"koordinator.sh/priority-class": "koord-prod" if prod else "koord-batch"}
    p = pod("in", cpu=f"{incoming[0]}m", memory=f"{incoming[1]}Mi", labels=labels)
    now = ago(0)
    got = w.filter(p, now)
    c = w.cycle(p, now)
    for name, reason in got.items():
        assert w.plugin.passes(w.state, c.pod, w.state.nodes.slot[name], now) == (reason is None), name


@settings(deadline=None)
@given(
    alloc=st.integers(1, 64),
    usage=st.tuples(cpu_m, mem_mi),
    incoming=st.lists(
        st.tuples(st.integers(0, 64_000), st.integers(0, 100_000), st.booleans()), min_size=1, max_size=8
    ),
    thresholds=st.fixed_dictionaries({"cpu": st.integers(0, 100), "memory": st.integers(0, 100)}),
)
def test_the_nodemetric_hint_over_many_pods_is_the_filter_pod_by_pod(
    alloc: int, usage: tuple[int, int], incoming: list[tuple[int, int, bool]], thresholds: dict[str, int]
) -> None:
    """The hint over a list of pods (rows of each kind skipped when their least estimate fails) gives
    each pod the Filter's answer on that node."""
    w = World({"usageThresholds": thresholds, "prodUsageThresholds": {"cpu": thresholds["cpu"]}})
    w.apply(node("n", cpu=str(alloc), memory="256Gi"))
    metric = node_metric("n", cpu=f"{usage[0]}m", memory=f"{usage[1]}Mi", update=ago(0))
    w.apply(metric)
    now = ago(0)
    pods, want = [], []
    for i, (cpu, mem, prod) in enumerate(incoming):
        labels = {"koordinator.sh/priority-class": "koord-prod" if prod else "koord-batch"}
        p = pod(f"in{i}", cpu=f"{cpu}m", memory=f"{mem}Mi", labels=labels)
        pods.append(w.cycle(p, now).pod)
        want.append(w.filter(p, now)["n"] is None)
    hint = w.plugin.metric_hint(w.state, obj(metric), now)
    got = [False] * len(pods) if hint is never else hint(pods, None).tolist()
    assert got == want
