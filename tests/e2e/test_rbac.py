"""deploy/'s RBAC on the real API server. Each of berth's ServiceAccounts, bound to only the Roles the manifests
give it (`kubectl kustomize` of the binder and write-status overlays) and authenticated with a token from the
TokenRequest API, makes every API call berth makes in its mode; every call succeeds, the rights those calls use
are exactly the ones granted, and the API server denies each account what lies just beside its rights.
tests/deploy/test_rbac.py derives the same rules from the code without a cluster."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from berth.adapters.kube import client as kube_client
from berth.adapters.kube.client import KINDS
from berth.adapters.kube.watch import Watcher
from tests.deploy.test_rbac import Rule, client_functions, granted, rule_of
from tests.e2e.berth import Accounts, Recording, claim, connect_as, local_pv, rbac_objects
from tests.e2e.cluster import Kube

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("berth_crds")]


def rules(client: Recording) -> set[Rule]:
    return {rule_of(m, p, q) for m, p, q, _ in client.made}


async def list_and_watch_every_kind(client: Recording) -> None:
    """berth's watcher until every kind has been listed and its watch opened."""
    watcher = Watcher(client, KINDS)

    async def drain() -> None:
        async with contextlib.aclosing(watcher.events()) as events:
            async for _ in events:
                pass

    def watched() -> set[str]:
        return {p for m, p, q, s in client.made if s == 200 and ("watch", "1") in q}

    task = asyncio.create_task(drain())
    try:
        async with asyncio.timeout(30):
            while not watcher.synced or len(watched()) < len(KINDS):
                await asyncio.sleep(0.05)
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def every_write(kube: Kube, accounts: Accounts, folder: Path) -> tuple[Recording, Recording, set[str]]:
    """Each of berth's API writes, once, on objects of this test; returns the binder's and the status writer's
    clients and the names of the functions called."""
    ns, api = kube.ns, kube.api
    node = kube.node("n1")
    sc = f"local-{kube.id}"
    kube.create_cluster_object("/apis/storage.k8s.io/v1/storageclasses", {"metadata": {"name": sc}, "provisioner": "kubernetes.io/no-provisioner", "volumeBindingMode": "WaitForFirstConsumer"})  # fmt: skip
    pv = kube.create_cluster_object("/api/v1/persistentvolumes", local_pv(f"pv-{kube.id}", "10Gi", sc, node))
    data = api.create(kube.path("persistentvolumeclaims"), claim("data", "1Gi", sc))
    api.create(kube.path("persistentvolumeclaims"), claim("scratch", "1Gi", sc))
    victim = kube.pod("victim", {"cpu": "100m"}, spec={"schedulerName": "nobody"})
    web = kube.pod("web", {"cpu": "100m"}, spec={"schedulerName": "nobody"})
    api.create(kube.path("podtemplates"), {"metadata": {"name": "chunk"}, "template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}})  # fmt: skip
    api.create(f"/apis/autoscaling.x-k8s.io/v1beta1/namespaces/{ns}/capacitybuffers", {"apiVersion": "autoscaling.x-k8s.io/v1beta1", "kind": "CapacityBuffer", "metadata": {"name": "headroom"}, "spec": {"podTemplateRef": {"name": "chunk"}, "replicas": 1}})  # fmt: skip

    binder = await connect_as(accounts, "berth-scorer", folder)
    writer = await connect_as(accounts, "berth-buffer-controller", folder)
    pv_name, uid = pv["metadata"]["name"], data["metadata"]["uid"]
    pv_version = api.get(f"/api/v1/persistentvolumes/{pv_name}")["metadata"]["resourceVersion"]  # as berth saw it
    when = "2026-11-01T12:00:00Z"
    calls: dict[str, Callable[[], Awaitable[Any]]] = {
        "prebind_pv": lambda: kube_client.prebind_pv(binder, pv_name, ns, "data", uid, pv_version),
        "select_node": lambda: kube_client.select_node(binder, ns, "scratch", node),
        "mark_preempted": lambda: kube_client.mark_preempted(binder, ns, "victim", "berth: preempting", when),
        "delete_pod": lambda: kube_client.delete_pod(binder, ns, "victim"),
        "nominate_node": lambda: kube_client.nominate_node(binder, ns, "web", node),
        "bind_pod": lambda: kube_client.bind_pod(binder, ns, "web", node, web["metadata"]["uid"]),
        "patch_buffer_status": lambda: kube_client.patch_buffer_status(writer, ns, "headroom", {"readyReplicas": 1}),
    }
    try:
        for call in calls.values():
            await call()
    finally:
        await binder.close()
        await writer.close()
    assert victim["metadata"]["name"] == "victim"
    return binder, writer, {f"berth.adapters.kube.client.{name}" for name in calls}


def test_every_call_berth_makes_succeeds_with_deploys_rbac_and_uses_every_right_it_grants(
    kube: Kube, accounts: Accounts, tmp_path: Path
) -> None:
    async def run() -> tuple[Recording, Recording, Recording, set[str]]:
        watcher = await connect_as(accounts, "berth-watcher", tmp_path)
        try:
            await list_and_watch_every_kind(watcher)
            binder, writer, called = await every_write(kube, accounts, tmp_path)
        finally:
            await watcher.close()
        return watcher, binder, writer, called

    watcher, binder, writer, called = asyncio.run(run())
    assert called == set(client_functions()), "every function berth calls the API with, once (test_rbac's scan)"
    for client in (watcher, binder, writer):
        assert not client.failed(), client.failed()
    want = granted(tuple(rbac_objects()))
    used = {"berth-watcher": rules(watcher), "berth-scorer": rules(binder), "berth-buffer-controller": rules(writer)}
    for account, rights in want.items():
        assert used[account] == rights, f"{account}: used but not granted {sorted(used[account] - rights)}, granted but not used {sorted(rights - used[account])}"  # fmt: skip
    assert kube.get_pod("web")["spec"]["nodeName"]


# For each account, rights just beside the ones deploy/ grants it.
BESIDE: dict[str, list[tuple[str, str, str, str]]] = {  # account -> (verb, resource, group, subresource)
    "berth-watcher": [
        ("get", "pods", "", ""),  # it lists and watches, never gets
        ("list", "secrets", "", ""),
        ("patch", "capacitybuffers", "autoscaling.x-k8s.io", "status"),
    ],
    "berth-scorer": [
        ("update", "persistentvolumes", "", ""),  # merge patches only
        ("list", "pods", "", ""),  # its reads come from the topic, not the API
        ("patch", "pods", "", ""),
    ],
    "berth-buffer-controller": [
        ("patch", "capacitybuffers", "autoscaling.x-k8s.io", ""),  # the status only
        ("update", "capacitybuffers", "autoscaling.x-k8s.io", "status"),
    ],
    "berth-indexer": [("list", "pods", "", "")],  # no rights at all
}


def test_the_api_server_grants_each_account_its_rights_and_denies_what_lies_beside_them(accounts: Accounts) -> None:
    rights = granted(tuple(rbac_objects()))
    for account, beside in BESIDE.items():
        for group, resource, verb in sorted(rights.get(account, set())):
            plural, _, sub = resource.partition("/")
            assert accounts.can(account, verb, plural, group, sub), (account, group, resource, verb)
        for verb, plural, group, sub in beside:
            assert not accounts.can(account, verb, plural, group, sub), (account, verb, plural, group, sub)
