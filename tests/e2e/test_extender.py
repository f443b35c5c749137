"""berth as kube-scheduler 1.36's extender, for real: kube-scheduler runs with an `extenders` stanza as
deploy/kube-scheduler/ gives it, pointed at a running berth scorer's HTTP server on loopback, and schedules
pods through berth's filter, prioritize and bind. berth's watcher (as berth-watcher) feeds the scorer as the
bus would; the bind goes through the binder as berth-scorer, with deploy/'s RBAC only."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from berth.adapters.bus.kafka import KafkaBus
from berth.adapters.runtime.http import HttpServer
from berth.adapters.runtime.metrics import Metrics
from berth.adapters.store.redis import RedisStore
from berth.core.api.kinds import pod_from_raw
from berth.core.config.kubeschedulerconfig import parse_config
from berth.core.pipeline.scorer import ScorerEngine
from berth_scorer.binder import Binder
from berth_scorer.extender import ExtenderBindingArgs, Routes
from berth_scorer.service import Scorer
from tests.e2e.berth import (
    REPO,
    Accounts,
    claim,
    connect_as,
    eventually,
    following,
    local_pv,
    phase,
    storage_class,
    topic,
)
from tests.e2e.cluster import Kube
from tests.e2e.controlplane import ControlPlane
from tests.servers import Server

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("berth_crds")]

EXTENDERS = REPO / "deploy" / "kube-scheduler"


def scheduler_config(file: str, port: int) -> dict[str, Any]:
    """deploy/kube-scheduler/<file> as a user applies it, pointed at the scorer on loopback; the fixture
    fills in the client connection."""
    config: dict[str, Any] = yaml.safe_load((EXTENDERS / file).read_text())
    config.pop("clientConnection")
    for extender in config["extenders"]:
        extender["urlPrefix"] = f"http://127.0.0.1:{port}/scheduler"
    return config


@contextlib.contextmanager
def scheduling_with(plane: ControlPlane, config: dict[str, Any]) -> Iterator[None]:
    """kube-scheduler with this configuration, then kube's default profile again."""
    plane.restart_scheduler(config)
    try:
        yield
    finally:
        plane.restart_scheduler(None)


@contextlib.asynccontextmanager
async def berth_extender(
    kube: Kube, accounts: Accounts, bus: KafkaBus, redis: Server, folder: Path, config_file: str
) -> AsyncIterator[Any]:
    """A berth scorer fed by berth's watcher, serving the extender on a free loopback port, and
    kube-scheduler running the deploy/ configuration against it. Yields the scorer and its API client."""
    store = RedisStore.from_url(f"redis://{redis.address}/0", prefix=f"e2e-{kube.id}:")
    scorer_client = await connect_as(accounts, "berth-scorer", folder)
    watcher_client = await connect_as(accounts, "berth-watcher", folder)
    scorer = Scorer(
        ScorerEngine(parse_config(None)),
        bus,
        store,
        topic("decisions"),
        binder=Binder(scorer_client),
    )

    async def bind(args: ExtenderBindingArgs) -> str:
        return await scorer.bind(args.pod_namespace, args.pod_name, args.pod_uid, args.node)

    await scorer.check_store()  # as the service does before its first batch
    http = HttpServer(Metrics("scorer"), lambda: True, 0, "127.0.0.1")
    Routes(lambda: scorer.engine, bind).add_to(http.app)
    port = await http.start()
    try:
        async with following(watcher_client, scorer.handle):
            # kube-scheduler asks only once berth knows the cluster (in a cluster: the scorer's Service
            # routes to it once /readyz says it has caught up)
            nodes = {n["metadata"]["name"] for n in kube.api.get("/api/v1/nodes")["items"]}
            claims = {
                f"{kube.ns}/{c['metadata']['name']}" for c in kube.api.get(kube.path("persistentvolumeclaims"))["items"]
            }
            state = scorer.engine.state
            await eventually(
                "berth knows the nodes and claims",
                lambda: (nodes <= set(state.nodes.slot) and claims <= set(state.pvcs)) or None,
            )
            with scheduling_with(kube.plane, scheduler_config(config_file, port)):
                yield scorer, scorer_client
    finally:
        await http.stop()
        await scorer_client.close()
        await watcher_client.close()
        await store.r.aclose()
    assert not scorer_client.failed() and not watcher_client.failed()


def node_metric(kube: Kube, node: str, cpu: str) -> None:
    """Koordinator's NodeMetric for the node, as koordlet reports it: cpu in use now."""
    kube.create_cluster_object(
        "/apis/slo.koordinator.sh/v1alpha1/nodemetrics",
        {"apiVersion": "slo.koordinator.sh/v1alpha1", "kind": "NodeMetric", "metadata": {"name": node}, "spec": {}},
    )
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    usage = {"nodeUsage": {"resources": {"cpu": cpu, "memory": "1Gi"}}}
    kube.api.patch(
        f"/apis/slo.koordinator.sh/v1alpha1/nodemetrics/{node}/status",
        {"status": {"updateTime": now, "nodeMetric": usage}},
    )


@pytest.mark.asyncio
async def test_capacity_priority_through_prioritize_puts_each_claim_on_the_smallest_pv(
    kube: Kube, accounts: Accounts, bus: KafkaBus, redis_server: Server, tmp_path: Path
) -> None:
    # kube 1.36's VolumeBinding scores nothing (StorageCapacityScoring is off by default) and its other
    # plugins tie the two nodes: without berth each pod lands on either at random
    local = storage_class(kube, f"local-{kube.id}")
    roomy, tight = kube.node("roomy", cpu="4"), kube.node("tight", cpu="4")
    for i in range(3):
        kube.create_cluster_object(
            "/api/v1/persistentvolumes", local_pv(f"pv-roomy{i}-{kube.id}", "100Gi", local, roomy)
        )
        kube.create_cluster_object(
            "/api/v1/persistentvolumes", local_pv(f"pv-tight{i}-{kube.id}", "10Gi", local, tight)
        )
    for i in range(3):
        kube.api.create(kube.path("persistentvolumeclaims"), claim(f"data-{i}", "5Gi", local))
    async with berth_extender(kube, accounts, bus, redis_server, tmp_path, "extender.yaml"):
        nodes = []
        for i in range(3):
            kube.pod(f"db-{i}", {"cpu": "100m"}, claims=[f"data-{i}"])
            nodes.append(await eventually(f"db-{i} bound", lambda i=i: kube.get_pod(f"db-{i}")["spec"].get("nodeName")))
    # a 10Gi PV for a 5Gi claim scores 50 under capacity priority, a 100Gi one 5: berth's answer, 3 against 0
    # on kube's 0-10, times the weight 2 and 10, outweighs the 3 points kube's NodeResourcesFit gives the
    # emptier node after each pod
    assert nodes == [tight] * 3
    bound = {kube.api.get(kube.path("persistentvolumeclaims", f"data-{i}"))["spec"].get("volumeName") for i in range(3)}
    assert bound <= {f"pv-tight{i}-{kube.id}" for i in range(3)} | {None}


@pytest.mark.asyncio
async def test_load_aware_filter_keeps_pods_off_a_busy_node_and_kube_says_why(
    kube: Kube, accounts: Accounts, bus: KafkaBus, redis_server: Server, tmp_path: Path
) -> None:
    # kube alone puts the pod on the bigger node (LeastAllocated); koordlet says it is 90% busy
    busy, quiet = kube.node("busy", cpu="8"), kube.node("quiet", cpu="4")
    node_metric(kube, busy, "7200m")
    node_metric(kube, quiet, "200m")
    async with berth_extender(kube, accounts, bus, redis_server, tmp_path, "extender.yaml") as (scorer, _):
        big = {"metadata": {"name": "big", "namespace": kube.ns}, "spec": {"containers": [{"name": "c"}]}}
        big["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "5"}}

        def load_seen() -> bool | None:
            result = scorer.engine.evaluate(pod_from_raw(big)).decision.nodes.get(busy)
            return True if result is not None and not result.feasible else None

        await eventually("berth has the NodeMetrics", load_seen)
        kube.pod("web", {"cpu": "500m"})
        assert await eventually("web bound", lambda: kube.get_pod("web")["spec"].get("nodeName")) == quiet
        kube.pod("big", {"cpu": "5"})  # fits only on busy by its allocatable, and berth's filter refuses it

        def refused() -> str | None:
            events = kube.events("big", "FailedScheduling")
            return events[-1]["message"] if events else None

        message = await eventually("big's FailedScheduling", refused)
        assert kube.get_pod("big")["spec"].get("nodeName") is None
    assert message.startswith("0/2 nodes are available: "), message
    assert "1 Insufficient cpu" in message and "1 node(s) cpu usage exceed threshold" in message, message


@pytest.mark.asyncio
async def test_berth_binds_what_kube_scheduler_chose_through_the_bind_verb(
    kube: Kube, accounts: Accounts, bus: KafkaBus, redis_server: Server, tmp_path: Path
) -> None:
    local = storage_class(kube, f"local-{kube.id}")
    node = kube.node("n1", cpu="4")
    kube.create_cluster_object("/api/v1/persistentvolumes", local_pv(f"pv-{kube.id}", "10Gi", local, node))
    kube.api.create(kube.path("persistentvolumeclaims"), claim("data", "5Gi", local))
    async with berth_extender(kube, accounts, bus, redis_server, tmp_path, "extender-binder.yaml") as (
        _,
        scorer_client,
    ):
        kube.pod("db-0", {"cpu": "100m"}, claims=["data"])
        assert await eventually("db-0 bound", lambda: kube.get_pod("db-0")["spec"].get("nodeName")) == node
        done = await eventually(
            "data bound by the PV controller", lambda: phase(kube, "persistentvolumeclaims", "data", "Bound")
        )
    assert done["spec"]["volumeName"] == f"pv-{kube.id}"
    # berth made the Binding (kube-scheduler's own would not show in berth-scorer's calls); the claim was
    # bound by kube-scheduler's VolumeBinding PreBind, which runs before an extender's bind
    writes = [(m, p.rsplit("/", 2)[-2:]) for m, p, _, _ in scorer_client.made]
    assert writes == [("POST", ["db-0", "binding"])]
