"""Binder mode against the fake API server: volumes prebound, the pod's Binding, 409 -> released."""

from __future__ import annotations

from typing import Any

import pytest

from berth.adapters.bus.memory import MemoryBus
from berth.adapters.kube.client import SELECTED_NODE, KubeClient
from berth.adapters.store.memory import MemoryStore
from berth.core.config.kubeschedulerconfig import parse_config
from berth.core.pipeline.scorer import ScorerEngine
from berth.core.ports import DECISIONS
from berth_scorer.binder import Binder
from berth_scorer.extender import ExtenderBindingArgs
from berth_scorer.service import Scorer
from tests.builders import node, pod, pv, pvc, storage_class
from tests.extender.conftest import events
from tests.fakeapi import FakeAPI

KEY = "default/web"


def setup(client: KubeClient) -> tuple[Scorer, MemoryStore, MemoryBus]:
    store, bus = MemoryStore(), MemoryBus()
    engine = ScorerEngine(parse_config(None))
    return Scorer(engine, bus, store, binder=Binder(client)), store, bus


async def feed(scorer: Scorer, api: FakeAPI, *objs: dict[str, Any]) -> None:
    """Each object into the fake API server, and as the API server returned it into the scorer."""
    for ev in events(*[api.add(o) for o in objs]):
        await scorer.handle(ev)


def base() -> list[dict[str, Any]]:
    return [
        storage_class(),
        node("n1"),
        node("n2"),
        pv("pv1", "10Gi", on="n1"),
        pv("pv2", "20Gi", on="n2"),
        pvc("a"),
    ]


def decisions(bus: MemoryBus) -> int:
    return sum(len(p) for p in bus.topics.get(DECISIONS, []))


@pytest.mark.asyncio
async def test_berths_own_pods_are_bound_with_their_volumes(api: FakeAPI, client: KubeClient) -> None:
    scorer, store, bus = setup(client)
    await feed(scorer, api, *base(), pod("web", ("a",), schedulerName="berth"))
    claim = api.get("persistentvolumeclaims", "a", "default")
    ref = api.get("persistentvolumes", "pv1")["spec"]["claimRef"]
    assert (ref["namespace"], ref["name"], ref["uid"]) == ("default", "a", claim["metadata"]["uid"])
    assert api.get("pods", "web", "default")["spec"]["nodeName"] == "n1"
    writes = [(r.method, r.path) for r in api.requests if r.method != "GET"]
    assert writes[-2:] == [
        ("PATCH", "/api/v1/persistentvolumes/pv1"),
        ("POST", "/api/v1/namespaces/default/pods/web/binding"),
    ]
    patch = next(r for r in api.requests if r.method == "PATCH")
    assert patch.headers["Content-Type"] == "application/merge-patch+json"
    assert patch.body["metadata"]["resourceVersion"]  # optimistic: the PV as berth saw it
    assert await store.reservation(KEY) == ("n1", ["pv1"]) and decisions(bus) == 1


@pytest.mark.asyncio
async def test_default_scheduler_pods_are_left_to_kube(api: FakeAPI, client: KubeClient) -> None:
    scorer, _, bus = setup(client)
    await feed(scorer, api, *base(), pod("web", ("a",)))
    assert not [r for r in api.requests if r.method != "GET"]
    assert "nodeName" not in api.get("pods", "web", "default")["spec"] and decisions(bus) == 1


@pytest.mark.asyncio
async def test_a_conflict_releases_the_reservation(api: FakeAPI, client: KubeClient) -> None:
    scorer, store, bus = setup(client)
    await feed(scorer, api, *base())
    raw = pod("web", ("a",), schedulerName="berth")
    api.fail("POST", "pods", 409)  # someone else bound it first
    await feed(scorer, api, raw)
    assert scorer.engine.state.reserved(KEY) is None
    assert await store.reservation(KEY) is None and decisions(bus) == 0
    assert KEY in scorer.engine.queue  # decided again later
    assert scorer.engine.state.pvs["pv1"].claim_ref is None  # berth's assumption undone


@pytest.mark.asyncio
async def test_the_extender_bind_verb_binds_on_kubes_node(api: FakeAPI, client: KubeClient) -> None:
    scorer, store, _ = setup(client)
    await feed(scorer, api, *base(), pod("web", ("a",)))
    assert await store.reservation(KEY) == ("n1", ["pv1"])  # berth's own pick
    error = await scorer.bind("default", "web", "", "n2")  # kube-scheduler chose n2
    assert error == ""
    assert api.get("pods", "web", "default")["spec"]["nodeName"] == "n2"
    # kube-scheduler's bindingCycle runs its PreBind plugins (VolumeBinding binds the claims) before it
    # calls an extender's bind: berth writes only the Binding
    writes = [(r.method, r.path) for r in api.requests if r.method != "GET"]
    assert writes == [("POST", "/api/v1/namespaces/default/pods/web/binding")]
    assert await store.reservation(KEY) == ("n2", ["pv2"])
    held = scorer.engine.state.reserved(KEY)
    assert held is not None and held.node == "n2"


@pytest.mark.asyncio
async def test_the_bind_route(api: FakeAPI, client: KubeClient, serve: Any) -> None:
    scorer, _, _ = setup(client)
    await feed(scorer, api, *base(), pod("web", ("a",)))

    async def bind(a: ExtenderBindingArgs) -> str:
        return await scorer.bind(a.pod_namespace, a.pod_name, a.pod_uid, a.node)

    http = await serve(lambda: scorer.engine, bind)
    uid = api.get("pods", "web", "default")["metadata"]["uid"]
    body = {"PodName": "web", "PodNamespace": "default", "PodUID": "other", "Node": "n1"}
    assert "has uid" in (await http.post("bind", body))["Error"]
    assert (await http.post("bind", {**body, "PodName": "nope"}))["Error"].endswith("not known to berth yet")
    assert await http.post("bind", {**body, "PodUID": uid}) == {"Error": ""}
    assert api.get("pods", "web", "default")["spec"]["nodeName"] == "n1"
    again = await http.post("bind", {**body, "PodUID": uid, "Node": "n2"})  # 409: already bound
    assert "409" in again["Error"]
    assert scorer.engine.state.reserved(KEY) is None


@pytest.mark.asyncio
async def test_bind_where_the_pod_does_not_fit(api: FakeAPI, client: KubeClient) -> None:
    scorer, store, _ = setup(client)
    await feed(scorer, api, *base(), node("n3"), pod("web", ("a",)))
    error = await scorer.bind("default", "web", "", "n3")
    assert "does not fit on node n3" in error
    assert await store.reservation(KEY) == ("n1", ["pv1"])  # berth's own reservation stands
    assert not [r for r in api.requests if r.method != "GET"]


@pytest.mark.asyncio
async def test_claims_to_provision_get_the_selected_node(api: FakeAPI, client: KubeClient) -> None:
    scorer, _, _ = setup(client)
    dyn = storage_class("dyn", provisioner="example.com/csi")
    await feed(scorer, api, dyn, node("n1"), pvc("d", cls="dyn"), pod("web", ("d",), schedulerName="berth"))
    annotations = api.get("persistentvolumeclaims", "d", "default")["metadata"]["annotations"]
    assert annotations[SELECTED_NODE] == "n1"
    assert api.get("pods", "web", "default")["spec"]["nodeName"] == "n1"


@pytest.mark.asyncio
async def test_the_extender_bind_recovers_a_store_that_lost_its_state_first(api: FakeAPI, client: KubeClient) -> None:
    scorer, store, _ = setup(client)
    await scorer.check_store()
    await feed(scorer, api, *base(), pod("web", ("a",)), pod("api", cpu="1"))
    assert await store.reservation("default/api") is not None
    store.__init__()  # type: ignore[misc]  # Redis restarted empty
    assert await scorer.bind("default", "web", "", "n2") == ""
    assert await store.reservation(KEY) == ("n2", ["pv2"])
    held = scorer.engine.state.reserved("default/api")
    assert held is not None and await store.reservation("default/api") == (held.node, [])  # taken again
