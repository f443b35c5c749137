from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from berth.core.api.koordinator.model import LABEL_PRIORITY_CLASS
from berth.core.plugins.loadawarescheduling.store import NodeLoad

from .builders import GI, T0, World, ago, node, node_metric, pod, pod_usage

BASE: dict[str, Any] = {"estimatedScalingFactors": {"cpu": 100, "memory": 100}}
G = GI


def rec(w: World, name: str = "n") -> NodeLoad:
    return w.plugin.store.records[name]


def sums(r: NodeLoad) -> dict[str, list[int]]:
    return {
        "node_delta": r.node_delta.tolist(),
        "node_est": r.node_est.tolist(),
        "prod_usage": r.prod_usage.tolist(),
        "prod_delta": r.prod_delta.tolist(),
    }


# A prod pod of 2 cpu / 2Gi (estimate 2000m, 2Gi) on node n, reported (or not) in the metric.
CASES: list[tuple[str, dict[str, Any], dict[str, Any], dict[str, Any], dict[str, list[int]]]] = [
    # id, args, pod kwargs, metric kwargs, expected sums (cpu, memory)
    ("not reported: full estimate", {}, {"scheduled": ago(3600)}, {},
     {"node_delta": [2000, 2 * G], "node_est": [2000, 2 * G], "prod_usage": [0, 0], "prod_delta": [2000, 2 * G]}),
    ("reported long ago: usage only", {}, {"scheduled": ago(3600)}, {"pods": [pod_usage("p", "500m", "1Gi")]},
     {"node_delta": [0, 0], "node_est": [2000, 2 * G], "prod_usage": [500, G], "prod_delta": [0, 0]}),
    ("inside the report interval: max(est, usage)", {}, {"scheduled": ago(30)}, {"pods": [pod_usage("p", "500m", "1Gi")]},
     {"node_delta": [1500, G], "node_est": [2000, 2 * G], "prod_usage": [500, G], "prod_delta": [1500, G]}),
    ("window edge is strict", {}, {"scheduled": ago(60)}, {"pods": [pod_usage("p", "500m", "1Gi")]},
     {"node_delta": [0, 0], "node_est": [2000, 2 * G], "prod_usage": [500, G], "prod_delta": [0, 0]}),
    ("report interval from the NodeMetric", {}, {"scheduled": ago(60)}, {"interval": 61, "pods": [pod_usage("p", "500m", "1Gi")]},
     {"node_delta": [1500, G], "node_est": [2000, 2 * G], "prod_usage": [500, G], "prod_delta": [1500, G]}),
    ("usage above the estimate", {}, {"scheduled": ago(30)}, {"pods": [pod_usage("p", "3", "3Gi")]},
     {"node_delta": [0, 0], "node_est": [2000, 2 * G], "prod_usage": [3000, 3 * G], "prod_delta": [0, 0]}),
    ("no PodScheduled time: just assigned", {}, {}, {"pods": [pod_usage("p", "500m", "1Gi")]},
     {"node_delta": [1500, G], "node_est": [2000, 2 * G], "prod_usage": [500, G], "prod_delta": [1500, G]}),
    ("forced after scheduled", {"estimatedSecondsAfterPodScheduled": 3601}, {"scheduled": ago(3600)},
     {"pods": [pod_usage("p", "500m", "1Gi")]},
     {"node_delta": [1500, G], "node_est": [2000, 2 * G], "prod_usage": [500, G], "prod_delta": [1500, G]}),
    ("forced deadline equal to updateTime is over", {"estimatedSecondsAfterPodScheduled": 3600}, {"scheduled": ago(3600)},
     {"pods": [pod_usage("p", "500m", "1Gi")]},
     {"node_delta": [0, 0], "node_est": [2000, 2 * G], "prod_usage": [500, G], "prod_delta": [0, 0]}),
    ("after initialized wins even when earlier",
     {"estimatedSecondsAfterPodScheduled": 7200, "estimatedSecondsAfterInitialized": 10},
     {"scheduled": ago(3600), "initialized": ago(3600)}, {"pods": [pod_usage("p", "500m", "1Gi")]},
     {"node_delta": [0, 0], "node_est": [2000, 2 * G], "prod_usage": [500, G], "prod_delta": [0, 0]}),
    ("after initialized forces", {"estimatedSecondsAfterInitialized": 600}, {"scheduled": ago(3600), "initialized": ago(300)},
     {"pods": [pod_usage("p", "500m", "1Gi")]},
     {"node_delta": [1500, G], "node_est": [2000, 2 * G], "prod_usage": [500, G], "prod_delta": [1500, G]}),
    ("annotation 0 disables the forced window",
     {"estimatedSecondsAfterPodScheduled": 7200, "allowCustomizeEstimation": True},
     {"scheduled": ago(3600), "annotations": {"scheduling.koordinator.sh/load-estimated-seconds-after-pod-scheduled": "0"}},
     {"pods": [pod_usage("p", "500m", "1Gi")]},
     {"node_delta": [0, 0], "node_est": [2000, 2 * G], "prod_usage": [500, G], "prod_delta": [0, 0]}),
    ("reported as batch: prod counts the full estimate", {}, {"scheduled": ago(3600)},
     {"pods": [pod_usage("p", "500m", "1Gi", priority="koord-batch")]},
     {"node_delta": [0, 0], "node_est": [2000, 2 * G], "prod_usage": [0, 0], "prod_delta": [2000, 2 * G]}),
    ("a batch pod reported as prod is not prod", {}, {"scheduled": ago(3600), "labels": {"koordinator.sh/priority-class": "koord-batch"},
     "cpu": None, "memory": None, "requests": {"kubernetes.io/batch-cpu": "2000", "kubernetes.io/batch-memory": "2Gi"}},
     {"pods": [pod_usage("p", "500m", "1Gi")]},
     {"node_delta": [0, 0], "node_est": [2000, 2 * G], "prod_usage": [0, 0], "prod_delta": [0, 0]}),
    ("prod pod asking for nothing: default estimate", {},
     {"scheduled": ago(30), "labels": {"koordinator.sh/priority-class": "koord-prod"}, "cpu": None, "memory": None},
     {"pods": [pod_usage("p", "100m", "100Mi")]},
     {"node_delta": [150, 100 * 2**20], "node_est": [250, 200 * 2**20], "prod_usage": [100, 100 * 2**20],
      "prod_delta": [150, 100 * 2**20]}),
    ("zero estimate: never estimated, prod usage still counted", {"allowCustomizeEstimation": True},
     {"annotations": {"scheduling.koordinator.sh/load-estimated-scaling-factors": '{"cpu": 0, "memory": 0}'}},
     {"pods": [pod_usage("p", "500m", "1Gi")]},
     {"node_delta": [0, 0], "node_est": [0, 0], "prod_usage": [500, G], "prod_delta": [0, 0]}),
    ("prod usage includes system usage", {"prodUsageIncludeSys": True}, {"scheduled": ago(3600)},
     {"system": ("1", "1Gi"), "pods": [pod_usage("p", "500m", "1Gi")]},
     {"node_delta": [0, 0], "node_est": [2000, 2 * G], "prod_usage": [1500, 2 * G], "prod_delta": [0, 0]}),
    ("no updateTime ever: everything estimated", {}, {"scheduled": ago(3600)}, {"update": None, "pods": [pod_usage("p", "500m", "1Gi")]},
     {"node_delta": [1500, G], "node_est": [2000, 2 * G], "prod_usage": [500, G], "prod_delta": [1500, G]}),
]  # fmt: skip


@pytest.mark.parametrize(("args", "pod_kw", "metric", "want"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_assigned_pod_contribution(
    args: dict[str, Any], pod_kw: dict[str, Any], metric: dict[str, Any], want: dict[str, list[int]]
) -> None:
    kw = {"cpu": "2", "memory": "2Gi", **pod_kw}
    for order in ("pod first", "metric first"):
        w = World({**BASE, **args}, node("n"))
        steps = [pod("p", "n", **kw), node_metric("n", **metric)]
        for raw in steps if order == "pod first" else reversed(steps):
            w.apply(raw)
        assert sums(rec(w)) == want, order


def test_zero_estimate_is_not_cached_as_estimated() -> None:
    w = World(BASE, node("n"), node_metric("n"))
    w.apply(pod("free", "n", priority=3500))  # free pods estimate to 0
    assert w.plugin.store.pods["default/free"].est is None
    assert sums(rec(w))["node_est"] == [0, 0]


def test_removal_reverses_exactly() -> None:
    w = World(BASE, node("n"), node_metric("n", pods=[pod_usage("a", "1", "1Gi")]))
    w.apply(pod("a", "n", scheduled=ago(30)))
    w.apply(pod("b", "n"))
    w.apply(pod("a", "n", scheduled=ago(30)), deleted=True)
    w.apply(pod("b", "n", phase="Succeeded"))
    r = rec(w)
    assert sums(r) == {k: [0, 0] for k in ("node_delta", "node_est", "prod_usage", "prod_delta")}
    assert w.plugin.store.pods == {}


def test_record_dropped_when_empty() -> None:
    w = World(BASE, node("n"), node_metric("n"))
    w.apply(pod("a", "n"))
    w.apply(node_metric("n"), deleted=True)
    assert "n" in w.plugin.store.records  # still has a pod
    w.apply(pod("a", "n"), deleted=True)
    assert "n" not in w.plugin.store.records


def test_deleted_metric_means_no_metric() -> None:
    w = World(BASE, node("n", cpu="100", memory="100Gi"), node_metric("n", cpu="99"))
    assert w.filter(pod("x")) == {"n": "node(s) cpu usage exceed threshold"}
    w.apply(node_metric("n"), deleted=True)
    assert w.filter(pod("x")) == {"n": None}
    assert w.score(pod("x")) == {"n": 0}


def test_update_without_time_keeps_the_window_but_is_expired() -> None:
    w = World(BASE, node("n", cpu="100", memory="100Gi"))
    w.apply(pod("p", "n", cpu="2", memory="2Gi", scheduled=ago(3600)))
    w.apply(node_metric("n", pods=[pod_usage("p", "500m", "1Gi")]))
    w.apply(node_metric("n", update=None, pods=[pod_usage("p", "500m", "1Gi")]))
    assert sums(rec(w))["node_delta"] == [0, 0]  # window still T0: not estimated
    assert w.filter(pod("x")) == {"n": "node(s) nodeMetric expired"}


def test_label_only_changes_are_ignored_spec_changes_are_not() -> None:
    w = World(BASE, node("n"), node_metric("n"))
    w.apply(pod("p", "n", cpu="2"))
    assert w.plugin.store.pods["default/p"].prod
    w.apply(pod("p", "n", cpu="2", labels={"koordinator.sh/priority-class": "koord-batch"}))
    assert w.plugin.store.pods["default/p"].prod  # upstream keeps the cached evaluation
    w.apply(pod("p", "n", cpu="3", labels={"koordinator.sh/priority-class": "koord-batch"}))
    assert not w.plugin.store.pods["default/p"].prod
    assert sums(rec(w))["node_est"][0] == 250  # batch: no batch-cpu requested, the default


def test_conditions_change_re_timestamps() -> None:
    w = World(BASE, node("n"), node_metric("n", pods=[pod_usage("p", "500m", "1Gi")]))
    w.apply(pod("p", "n", cpu="2", memory="2Gi"))
    assert sums(rec(w))["node_delta"] == [1500, G]
    w.apply(pod("p", "n", cpu="2", memory="2Gi", scheduled=ago(3600)))
    assert sums(rec(w))["node_delta"] == [0, 0]


def test_node_name_change_moves_the_pod() -> None:
    w = World(BASE, node("a"), node("b"), node_metric("a"), node_metric("b"))
    w.apply(pod("p", "a"))
    w.apply(pod("p", "b"))
    assert sums(rec(w, "a"))["node_est"] == [0, 0]
    assert sums(rec(w, "b"))["node_est"] == [1000, G]


def test_reserve_pods_are_not_cached() -> None:
    w = World(BASE, node("n"), node_metric("n"))
    w.apply(pod("r", "n", annotations={"scheduling.koordinator.sh/reserve-pod": "true"}))
    assert w.plugin.store.pods == {}


def test_metric_update_re_evaluates_all_pods_of_the_node() -> None:
    w = World(BASE, node("n"), node_metric("n"))
    w.apply(pod("p", "n", cpu="2", memory="2Gi", scheduled=ago(3600)))
    assert sums(rec(w))["node_delta"] == [2000, 2 * G]
    w.apply(node_metric("n", pods=[pod_usage("p", "500m", "1Gi")]))
    assert sums(rec(w))["node_delta"] == [0, 0]
    # a later metric whose window still contains the pod's scheduling time
    w.apply(node_metric("n", update=ago(3600) + (T0 - ago(30)), pods=[pod_usage("p", "500m", "1Gi")]))
    assert sums(rec(w))["node_delta"] == [1500, G]


def test_aggregated_alias_is_the_longest_non_empty_duration() -> None:
    agg = {"5m0s": {"p95": ("15", "49Gi")}, "30m0s": {"p95": ("16", "50Gi")}, "1h": {"p99": ("1", "1")}}
    w = World(BASE, node("n"), node_metric("n", agg=agg))
    r = rec(w)
    assert r.agg[("p95", 0)] == {"cpu": 16000, "memory": 50 * G}
    assert r.agg[("p99", 0)] == {"cpu": 1000, "memory": 1}
    assert ("p95", 600 * 10**9) not in r.agg


def test_slots_follow_nodes_added_and_removed_later() -> None:
    w = World(BASE)
    w.apply(pod("p", "late", cpu="90", memory="1Gi"))
    w.apply(node_metric("late", cpu="1"))
    w.apply(node("late", cpu="100", memory="100Gi"))
    assert w.filter(pod("x")) == {"late": "node(s) cpu usage exceed threshold"}
    w.apply(node("late", cpu="1000", memory="100Gi"))  # an update without a label change
    assert w.filter(pod("x")) == {"late": None}
    w.apply(node("late"), deleted=True)
    w.apply(node("other", cpu="100", memory="100Gi"))  # reuses the freed slot
    assert w.filter(pod("x")) == {"other": None}
    st = w.plugin.store
    s = w.state.nodes.slot["other"]
    assert not st.has_metric[s] and not st.est[s].any()


def test_many_nodes_grow_the_arrays() -> None:
    w = World(BASE)
    for i in range(40):
        w.apply(node(f"n{i}", cpu="100", memory="100Gi"))
        w.apply(node_metric(f"n{i}", cpu=str(i * 2)))
    got = w.filter(pod("x"))
    assert [n for n, r in got.items() if r] == [f"n{i}" for i in range(33, 40)]


def test_naive_now_is_utc() -> None:
    w = World(BASE, node("n"), node_metric("n"))
    naive = datetime(2026, 11, 1, 12, 3, 0)  # 180 s after T0
    assert w.filter(pod("x"), now=naive) == {"n": "node(s) nodeMetric expired"}


def test_arrays_match_records() -> None:
    w = World(BASE, node("a"), node("b"), node_metric("a", cpu="3", pods=[pod_usage("p", "1")]))
    w.apply(pod("p", "a", scheduled=ago(10)))
    w.apply(pod("q", "b"))
    st = w.plugin.store
    st.sync(w.state)
    st.views()  # rows are written when read
    for name, r in st.records.items():
        s = w.state.nodes.slot[name]
        assert np.array_equal(st.delta[s], r.node_delta)
        assert np.array_equal(st.est[s], r.node_est)
        assert np.array_equal(st.prod[s], r.prod_usage + r.prod_delta)


def test_deleted_metric_rebuilds_sums_from_pods() -> None:
    w = World({**BASE, "prodUsageIncludeSys": True}, node("n"))
    w.apply(pod("p", "n", scheduled=ago(3600)))
    w.apply(node_metric("n", system=("1", "1Gi"), pods=[pod_usage("p", "500m", "1Gi")]))
    assert sums(rec(w))["prod_usage"] == [1500, 2 * G]
    w.apply(node_metric("n"), deleted=True)
    assert sums(rec(w)) == {
        "node_delta": [1000, G],
        "node_est": [1000, G],
        "prod_usage": [0, 0],
        "prod_delta": [1000, G],
    }


def test_attach_to_a_state_that_already_has_pods() -> None:
    from berth.core.cache.state import ClusterState
    from berth.core.plugins.loadawarescheduling import LoadAwareScheduling
    from berth.core.plugins.loadawarescheduling.args import parse_args

    from .builders import obj

    state = ClusterState()
    for raw in (node("n", cpu="100", memory="100Gi"), pod("a", "n", cpu="60"), pod("b", "n", cpu="10")):
        state.apply(obj(raw))
    plugin = LoadAwareScheduling(parse_args(BASE))
    plugin.store.attach(state)
    plugin.store.attach(state)  # idempotent
    state.apply(obj(node_metric("n", cpu="1")))
    assert sums(plugin.store.records["n"])["node_est"] == [70_000, 2 * G]


_STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("pod"), st.sampled_from("pqr"), st.sampled_from([30, 3600]), st.sampled_from(["1", "2"])),
        st.tuples(st.just("gone"), st.sampled_from("pqr")),
        st.tuples(
            st.just("metric"),
            st.sampled_from([0, 30, 120]),
            st.lists(st.tuples(st.sampled_from("pqr"), st.sampled_from(["koord-prod", "koord-batch"])), max_size=2),
        ),
    ),
    max_size=12,
)


@settings(max_examples=150, deadline=None)
@given(_STEPS, st.booleans())
def test_sums_are_a_full_recount(steps: list[tuple[Any, ...]], include_sys: bool) -> None:
    """However pods and metrics (with pods reported or not) come and go, each node's sums and rows
    are those of a store that sees only the pods left and the last metric."""
    args = {**BASE, "prodUsageIncludeSys": include_sys}
    w = World(args, node("n"))
    alive: dict[str, dict[str, Any]] = {}
    last: dict[str, Any] | None = None
    for rv, step in enumerate(steps, start=1):
        if step[0] == "pod":
            alive[step[1]] = pod(step[1], "n", cpu=step[3], scheduled=ago(step[2]), rv=str(rv))
            w.apply(alive[step[1]])
        elif step[0] == "gone":
            alive.pop(step[1], None)
            w.apply(pod(step[1], "n", rv=str(rv)), deleted=True)
        else:
            usage = [pod_usage(name, "500m", "1Gi", priority=prio) for name, prio in step[2]]
            last = node_metric("n", update=T0 - timedelta(seconds=step[1]), pods=usage, system=("1", "1Gi"), rv=str(rv))
            w.apply(last)
    fresh = World(args, node("n"), *alive.values(), *([last] if last is not None else []))
    got, want = w.plugin.store.records.get("n"), fresh.plugin.store.records.get("n")
    assert (got is None) == (want is None)
    if got is None or want is None:
        return
    assert sums(got) == sums(want)
    for store, world in ((w.plugin.store.views(), w), (fresh.plugin.store.views(), fresh)):
        s = world.state.nodes.slot["n"]
        assert store.delta[s].tolist() == want.node_delta.tolist() and store.est[s].tolist() == want.node_est.tolist()
        assert store.prod[s].tolist() == (want.prod_usage + want.prod_delta).tolist()


_DOZE_STEPS = st.lists(
    st.one_of(
        st.tuples(  # a pod, its node ("" pending), PodScheduled age and priority-class label
            st.just("pod"),
            st.sampled_from("pqr"),
            st.sampled_from(["a", "b", ""]),
            st.sampled_from([30, 3600]),
            st.sampled_from(["", "koord-prod", "koord-batch"]),
        ),
        st.tuples(st.just("gone"), st.sampled_from("pqr")),
        st.tuples(
            st.just("metric"),
            st.sampled_from("ab"),
            st.sampled_from([None, 0, 30, 120]),
            st.lists(st.tuples(st.sampled_from("pqr"), st.sampled_from(["koord-prod", "koord-batch"])), max_size=2),
            st.sampled_from([None, "5m0s"]),
        ),
        st.tuples(st.just("unmetric"), st.sampled_from("ab")),
        st.tuples(st.just("node"), st.just("b")),
    ),
    max_size=14,
)


@settings(max_examples=200, deadline=None)
@given(_DOZE_STEPS, st.booleans(), st.integers(min_value=0, max_value=14), st.booleans())
def test_a_dozing_store_wakes_as_the_one_that_stayed_awake(
    steps: list[tuple[Any, ...]], include_sys: bool, doze_at: int, aggregated: bool
) -> None:
    """A store that dozes (NodeMetrics and pods only kept until it is read) reads, once woken, exactly
    as one that took every change in as it came: records, pods' sums and every slot array."""
    args = _args(include_sys, aggregated)
    awake, dozing = World(args, node("a")), World(args, node("a"))
    for rv, step in enumerate(steps, start=1):
        if rv - 1 == doze_at:
            dozing.state.doze()
        change, deleted = _step(step, rv)
        awake.apply(change, deleted)
        dozing.apply(change, deleted)
    _same_store(awake, dozing)


def _args(include_sys: bool, aggregated: bool) -> dict[str, Any]:
    """The plugin's args for the two store properties: system usage counted or not, aggregated or not."""
    args: dict[str, Any] = {**BASE, "prodUsageIncludeSys": include_sys}
    if aggregated:
        args["aggregated"] = {
            "usageThresholds": {"cpu": 70},
            "usageAggregationType": "p95",
            "scoreAggregationType": "p95",
        }
    return args


def _step(step: tuple[Any, ...], rv: int) -> tuple[dict[str, Any], bool]:
    """One of _DOZE_STEPS as a change: (object, deleted)."""
    if step[0] == "pod":  # a label-only change keeps the estimate made before
        labels = {LABEL_PRIORITY_CLASS: step[4]} if step[4] else None
        return pod(step[1], step[2], scheduled=ago(step[3]), labels=labels, rv=str(rv)), False
    if step[0] == "gone":
        return pod(step[1], "a", rv=str(rv)), True
    if step[0] == "metric":
        _, name, age, reported, duration = step
        return node_metric(
            name,
            update=None if age is None else T0 - timedelta(seconds=age),
            pods=[pod_usage(p, "500m", "1Gi", priority=prio) for p, prio in reported],
            system=("1", "1Gi"),
            agg=None if duration is None else {duration: {"p95": ("3", "2Gi")}},
            rv=str(rv),
        ), False
    if step[0] == "unmetric":
        return node_metric(step[1], rv=str(rv)), True
    return node(step[1]), False


def _same_store(want: World, got: World) -> None:
    """The two worlds' stores read alike: records, pods' sums, every slot array, Filter and Score."""
    a, d = want.plugin.store.views(), got.plugin.store.views()
    assert sorted(a.records) == sorted(d.records)
    for name, w in a.records.items():
        g = d.records[name]
        assert sums(g) == sums(w)
        assert (g.metric, g.window, g.interval, sorted(g.pods)) == (w.metric, w.window, w.interval, sorted(w.pods))
    read_where = {"agg_f": a.agg_f_ok, "agg_s": a.agg_s_ok}  # rows read only where these say so
    for key, value in vars(a).items():
        if isinstance(value, np.ndarray) or (isinstance(value, list) and value and isinstance(value[0], np.ndarray)):
            ok = read_where.get(key, slice(None))
            assert np.array_equal(np.asarray(value)[ok], np.asarray(getattr(d, key))[ok]), key
    assert want.filter(pod("x", cpu="2")) == got.filter(pod("x", cpu="2"))
    assert want.score(pod("x", cpu="2")) == got.score(pod("x", cpu="2"))


@settings(max_examples=200, deadline=None)
@given(_DOZE_STEPS, st.booleans(), st.booleans(), st.sets(st.integers(min_value=0, max_value=14)))
def test_rows_written_when_read_are_those_written_at_once(
    steps: list[tuple[Any, ...]], include_sys: bool, aggregated: bool, reads: set[int]
) -> None:
    """A store whose slot rows are written only when read (`views`) reads as one read after every
    change, which writes them as each change comes."""
    args = _args(include_sys, aggregated)
    every, some = World(args, node("a")), World(args, node("a"))
    for rv, step in enumerate(steps, start=1):
        change, deleted = _step(step, rv)
        every.apply(change, deleted)
        every.plugin.store.views()
        some.apply(change, deleted)
        if rv in reads:
            some.plugin.store.views()
    _same_store(every, some)
