"""berth's writes against the real API server, each as the ServiceAccount deploy/ runs it as, with deploy/'s RBAC
only: the scorer's binder (the pod's Binding, its volumes bound as kube-scheduler's VolumeBinding PreBind does,
preemption as DefaultPreemption does) and the buffer controller's status writer (the status subresource).
berth's watcher (as berth-watcher) feeds the scorer or buffer controller as the bus would; decisions and
statuses go to the real broker, reservations to the real Redis."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from berth.adapters.bus.kafka import KafkaBus
from berth.adapters.kube.client import SELECTED_NODE
from berth.adapters.store.redis import RedisStore
from berth.core.config.kubeschedulerconfig import parse_config
from berth.core.pipeline.buffers import BufferEngine
from berth.core.pipeline.records import decode_record
from berth.core.pipeline.scorer import ScorerEngine
from berth_buffer_controller.service import BufferController, StatusPatcher
from berth_scorer.binder import SCHEDULER_NAME, Binder
from berth_scorer.service import Scorer
from tests.e2e.berth import Accounts, claim, connect_as, eventually, following, local_pv, phase, storage_class, topic
from tests.e2e.cluster import Kube, condition
from tests.servers import Server

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("berth_crds")]

BUFFERS = "/apis/autoscaling.x-k8s.io/v1beta1/namespaces/{ns}/capacitybuffers"


@pytest.mark.asyncio
async def test_the_binder_binds_the_pod_and_the_pv_controller_binds_its_claims_as_berth_chose(
    kube: Kube, accounts: Accounts, bus: KafkaBus, redis_server: Server, tmp_path: Path
) -> None:
    local = storage_class(kube, f"local-{kube.id}")
    provisioned = storage_class(kube, f"fast-{kube.id}", provisioner="example.com/fake")
    big, small = kube.node("big", cpu="4"), kube.node("small", cpu="4")
    # capacity priority (KEP-1845, berth's default): the smallest PV that fits, on the other node
    kube.create_cluster_object("/api/v1/persistentvolumes", local_pv(f"pv-big-{kube.id}", "100Gi", local, big))
    kube.create_cluster_object("/api/v1/persistentvolumes", local_pv(f"pv-small-{kube.id}", "10Gi", local, small))
    kube.api.create(kube.path("persistentvolumeclaims"), claim("data", "5Gi", local))
    scratch = kube.api.create(kube.path("persistentvolumeclaims"), claim("scratch", "1Gi", provisioned))
    kube.pod("db-0", {"cpu": "100m"}, claims=["data", "scratch"], spec={"schedulerName": SCHEDULER_NAME})

    decisions = topic("decisions")
    store = RedisStore.from_url(f"redis://{redis_server.address}/0", prefix=f"e2e-{kube.id}:")
    scorer_client = await connect_as(accounts, "berth-scorer", tmp_path)
    watcher_client = await connect_as(accounts, "berth-watcher", tmp_path)
    scorer = Scorer(ScorerEngine(parse_config(None)), bus, store, decisions, binder=Binder(scorer_client))
    try:
        async with following(watcher_client, scorer.handle):
            node = await eventually("db-0 bound", lambda: kube.get_pod("db-0")["spec"].get("nodeName"))
            assert node == small
            # the claim to provision: berth asked for it on the pod's node; a provisioner (this test) makes the PV
            selected = await eventually(
                "selected-node on scratch",
                lambda: (
                    kube.api.get(kube.path("persistentvolumeclaims", "scratch"))["metadata"]
                    .get("annotations", {})
                    .get(SELECTED_NODE)
                ),
            )
            assert selected == small
            made = local_pv(f"pv-scratch-{kube.id}", "1Gi", provisioned, small)
            made["spec"]["claimRef"] = {"namespace": kube.ns, "name": "scratch", "uid": scratch["metadata"]["uid"]}
            kube.create_cluster_object("/api/v1/persistentvolumes", made)
            # the real PV controller completes both bindings
            data = await eventually("data bound", lambda: phase(kube, "persistentvolumeclaims", "data", "Bound"))
            assert data["spec"]["volumeName"] == f"pv-small-{kube.id}"
            assert data["metadata"]["annotations"]["pv.kubernetes.io/bind-completed"] == "yes"
            done = await eventually("scratch bound", lambda: phase(kube, "persistentvolumeclaims", "scratch", "Bound"))
            assert done["spec"]["volumeName"] == f"pv-scratch-{kube.id}"
            pv = await eventually("PV bound", lambda: phase(kube, "persistentvolumes", f"pv-small-{kube.id}", "Bound"))
            assert pv["spec"]["claimRef"]["name"] == "data"
        await bus.flush()
        records = [decode_record(m.value) for m in await bus.records(decisions)]
    finally:
        await scorer_client.close()
        await watcher_client.close()
        await store.r.aclose()
    assert not scorer_client.failed() and not watcher_client.failed()
    # as kube-scheduler's VolumeBinding PreBind, then its Binding: claimRef on the PV berth chose, selected-node
    # on the claim to provision, the pod last
    writes = [(m, p.rsplit("/", 2)[-2:]) for m, p, _, _ in scorer_client.made]
    assert writes == [
        ("PATCH", ["persistentvolumes", f"pv-small-{kube.id}"]),
        ("PATCH", ["persistentvolumeclaims", "scratch"]),
        ("POST", ["db-0", "binding"]),
    ]
    mine = [r for r in records if getattr(r, "pod", "") == f"{kube.ns}/db-0"]
    assert [(r.status, r.node) for r in mine] == [("Scheduled", small)]
    scheduled = condition(kube.get_pod("db-0"), "PodScheduled")  # the Binding subresource sets it
    assert scheduled is not None and scheduled["status"] == "True"


@pytest.mark.asyncio
async def test_a_preemption_through_the_binder_makes_room_and_binds_the_preemptor(
    kube: Kube, accounts: Accounts, bus: KafkaBus, redis_server: Server, tmp_path: Path
) -> None:
    node = kube.node("n1", cpu="1")
    high = f"high-{kube.id}"
    kube.create_cluster_object(
        "/apis/scheduling.k8s.io/v1/priorityclasses", {"metadata": {"name": high}, "value": 1000}
    )
    kube.pod("low", {"cpu": "600m"})
    assert kube.wait_bound("low") == node  # kube-scheduler's
    kube.pod("web", {"cpu": "600m"}, spec={"schedulerName": SCHEDULER_NAME, "priorityClassName": high})

    store = RedisStore.from_url(f"redis://{redis_server.address}/0", prefix=f"e2e-{kube.id}:")
    scorer_client = await connect_as(accounts, "berth-scorer", tmp_path)
    watcher_client = await connect_as(accounts, "berth-watcher", tmp_path)
    scorer = Scorer(ScorerEngine(parse_config(None)), bus, store, topic("decisions"), binder=Binder(scorer_client))
    try:
        async with following(watcher_client, scorer.handle):
            # the victim: kube's DisruptionTarget condition, then deleted (its grace period is 0: no kubelet waits)
            gone = await eventually("low deleted", lambda: None if kube.api.exists(kube.path("pods", "low")) else True)
            assert gone
            bound = await eventually("web bound", lambda: kube.get_pod("web")["spec"].get("nodeName"))
    finally:
        await scorer_client.close()
        await watcher_client.close()
        await store.r.aclose()
    assert bound == node  # (the Binding cleared the nominatedNodeName berth had set)
    assert not scorer_client.failed() and not watcher_client.failed()
    writes = [(m, p.rsplit("/", 2)[-2:]) for m, p, _, _ in scorer_client.made]
    assert writes == [
        ("PATCH", ["low", "status"]),
        ("DELETE", ["pods", "low"]),
        ("PATCH", ["web", "status"]),
        ("POST", ["web", "binding"]),
    ]


@pytest.mark.asyncio
async def test_buffer_statuses_are_written_through_the_status_subresource_and_read_back_equal(
    kube: Kube, accounts: Accounts, bus: KafkaBus, tmp_path: Path
) -> None:
    kube.node("n1", cpu="4")
    template = {"spec": {"containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}]}}
    kube.api.create(kube.path("podtemplates"), {"metadata": {"name": "chunk"}, "template": template})
    buffers = BUFFERS.format(ns=kube.ns)
    spec = {"podTemplateRef": {"name": "chunk"}, "replicas": 2}
    kube.api.create(buffers, {"apiVersion": "autoscaling.x-k8s.io/v1beta1", "kind": "CapacityBuffer", "metadata": {"name": "headroom"}, "spec": spec})  # fmt: skip

    writer_client = await connect_as(accounts, "berth-buffer-controller", tmp_path)
    watcher_client = await connect_as(accounts, "berth-watcher", tmp_path)
    patch = StatusPatcher(writer_client)
    written: list[dict[str, Any]] = []

    async def write(buffer: str, status: dict[str, Any]) -> None:
        await patch(buffer, status)
        if buffer == f"{kube.ns}/headroom":
            written.append(status)

    controller = BufferController(BufferEngine(parse_config(None)), bus, topic("buffer-status"), write_status=write)

    def read_back(count: int) -> dict[str, Any] | None:
        """The buffer's status on the API server, once `count` statuses were written and it is the last one."""
        if len(written) < count:
            return None
        status: dict[str, Any] = kube.api.get(f"{buffers}/headroom").get("status", {})
        return status if status == written[-1] else None

    try:
        async with following(watcher_client, controller.handle):
            ready = await eventually("a ready status read back equal", lambda: read_back(1))
            # upstream's fields, and the proposal's readyReplicas (the CRD's; two chunks of 1 CPU fit on n1)
            assert ready["replicas"] == 2 and ready["readyReplicas"] == 2
            assert {c["type"]: c["status"] for c in ready["conditions"]}["ReadyForProvisioning"] == "True"
            kube.api.delete(kube.path("podtemplates", "chunk"))  # the buffer can no longer be provisioned
            broken = await eventually(
                "the not-ready status read back equal",
                lambda: read_back(2),
                timeout=15,
                describe=lambda: f"written {written}\nread back {kube.api.get(f'{buffers}/headroom').get('status')}",
            )
    finally:
        await writer_client.close()
        await watcher_client.close()
    assert {c["type"]: c["status"] for c in broken["conditions"]}["ReadyForProvisioning"] == "False"
    assert "replicas" not in broken and "podTemplateRef" not in broken  # written without them: gone on the server too
    assert not writer_client.failed() and not watcher_client.failed()
    assert {(m, p.rsplit("/", 1)[1]) for m, p, _, _ in writer_client.made} == {("PATCH", "status")}
