"""Writes through the API: the buffer status patch, pod bindings, and the fake server's PV/PVC updates."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest

from berth.adapters.kube.client import (
    KubeClient,
    KubeError,
    bind_pod,
    load_configuration,
    patch_buffer_status,
    select_kinds,
)
from berth.adapters.kube.watch import Watcher
from berth.core.errors import ConfigError
from berth_buffer_controller.service import STATUS_FIELDS, StatusPatcher
from tests.fakeapi import FakeAPI
from tests.watcher.conftest import Fixed, Sleeps, buffer, obj, pod, summary, take

STATUS = {
    "podTemplateRef": {"name": "tpl"},
    "replicas": 2,
    "conditions": [{"type": "ReadyForProvisioning", "status": "True", "reason": "attributesSetSuccessfully"}],
}


@pytest.mark.asyncio
async def test_patch_buffer_status(api: FakeAPI, client: KubeClient) -> None:
    before = api.add(buffer("b1"))
    w = Watcher(client, select_kinds(["capacitybuffers"]), sleep=Sleeps(), rand=Fixed())
    async with contextlib.aclosing(w.events()) as events:
        await take(events, 1)
        await api.wait_for(lambda: api.open_watches("capacitybuffers") == 1)
        after = await patch_buffer_status(client, "db", "b1", STATUS)
        seen = await take(events, 1)
    req = next(r for r in api.requests if r.method == "PATCH")
    assert req.path == "/apis/autoscaling.x-k8s.io/v1beta1/namespaces/db/capacitybuffers/b1/status"
    assert req.headers["Content-Type"] == "application/merge-patch+json"
    assert req.headers["Authorization"] == "Bearer fake-token"
    assert req.body == {"status": STATUS}
    assert after["status"] == STATUS and after["spec"] == before["spec"]
    assert int(after["metadata"]["resourceVersion"]) > int(before["metadata"]["resourceVersion"])
    assert summary(seen) == [("MODIFIED", "CapacityBuffer", "db/b1")] and obj(seen[0])["status"] == STATUS

    # a merge patch: keys not sent stay, None removes one, lists are replaced whole
    again = await patch_buffer_status(client, "db", "b1", {"replicas": None, "conditions": []})
    assert again["status"] == {"podTemplateRef": {"name": "tpl"}, "conditions": []}

    with pytest.raises(KubeError) as err:
        await patch_buffer_status(client, "db", "missing", STATUS)
    assert err.value.status == 404 and err.value.reason == "NotFound"


@pytest.mark.asyncio
async def test_the_status_writer_replaces_what_the_buffer_controller_computes(api: FakeAPI, client: KubeClient) -> None:
    """--write-status: the fields the controller computes and the new status lacks are removed; the others stay."""
    b = buffer("b1")
    api.add(b)
    api.modify({**b, "status": {"somebodyElse": "kept"}})
    write = StatusPatcher(client)
    await write("db/b1", {**STATUS, "readyReplicas": 2})
    assert api.get("capacitybuffers", "b1", "db")["status"] == {"somebodyElse": "kept", **STATUS, "readyReplicas": 2}
    not_ready = {"conditions": [{"type": "ReadyForProvisioning", "status": "False"}], "readyReplicas": 0}
    await write("db/b1", not_ready)
    assert api.get("capacitybuffers", "b1", "db")["status"] == {"somebodyElse": "kept", **not_ready}
    body = [r for r in api.requests if r.method == "PATCH"][-1].body
    assert body["status"]["replicas"] is None and set(body["status"]) == set(STATUS_FIELDS)


@pytest.mark.asyncio
async def test_bind_pod(api: FakeAPI, client: KubeClient) -> None:
    api.add(pod("web-0"))
    await bind_pod(client, "db", "web-0", "n1")
    req = api.requests[-1]
    assert (req.method, req.path) == ("POST", "/api/v1/namespaces/db/pods/web-0/binding")
    assert req.body["target"] == {"kind": "Node", "name": "n1"}
    assert api.get("pods", "web-0", "db")["spec"]["nodeName"] == "n1"
    with pytest.raises(KubeError) as err:
        await bind_pod(client, "db", "web-0", "n2")
    assert err.value.status == 409


@pytest.mark.asyncio
async def test_the_fake_updates_pvs_and_claims(api: FakeAPI, client: KubeClient) -> None:
    pv = api.add(
        {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": "pv-1"},
            "spec": {"capacity": {"storage": "10Gi"}},
            "status": {"phase": "Available"},
        }
    )
    claim_ref = {"namespace": "db", "name": "data-0"}
    put = await client.request(
        "PUT", "/api/v1/persistentvolumes/pv-1", body={**pv, "spec": {**pv["spec"], "claimRef": claim_ref}}
    )
    assert put["spec"]["claimRef"] == claim_ref and put["status"] == {"phase": "Available"}  # status untouched
    with pytest.raises(KubeError) as err:  # the old resourceVersion: optimistic concurrency
        await client.request("PUT", "/api/v1/persistentvolumes/pv-1", body=pv)
    assert err.value.status == 409

    api.add({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data-0", "namespace": "db"}})
    ann = {"metadata": {"annotations": {"volume.kubernetes.io/selected-node": "n1"}}}
    patched = await client.request(
        "PATCH",
        "/api/v1/namespaces/db/persistentvolumeclaims/data-0",
        body=ann,
        content_type="application/merge-patch+json",
    )
    assert patched["metadata"]["annotations"] == ann["metadata"]["annotations"]
    assert [(r.method, r.path) for r in api.requests[-3:]] == [
        ("PUT", "/api/v1/persistentvolumes/pv-1"),
        ("PUT", "/api/v1/persistentvolumes/pv-1"),
        ("PATCH", "/api/v1/namespaces/db/persistentvolumeclaims/data-0"),
    ]


@pytest.mark.asyncio
async def test_a_missing_kubeconfig_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="kubeconfig"):
        await load_configuration(str(tmp_path / "nope"))


@pytest.mark.asyncio
async def test_a_wrong_token_is_an_error_not_a_crash(api: FakeAPI, client: KubeClient) -> None:
    api.token = "another"
    with pytest.raises(KubeError) as err:
        await client.request("GET", "/api/v1/pods")
    assert err.value.status == 401
