"""The extender API as kube-scheduler calls it: filter, prioritize and bind over the scorer's engine."""

from __future__ import annotations

from typing import Any

import pytest

from berth.core.api.kinds import pod_from_raw
from berth.core.pipeline.scorer import ScorerEngine
from berth.core.plugins.volumebinding import BIND_CONFLICT
from berth_scorer.extender import MAX_EXTENDER_PRIORITY, UNKNOWN_NODE, to_extender_score
from tests.builders import node, pod, pv, pvc, storage_class
from tests.extender.conftest import engine_with, events

NODES = ("n1", "n2", "n3", "small")


def cluster() -> ScorerEngine:
    return engine_with(
        storage_class(),
        node("n1"),
        node("n2", cpu="16"),
        node("n3"),
        node("small", cpu="1"),
        pv("pv1", "10Gi", on="n1"),
        pv("pv2", "20Gi", on="n2"),
        pv("pv-small", "10Gi", on="small"),
        pvc("a"),
        pvc("b"),
    )


def args(raw_pod: dict[str, Any], names: tuple[str, ...] = NODES) -> dict[str, Any]:
    """ExtenderArgs for a nodeCacheCapable extender: node names only."""
    return {"Pod": raw_pod, "Nodes": None, "NodeNames": list(names)}


@pytest.mark.asyncio
async def test_filter_splits_failed_and_unresolvable(serve: Any) -> None:
    engine = cluster()
    api = await serve(lambda: engine)
    # never seen by the scorer: the pod comes only in ExtenderArgs
    got = await api.post("filter", args(pod("web", ("a",), cpu="2"), (*NODES, "ghost")))
    assert got["NodeNames"] == ["n1", "n2"]
    assert got["Nodes"] is None and got["Error"] == ""
    assert got["FailedNodes"] == {"ghost": UNKNOWN_NODE}
    # more cpu than small's whole allocatable: UnschedulableAndUnresolvable, as kube 1.36's fitsRequest
    assert got["FailedAndUnresolvableNodes"] == {"small": "Insufficient cpu", "n3": BIND_CONFLICT}
    assert "default/web" not in engine.state.pods  # nothing kept


@pytest.mark.asyncio
async def test_filter_answers_only_for_the_names_sent(serve: Any) -> None:
    engine = cluster()
    api = await serve(lambda: engine)
    got = await api.post("filter", args(pod("web", ("a",)), ("n2", "n3")))
    assert got["NodeNames"] == ["n2"]
    assert got["FailedNodes"] == {} and set(got["FailedAndUnresolvableNodes"]) == {"n3"}


@pytest.mark.asyncio
async def test_filter_with_node_objects_when_not_cache_capable(serve: Any) -> None:
    engine = cluster()
    api = await serve(lambda: engine)
    items = [node(n) for n in NODES]
    got = await api.post("filter", {"Pod": pod("web", ("a",)), "Nodes": {"items": items}, "NodeNames": None})
    assert [n["metadata"]["name"] for n in got["Nodes"]["items"]] == ["n1", "n2", "small"]
    assert got["Nodes"]["items"][0] == items[0]
    assert got["NodeNames"] is None


@pytest.mark.asyncio
async def test_a_pre_filter_rejection_is_unresolvable_everywhere(serve: Any) -> None:
    engine = cluster()
    api = await serve(lambda: engine)
    got = await api.post("filter", args(pod("web", ("missing",))))
    assert got["NodeNames"] == [] and got["FailedNodes"] == {}
    assert set(got["FailedAndUnresolvableNodes"]) == set(NODES)
    assert 'persistentvolumeclaim "missing" not found' in got["FailedAndUnresolvableNodes"]["n1"]


@pytest.mark.asyncio
async def test_the_pods_own_reservation_does_not_count_against_it(serve: Any) -> None:
    engine = cluster()
    for ev in events(pod("web", ("a",))):
        engine.handle(ev)
    held = engine.state.reserved("default/web")
    assert held is not None and held.node == "n1"
    api = await serve(lambda: engine)
    got = await api.post("filter", args(pod("web", ("a",))))
    assert got["NodeNames"] == ["n1", "n2", "small"]
    assert engine.state.reserved("default/web") == held  # still held, PV still taken for others
    other = await api.post("filter", args(pod("other", ("b",))))
    assert other["NodeNames"] == ["n2", "small"]  # pv1 is web's


@pytest.mark.asyncio
async def test_prioritize_maps_totals_onto_0_to_10(serve: Any) -> None:
    engine = cluster()
    api = await serve(lambda: engine)
    raw = pod("web", ("a",), cpu="2")
    got = await api.post("prioritize", args(raw, (*NODES, "ghost")))
    assert [h["Host"] for h in got] == [*NODES, "ghost"]
    scores = {h["Host"]: h["Score"] for h in got}
    assert scores["n3"] == scores["small"] == scores["ghost"] == 0  # infeasible or unknown
    results = engine.evaluate(pod_from_raw(raw)).decision.nodes
    weights = sum(w for _, w in engine.scheduler.profile.scorers)
    for name in ("n1", "n2"):
        total = results[name].total
        assert total is not None and 0 <= scores[name] <= MAX_EXTENDER_PRIORITY
        assert scores[name] == to_extender_score(total, weights)
    # pv1 fits the claim exactly, pv2 is twice its size
    assert results["n1"].scores["VolumeBinding"] > results["n2"].scores["VolumeBinding"]  # type: ignore[index]


def test_score_mapping() -> None:
    assert to_extender_score(0, 1) == 0
    assert to_extender_score(100, 1) == 10
    assert to_extender_score(54, 1) == 5 and to_extender_score(55, 1) == 6  # rounded, half up
    assert to_extender_score(300, 3) == 10 and to_extender_score(150, 3) == 5  # weights sum to 3
    assert to_extender_score(10_000, 1) == 10  # clamped
    assert to_extender_score(50, 0) == 0


@pytest.mark.asyncio
async def test_the_engine_is_read_per_request(serve: Any) -> None:
    engines = [engine_with(storage_class(), node("n1"))]
    api = await serve(lambda: engines[-1])
    assert (await api.post("filter", args(pod("web"), ("n1", "n2"))))["NodeNames"] == ["n1"]
    engines.append(engine_with(storage_class(), node("n1"), node("n2")))  # take-over swapped it
    assert (await api.post("filter", args(pod("web"), ("n1", "n2"))))["NodeNames"] == ["n1", "n2"]


@pytest.mark.asyncio
async def test_bad_requests(serve: Any) -> None:
    engine = cluster()
    api = await serve(lambda: engine)
    got = await api.post("filter", {"Pod": {"metadata": {}}, "NodeNames": ["n1"]})
    assert got["Error"].startswith("berth: the pod:")
    got = await api.post("filter", {"NodeNames": ["n1"]})
    assert "bad ExtenderArgs" in got["Error"]
    async with api.session.post(f"{api.base}/prioritize", json={"Pod": {"metadata": {}}}) as resp:
        assert resp.status == 400
    bound = await api.post("bind", {"PodName": "web", "PodNamespace": "default", "PodUID": "u", "Node": "n1"})
    assert "--bind" in bound["Error"]


@pytest.mark.asyncio
async def test_a_failed_nodes_message_and_code_are_its_first_failing_plugins(serve: Any) -> None:
    engine = cluster()
    api = await serve(lambda: engine)
    # n3 fails on cpu before its volumes: kube stops at the first failing plugin, whose code is the
    # node's; 12 cpu is more than n1's, n3's and small's whole allocatable: UnschedulableAndUnresolvable (1.36)
    got = await api.post("filter", args(pod("web", ("a",), cpu="12")))
    assert got["NodeNames"] == ["n2"]
    assert got["FailedNodes"] == {}
    cpu = "Insufficient cpu"
    assert got["FailedAndUnresolvableNodes"] == {"n1": cpu, "n3": cpu, "small": cpu}
