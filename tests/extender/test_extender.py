"""The extender API as kube-scheduler calls it: filter, prioritize and bind over the scorer's engine."""

from __future__ import annotations

from typing import Any

import pytest

from berth.core.api.kinds import pod_from_raw
from berth.core.errors import ConfigError
from berth.core.pipeline.scorer import ScorerEngine
from berth.core.plugins.volumebinding import BIND_CONFLICT
from berth_scorer.extender import extra_weights, to_extender_score
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
    got = await api.post("filter", args(pod("web", ("a",), cpu="2")))
    assert got["NodeNames"] == ["n1", "n2"]
    assert got["Nodes"] is None and got["Error"] == ""
    assert got["FailedNodes"] == {}
    # more cpu than small's whole allocatable: UnschedulableAndUnresolvable, as kube 1.36's fitsRequest
    assert got["FailedAndUnresolvableNodes"] == {"small": "Insufficient cpu", "n3": BIND_CONFLICT}
    assert "default/web" not in engine.state.pods  # nothing kept


@pytest.mark.parametrize(
    ("claims", "names", "want"),
    [
        ((), ("n1", "ghost"), "berth has not seen node ghost yet (its watch is behind)"),
        (("a", "new"), NODES, "berth has not seen persistentvolumeclaim default/new yet (its watch is behind)"),
        (
            ("new",),
            ("g1", "g2", "g3", "g4"),
            "berth has not seen persistentvolumeclaim default/new, node g1, node g2 and 2 more yet (its watch is behind)",
        ),
    ],
)
@pytest.mark.asyncio
async def test_what_berth_has_not_seen_yet_is_an_error_kube_retries(
    serve: Any, claims: tuple[str, ...], names: tuple[str, ...], want: str
) -> None:
    engine = cluster()
    api = await serve(lambda: engine)
    got = await api.post("filter", args(pod("web", claims), names))
    assert got["Error"] == f"berth: {want}"
    assert got["NodeNames"] is None and got["FailedNodes"] == {} and got["FailedAndUnresolvableNodes"] == {}
    async with api.session.post(f"{api.base}/prioritize", json=args(pod("web", claims), names)) as resp:
        assert (resp.status, await resp.text()) == (503, f"berth: {want}\n")


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
    # InterPodAffinity's PreFilter: a selector that does not parse
    term = {"labelSelector": {"matchLabels": {"app": "bad value!"}}, "topologyKey": "kubernetes.io/hostname"}
    affinity = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    got = await api.post("filter", args(pod("web", affinity=affinity)))
    assert got["NodeNames"] == [] and got["FailedNodes"] == {} and got["Error"] == ""
    assert set(got["FailedAndUnresolvableNodes"]) == set(NODES)
    assert got["FailedAndUnresolvableNodes"]["n1"].startswith("parsing pod: requiredAffinityTerms:")


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
async def test_prioritize_scores_only_what_kube_lacks(serve: Any) -> None:
    engine = cluster()
    api = await serve(lambda: engine)
    raw = pod("web", ("a",), cpu="2")
    got = await api.post("prioritize", args(raw))
    assert [h["Host"] for h in got] == list(NODES)
    scores = {h["Host"]: h["Score"] for h in got}
    assert scores["n3"] == scores["small"] == 0  # infeasible
    results = engine.evaluate(pod_from_raw(raw)).decision.nodes
    # pv1 fits the claim exactly (capacity priority: 100), pv2 is twice its size; n2 has twice the free cpu,
    # which kube's own NodeResourcesFit already counts: berth leaves it out
    assert results["n1"].scores["VolumeBinding"] > results["n2"].scores["VolumeBinding"]  # type: ignore[index]
    assert results["n1"].scores["NodeResourcesFit"] < results["n2"].scores["NodeResourcesFit"]  # type: ignore[index]
    assert scores["n1"] > scores["n2"]
    weights = extra_weights(engine)
    assert weights == {"VolumeBinding": 1, "LoadAwareScheduling": 1}
    for name in ("n1", "n2"):
        extra = {p: results[name].scores[p] for p in weights}  # type: ignore[index]
        assert scores[name] == to_extender_score(extra, weights)


@pytest.mark.asyncio
async def test_prioritize_with_the_plugins_named(serve: Any) -> None:
    engine = cluster()
    api = await serve(lambda: engine, score_plugins=("NodeResourcesFit",))
    got = await api.post("prioritize", args(pod("web", ("a",), cpu="2"), ("n1", "n2")))
    results = engine.evaluate(pod_from_raw(pod("web", ("a",), cpu="2"))).decision.nodes
    want = {n: (results[n].scores["NodeResourcesFit"] + 5) // 10 for n in ("n1", "n2")}  # type: ignore[index]
    assert {h["Host"]: h["Score"] for h in got} == want


def test_a_named_plugin_the_profile_does_not_score_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="BERTH_EXTENDER_SCORE_PLUGINS: NodePorts not a score plugin"):
        extra_weights(cluster(), ("VolumeBinding", "NodePorts"))


@pytest.mark.parametrize(
    ("scores", "weights", "want"),
    [
        ({"A": 0}, {"A": 1}, 0),
        ({"A": 100}, {"A": 1}, 10),
        ({"A": 54}, {"A": 1}, 5),
        ({"A": 55}, {"A": 1}, 6),  # rounded half up
        ({"A": 100, "B": 50}, {"A": 1, "B": 2}, 7),  # (100 + 100) / 3 = 66.7
        ({"A": 100, "B": 0}, {"A": 1, "B": 1}, 5),
        ({}, {"A": 1}, 0),  # not scored: 0
        ({"A": 100}, {}, 0),  # no plugins
    ],
)
def test_score_mapping(scores: dict[str, int], weights: dict[str, int], want: int) -> None:
    assert to_extender_score(scores, weights) == want


@pytest.mark.asyncio
async def test_the_engine_is_read_per_request(serve: Any) -> None:
    engines = [engine_with(storage_class(), node("n1"))]
    api = await serve(lambda: engines[-1])
    assert "node n2" in (await api.post("filter", args(pod("web"), ("n1", "n2"))))["Error"]
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


@pytest.mark.asyncio
async def test_a_pod_with_resource_claims_is_filtered_for_the_rest(serve: Any) -> None:
    """kube-scheduler allocates the claims itself (DynamicResources) and asks the extender about the rest: berth
    answers as for the pod without them, rather than with its own Error (dynamic resource allocation is not
    modelled), which would fail the pod in kube."""
    engine = cluster()
    api = await serve(lambda: engine)
    claims = [{"name": "gpu", "resourceClaimTemplateName": "gpu"}]
    got = await api.post("filter", args(pod("web", ("a",), cpu="2", resourceClaims=claims)))
    assert got["Error"] == "" and got["NodeNames"] == ["n1", "n2"]
    scores = await api.post("prioritize", args(pod("web", ("a",), cpu="2", resourceClaims=claims)))
    plain = await api.post("prioritize", args(pod("web", ("a",), cpu="2")))
    assert scores == plain
