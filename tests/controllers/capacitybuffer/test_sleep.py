"""The buffer controller's cluster view sleeps until the first CapacityBuffer (ClusterState.sleep):
once woken, at whatever point, it reads exactly as a view that took every event as it came."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import msgspec
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from berth.core.api.autoscaling.model import ACTIVE_CAPACITY
from berth.core.api.kinds import convert
from berth.core.api.watch import WatchEvent, format_time
from berth.core.cache.nodes import NodeTable
from berth.core.cache.state import ClusterState
from berth.core.config.kubeschedulerconfig import parse_config
from berth.core.pipeline.buffers import BufferEngine
from berth.core.plugins.helper.podindex import PodIndex
from berth.core.plugins.loadawarescheduling.store import NodeMetricStore
from berth.core.plugins.tainttoleration import PreferTaints
from berth.core.scheduler.nominator import Nominator

from .builders import buffer, pod_template

T0 = datetime(2026, 11, 2, 12, 0, 0, tzinfo=UTC)
NODES, PODS = "abc", "pqrs"


def _node(name: str, cpu: int, zone: str, taint: bool) -> dict[str, Any]:
    alloc = {"cpu": str(cpu), "memory": "8Gi", "pods": "110"}
    spec: dict[str, Any] = {"taints": [{"key": "t", "value": "v", "effect": "PreferNoSchedule"}]} if taint else {}
    labels = {"kubernetes.io/hostname": name, "topology.kubernetes.io/zone": zone}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "spec": spec,
        "status": {"allocatable": alloc, "capacity": alloc, "images": [{"names": ["app"], "sizeBytes": 300_000_000}]},
    }


def _pod(name: str, ns: str, node: str, cpu: str, app: str, extra: str) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "main", "image": "app", "resources": {"requests": {"cpu": cpu}}}
    spec: dict[str, Any] = {"containers": [container]}
    if node:
        spec["nodeName"] = node
    if extra == "port":
        container["ports"] = [{"containerPort": 80, "hostPort": 8080}]
    elif extra == "anti":
        term = {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": "kubernetes.io/hostname"}
        spec["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    elif extra == "high":
        spec["priorityClassName"] = "high"
    elif extra == "claim":
        spec["volumes"] = [{"name": "v", "persistentVolumeClaim": {"claimName": "data"}}]
    status: dict[str, Any] = {"phase": "Succeeded" if extra == "done" else "Running" if node else "Pending"}
    if extra == "nominated":
        status["nominatedNodeName"] = "a"
    meta = {"name": name, "namespace": ns, "uid": f"uid-{name}", "labels": {"app": app}}
    meta["creationTimestamp"] = "2026-11-02T10:00:00Z"
    if extra == "deleting":
        meta["deletionTimestamp"] = "2026-11-02T11:00:00Z"
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}


def _metric(name: str, cpu: str, pods: list[str], at: datetime) -> dict[str, Any]:
    usage = {"resources": {"cpu": cpu, "memory": "1Gi"}}
    reported = [{"namespace": "default", "name": p, "priority": "koord-prod", "podUsage": usage} for p in pods]
    return {
        "apiVersion": "slo.koordinator.sh/v1alpha1",
        "kind": "NodeMetric",
        "metadata": {"name": name},
        "status": {"updateTime": format_time(at), "nodeMetric": {"nodeUsage": usage}, "podsMetric": reported},
    }


def _others(kind: str, name: str, value: int) -> dict[str, Any]:
    """The objects of the detached extensions' kinds (and the buffers' own)."""
    if kind == "PriorityClass":
        return {"apiVersion": "scheduling.k8s.io/v1", "kind": kind, "metadata": {"name": name}, "value": value}
    if kind == "Namespace":
        labels = {"kubernetes.io/metadata.name": name, "team": str(value)}
        return {"apiVersion": "v1", "kind": kind, "metadata": {"name": name, "labels": labels}}
    if kind == "Service":
        meta = {"name": name, "namespace": "default"}
        return {"apiVersion": "v1", "kind": kind, "metadata": meta, "spec": {"selector": {"app": f"w{value % 2}"}}}
    if kind == "ReplicaSet":
        meta = {"name": name, "namespace": "default", "uid": f"uid-{name}"}
        spec = {"replicas": value, "selector": {"matchLabels": {"app": f"w{value % 2}"}}}
        return {"apiVersion": "apps/v1", "kind": kind, "metadata": meta, "spec": spec}
    if kind == "CSINode":
        drivers = [{"name": "csi.example.com", "nodeID": name, "allocatable": {"count": value}}]
        return {
            "apiVersion": "storage.k8s.io/v1",
            "kind": kind,
            "metadata": {"name": name},
            "spec": {"drivers": drivers},
        }
    if kind == "PodDisruptionBudget":
        spec = {"selector": {"matchLabels": {"app": f"w{value % 2}"}}}
        meta = {"name": name, "namespace": "default"}
        return {
            "apiVersion": "policy/v1",
            "kind": kind,
            "metadata": meta,
            "spec": spec,
            "status": {"disruptionsAllowed": value},
        }
    if kind == "PodTemplate":
        return pod_template(name, cpu=f"{value}00m", memory="256Mi")
    return buffer(name, template="tpl", replicas=value, strategy=ACTIVE_CAPACITY)


_STEPS = st.lists(
    st.one_of(
        st.tuples(
            st.just("node"), st.sampled_from(NODES), st.sampled_from([2, 4]), st.sampled_from("xy"), st.booleans()
        ),
        st.tuples(
            st.just("pod"),
            st.sampled_from(PODS),
            st.sampled_from(["default", "other"]),
            st.sampled_from(["", *NODES]),
            st.sampled_from(["500m", "1"]),
            st.sampled_from(["w0", "w1"]),
            st.sampled_from(["", "port", "anti", "high", "claim", "done", "nominated", "deleting"]),
        ),
        st.tuples(
            st.just("metric"),
            st.sampled_from(NODES),
            st.sampled_from(["1", "3"]),
            st.lists(st.sampled_from(PODS), max_size=2),
        ),
        st.tuples(
            st.just("other"),
            st.sampled_from(["PriorityClass", "Namespace", "Service", "ReplicaSet", "CSINode", "PodDisruptionBudget"]),
            st.integers(1, 3),
        ),
        st.tuples(st.just("other"), st.sampled_from(["PodTemplate", "CapacityBuffer"]), st.integers(1, 3)),
        st.tuples(st.just("gone"), st.integers(0, 40)),  # the object of an earlier step deleted
        st.tuples(st.just("stale"), st.integers(0, 40)),  # an earlier step's event again, its resourceVersion old
    ),
    max_size=30,
)


def _events(steps: list[tuple[Any, ...]]) -> list[WatchEvent]:
    out: list[WatchEvent] = []
    made: list[tuple[dict[str, Any], int]] = []  # each step's object, with its resourceVersion
    for i, step in enumerate(steps, start=1):
        ts, kind = T0 + timedelta(seconds=20 * i), "ADDED"
        if step[0] in ("gone", "stale"):
            if not made:
                continue
            obj, rv = made[step[1] % len(made)]
            if step[0] == "stale":
                out.append(WatchEvent("MODIFIED", _with_rv(obj, rv), ts, i))
                continue
            kind = "DELETED"
        elif step[0] == "node":
            obj = _node(*step[1:])
        elif step[0] == "pod":
            obj = _pod(*step[1:])
        elif step[0] == "metric":
            obj = _metric(*step[1:], ts - timedelta(seconds=30))
        else:
            name = {"PriorityClass": "high", "Namespace": "other", "CSINode": "a", "PodTemplate": "tpl"}
            obj = _others(step[1], name.get(step[1], "x"), step[2])
        made.append((obj, i))
        out.append(WatchEvent(kind, _with_rv(obj, i), ts, i))
    return out


def _with_rv(obj: dict[str, Any], rv: int) -> dict[str, Any]:
    return {**obj, "metadata": {**obj["metadata"], "resourceVersion": str(rv)}}


# two nodes and the buffers' pod template first (later steps may delete them), so that fake pods fit
_START = [("node", "a", 4, "x", False), ("node", "b", 2, "y", True), ("other", "PodTemplate", 1)]


@settings(max_examples=300, deadline=None)
@given(_STEPS, st.integers(min_value=0, max_value=34))
def test_a_view_woken_late_reads_as_one_that_took_every_event(steps: list[tuple[Any, ...]], wake_at: int) -> None:
    """Two buffer controllers, one whose view never sleeps and one whose view sleeps until the first
    buffer (or is woken at wake_at, whichever comes first), emit the same records on every event
    and, at the end, hold the same state: the core's objects and node table, every extension's
    state, and the same decisions for pods placed and released as fake pods are."""
    config = parse_config(None)
    awake, sleeping = BufferEngine(config, sleep=False), BufferEngine(config)
    assert sleeping.state.asleep and not awake.state.asleep
    for i, ev in enumerate(_events([*_START, *steps])):
        if i == wake_at:
            sleeping.state.wake()
        decoded = ev.decoded()
        assert _records(awake, decoded) == _records(sleeping, decoded)
    sleeping.state.wake()
    _same_view(awake, sleeping)


def _records(engine: BufferEngine, ev: Any) -> list[Any]:
    return [msgspec.to_builtins(r) for r in engine.handle(ev)]


def _same_view(want: BufferEngine, got: BufferEngine) -> None:
    a, b = want.state, got.state
    _same(_core(a), _core(b))
    assert [type(e) for e in a.extensions] == [type(e) for e in b.extensions]
    for x, y in zip(a.extensions, b.extensions, strict=True):
        assert _extension(x, a) == _extension(y, b), type(x).__name__
    now = T0 + timedelta(hours=1)
    placed: list[str] = []
    for name, cpu, extra in (("f1", "1", ""), ("f2", "3", "anti"), ("f3", "500m", "port"), ("f4", "1", "high")):
        pod = convert(_pod(name, "default", "", cpu, "w0", extra))
        one, two = want.scheduler.decide(pod, now), got.scheduler.decide(pod, now)
        assert one.decision == two.decision
        assert (one.reservation is None) == (two.reservation is None)
        if one.reservation is not None and two.reservation is not None:
            a.reserve(one.reservation)
            b.reserve(two.reservation)
            placed.append(pod.key)
    for key in placed:
        a.release(key)
        b.release(key)
    assert _core(a) == _core(b)


def _same(one: tuple[dict[str, Any], ...], two: tuple[dict[str, Any], ...]) -> None:
    for x, y in zip(one, two, strict=True):
        assert {k: v for k, v in x.items() if y.get(k) != v} == {k: v for k, v in y.items() if x.get(k) != v}


def _core(state: ClusterState) -> Any:
    nodes = state.nodes
    table = {
        k: _canon(v)
        for k, v in vars(nodes).items()
        if k
        not in (
            "_alloc",
            "_used",
            "_columns",
            "_masks",
            "_slot_lists",
            "_rank",
            "label_version",
            "taint_set",
            "taint_sets",
            "_taint_ids",
        )
    }
    table["resources"] = {r: (nodes.allocatable(r).tolist(), nodes.requested(r).tolist()) for r in nodes._columns}
    table["taints"] = [nodes.taint_sets[t] for t in nodes.taint_set.tolist()]
    kept = ("pods", "pvs", "pvcs", "classes", "drivers", "capacities", "pvs_by_claim", "_rv", "_usage", "_held")
    return table, {k: _canon(getattr(state, k)) for k in kept}


def _extension(ext: Any, state: ClusterState) -> Any:
    """What an extension holds, as plugins read it: dicts in any order, empty entries and zero counts
    left out (an awake view keeps some that went empty)."""
    if isinstance(ext, NodeMetricStore):  # its own property test holds it (tests/plugins/loadawarescheduling)
        ext.views()
        read_where = {"agg_f": ext.agg_f_ok, "agg_s": ext.agg_s_ok}  # rows read only where these say so
        return {
            k: np.asarray(v)[read_where.get(k, slice(None))].tolist()
            for k, v in vars(ext).items()
            if isinstance(v, np.ndarray) or (isinstance(v, list) and v and isinstance(v[0], np.ndarray))
        }, {name: _record(r) for name, r in ext.records.items()}
    if isinstance(ext, PreferTaints):  # its distinct sets are numbered as first seen
        return [ext.sets[i] for i in ext.ids(state.nodes)[: state.nodes.size].tolist()]
    if isinstance(ext, PodIndex):  # a term whose pods count on no slot (their node left) may stay filed
        held = {a: {g: None for g in at if ext._groups.get(g)} for a, at in ext._group_at.items()}
        return _canon({**vars(ext), "_group_at": held, "_owner": None, "_size": None})
    if isinstance(ext, Nominator):  # the nominations, and in the order filters read them; not its caches
        held = {k: getattr(ext, k) for k in ("_waiting", "_held", "_cleared")}
        return _canon(held), [(k, _canon(msgspec.to_builtins(p))) for k, p in ext._every()]
    # NonZeroRequested's _nodes (the view's node table) and PodIndex's _size are taken on first use
    return _canon({k: v for k, v in vars(ext).items() if k not in ("_owner", "_nodes", "_size")})


def _record(r: Any) -> Any:
    sums = [v.tolist() for v in (r.node_delta, r.node_est, r.prod_usage, r.prod_delta)]
    return sums, r.metric, r.window, r.interval, sorted(r.pods)


def _canon(x: Any) -> Any:
    if isinstance(x, dict):  # Counters too
        items = [(_canon(k), c) for k, v in x.items() if not _empty(c := _canon(v))]
        return ("dict", sorted(items, key=repr))
    if isinstance(x, set | frozenset):
        return ("set", sorted((_canon(v) for v in x), key=repr))
    if isinstance(x, list | tuple):
        return [_canon(v) for v in x]
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, NodeTable | ClusterState):
        return type(x).__name__  # a reference to the view itself
    if isinstance(x, msgspec.Struct | type) or not hasattr(x, "__dict__"):
        return x
    return type(x).__name__, _canon(vars(x))


def _empty(c: Any) -> bool:
    """An empty container or zero counts, canonical."""
    if isinstance(c, list):
        return all(type(v) is int and v == 0 for v in c)
    return c in (("dict", []), ("set", [])) or (type(c) is int and c == 0)


NODE_A = ("node", "a", 4, "x", False)
POD_P = ("pod", "p", "default", "a", "1", "w0", "")
TEMPLATE = ("other", "PodTemplate", 1)  # 100m cpu a fake pod
BUFFER = ("other", "CapacityBuffer", 2)
TICKS = [("stale", 0)] * 3  # the clock moves on: readiness is counted again after a resync period


@pytest.mark.parametrize(
    ("steps", "ready"),
    [
        pytest.param([NODE_A, POD_P, TEMPLATE, BUFFER], [2], id="a buffer after nodes and pods"),
        pytest.param(
            [NODE_A, TEMPLATE, BUFFER, ("gone", 2), POD_P, ("pod", "q", "default", "a", "500m", "w1", "anti"), BUFFER],
            [2],  # the same status again: not emitted
            id="a buffer deleted, then added again",
        ),
        pytest.param(
            [
                ("other", "PriorityClass", 3),
                ("other", "Namespace", 2),
                ("other", "CSINode", 1),
                ("gone", 0),
                ("gone", 1),
                ("gone", 2),
                NODE_A,
                TEMPLATE,
                BUFFER,
            ],
            [2],
            id="objects of detached kinds deleted before the first buffer",
        ),
        pytest.param(
            [
                NODE_A,
                ("node", "b", 2, "y", True),
                POD_P,
                ("gone", 1),
                ("gone", 2),
                ("stale", 2),
                ("stale", 1),
                TEMPLATE,
                BUFFER,
            ],
            [2],
            id="a pod and a node deleted before the first buffer, their stale events after",
        ),
        pytest.param(
            [NODE_A, ("pod", "p", "default", "a", "3950m", "w0", "port"), TEMPLATE, BUFFER, POD_P, *TICKS],
            [0, 2],
            id="no room until a pod shrinks",
        ),
        pytest.param(
            [TEMPLATE, BUFFER, NODE_A, ("metric", "a", "3", ["p"]), POD_P, *TICKS],
            [0],  # the node's metric: 3 of its 4 cpus used, above LoadAwareScheduling's 65%
            id="nodes after the buffer",
        ),
    ],
)
def test_sleeping_until_the_first_buffer(steps: list[tuple[Any, ...]], ready: list[int]) -> None:
    """The records and the view of a controller that slept until its first buffer are those of one
    that never slept; the view stays awake once built, whatever buffers come and go."""
    config = parse_config(None)
    awake, sleeping = BufferEngine(config, sleep=False), BufferEngine(config)
    got: list[Any] = []
    for ev in _events(steps):
        decoded = ev.decoded()
        records = _records(sleeping, decoded)
        assert _records(awake, decoded) == records
        assert sleeping.state.asleep == (not got and not sleeping.store.buffers)
        got += records
    assert [r["readyReplicas"] for r in got] == ready
    _same_view(awake, sleeping)


def test_an_asleep_view_keeps_only_what_it_is_built_from() -> None:
    """Asleep: the buffers' store and the load-aware store (which dozes) take events, the rest is
    kept; pods' requests are counted on their nodes once awake."""
    engine = BufferEngine(parse_config(None))
    for ev in _events([NODE_A, POD_P, ("other", "PriorityClass", 3)]):
        engine.handle(ev.decoded())
    state = engine.state
    assert [type(e).__name__ for e in state.extensions] == ["BufferStore", "NodeMetricStore", "_Kept"]
    assert state.nodes.requested("cpu").sum() == 0 and "default/p" in state.pods
    state.wake()
    assert not state.asleep and state.nodes.requested("cpu")[state.nodes.slot["a"]] == 1000
    assert "_Kept" not in [type(e).__name__ for e in state.extensions]
    with pytest.raises(ValueError, match="sleeps from its start"):
        state.sleep()


def test_an_extension_attached_while_asleep_stays() -> None:
    state = ClusterState()
    state.sleep()
    store = NodeMetricStore.__new__(NodeMetricStore)  # any extension: only its place is checked
    store.kinds = ()
    store.node_changed = store.pod_changed = lambda *a: None  # type: ignore[method-assign]
    state.attach(store)
    state.wake()
    assert state.extensions == [store]
