"""The watcher's cost per event: a list of 20,000 pods (pages of 500, items without apiVersion and kind,
as kube sends them), then a watch of 20,000 MODIFIED lines, through the list/watch loop, each event
encoded into berth's line and keyed for the bus as the watcher service does (no bus, no file).

The seam is the client (berth.adapters.kube.client.KubeClient): a fake one serves the API server's bytes
from memory, so what is measured is berth's own work, not HTTP. Options: --pods N.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import time
from collections.abc import AsyncIterator, Iterable
from datetime import UTC, datetime
from typing import Any

import msgspec

from bench.util import one_core
from berth.adapters.kube.client import BY_PLURAL, KubeError
from berth.adapters.kube.watch import Watcher
from berth.core.api.watch import encode_event, event_key

PAGE = 500


def pod(i: int, rv: int) -> dict[str, Any]:
    """A pod as kube-apiserver lists it: about 3 KB, managedFields and all."""
    name = f"web-7d9f8c6b5-{i:05d}"
    return {
        "metadata": {
            "name": name,
            "generateName": "web-7d9f8c6b5-",
            "namespace": f"team-{i % 40}",
            "uid": f"5b0e8c3a-1f2d-4c6b-9a7e-{i:012d}",
            "resourceVersion": str(rv),
            "creationTimestamp": "2026-11-01T10:00:00Z",
            "labels": {"app": "web", "pod-template-hash": "7d9f8c6b5", "tier": "frontend"},
            "annotations": {"kubectl.kubernetes.io/restartedAt": "2026-11-01T09:59:00Z"},
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": "web-7d9f8c6b5",
                    "uid": "0c1d2e3f-4a5b-6c7d-8e9f-0a1b2c3d4e5f",
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
            "managedFields": [
                {
                    "manager": "kube-controller-manager",
                    "operation": "Update",
                    "apiVersion": "v1",
                    "time": "2026-11-01T10:00:00Z",
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {
                        "f:metadata": {"f:generateName": {}, "f:labels": {".": {}, "f:app": {}}},
                        "f:spec": {"f:containers": {'k:{"name":"web"}': {".": {}, "f:image": {}}}},
                    },
                },
                {
                    "manager": "kubelet",
                    "operation": "Update",
                    "apiVersion": "v1",
                    "time": "2026-11-01T10:00:05Z",
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:status": {"f:conditions": {}, "f:containerStatuses": {}, "f:phase": {}}},
                    "subresource": "status",
                },
            ],
        },
        "spec": {
            "volumes": [
                {"name": "kube-api-access", "projected": {"sources": [{"serviceAccountToken": {"path": "token"}}]}}
            ],
            "containers": [
                {
                    "name": "web",
                    "image": "registry.example.com/web:1.2.3",
                    "ports": [{"containerPort": 8080, "protocol": "TCP"}],
                    "resources": {"requests": {"cpu": "250m", "memory": "256Mi"}, "limits": {"memory": "512Mi"}},
                    "terminationMessagePath": "/dev/termination-log",
                    "imagePullPolicy": "IfNotPresent",
                }
            ],
            "restartPolicy": "Always",
            "terminationGracePeriodSeconds": 30,
            "dnsPolicy": "ClusterFirst",
            "serviceAccountName": "default",
            "nodeName": f"node-{i % 500}",
            "securityContext": {},
            "schedulerName": "default-scheduler",
            "tolerations": [
                {
                    "key": "node.kubernetes.io/not-ready",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 300,
                }
            ],
            "priority": 0,
            "enableServiceLinks": True,
            "preemptionPolicy": "PreemptLowerPriority",
        },
        "status": {
            "phase": "Running",
            "conditions": [
                {"type": t, "status": "True", "lastProbeTime": None, "lastTransitionTime": "2026-11-01T10:00:05Z"}
                for t in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled")
            ],
            "hostIP": "10.0.0.1",
            "podIP": f"10.1.{i // 250 % 250}.{i % 250}",
            "startTime": "2026-11-01T10:00:00Z",
            "containerStatuses": [
                {
                    "name": "web",
                    "state": {"running": {"startedAt": "2026-11-01T10:00:04Z"}},
                    "ready": True,
                    "restartCount": 0,
                    "image": "registry.example.com/web:1.2.3",
                    "imageID": "registry.example.com/web@sha256:" + "ab" * 32,
                    "containerID": "containerd://" + "cd" * 32,
                    "started": True,
                }
            ],
            "qosClass": "Burstable",
        },
    }


class FakeClient:
    """What the watcher asks of KubeClient, answered from memory with the API server's bytes."""

    host = "fake"

    def __init__(self, pods: int) -> None:
        enc = msgspec.json.Encoder()
        items = [enc.encode(pod(i, 1000 + i)) for i in range(pods)]
        self.pages: list[bytes] = []
        for start in range(0, pods, PAGE):
            more = start + PAGE < pods
            meta = b'{"resourceVersion":"100000"' + (b',"continue":"%d"' % (start + PAGE) if more else b"") + b"}"
            body = b",".join(items[start : start + PAGE])
            self.pages.append(b'{"kind":"PodList","apiVersion":"v1","metadata":' + meta + b',"items":[' + body + b"]}")
        self.lines = [
            b'{"type":"MODIFIED","object":'
            + enc.encode({"apiVersion": "v1", "kind": "Pod", **pod(i, 200000 + i)})
            + b"}\n"
            for i in range(pods)
        ]

    def _page(self, query: Iterable[tuple[str, str]]) -> bytes:
        token = dict(query).get("continue")
        return self.pages[int(token) // PAGE if token else 0]

    async def request_bytes(self, method: str, path: str, query: Iterable[tuple[str, str]] = ()) -> bytes:
        return self._page(query)

    async def request(self, method: str, path: str, query: Iterable[tuple[str, str]] = (), **_: Any) -> dict[str, Any]:
        out: dict[str, Any] = msgspec.json.decode(self._page(query))  # as KubeClient.request decodes the body
        return out

    @contextlib.asynccontextmanager
    async def watch(self, path: str, query: Iterable[tuple[str, str]], seconds: int) -> AsyncIterator[Any]:
        if len(self.lines) == 0:
            raise KubeError(500, "done")
        yield _Lines(self.lines)


class _Lines:
    def __init__(self, lines: list[bytes]) -> None:
        self._it = iter(lines)

    def __aiter__(self) -> _Lines:
        return self

    async def __anext__(self) -> bytes:
        try:
            return next(self._it)
        except StopIteration:
            raise StopAsyncIteration from None


async def _measure(client: FakeClient, pods: int) -> tuple[float, float, str]:
    """CPU seconds for the list's events, then for the watch's, each encoded and keyed; the md5 of what was sent. CPU
    time, not the wall clock: on a shared machine it is what compares."""
    at = datetime(2026, 11, 1, 10, tzinfo=UTC)
    # the fake stands in for KubeClient
    watcher = Watcher(client, [BY_PLURAL["pods"]], clock=lambda: at)  # type: ignore[arg-type]
    sent = hashlib.md5()
    times = []
    async with contextlib.aclosing(watcher.events()) as events:
        for _ in range(2):
            t = time.process_time()
            n = 0
            async for ev in events:
                if ev.type == "BOOKMARK":
                    continue
                sent.update(encode_event(ev) + b"\n" + event_key(ev) + b"\n")
                n += 1
                if n == pods:
                    break
            times.append(time.process_time() - t)
    return times[0], times[1], sent.hexdigest()


def run(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench watcher")
    parser.add_argument("--pods", type=int, default=20_000)
    args = parser.parse_args(argv or [])
    print(f"== watcher: list and watch of {args.pods:,} pods through a fake client ({one_core()}) ==")
    client = FakeClient(args.pods)
    size = sum(len(p) for p in client.pages) / args.pods
    best: tuple[float, float, str] | None = None
    for _ in range(3):
        got = asyncio.run(_measure(client, args.pods))
        best = got if best is None else (min(best[0], got[0]), min(best[1], got[1]), got[2])
    assert best is not None
    listed, watched, sent = best
    print(f"objects of {size:,.0f} bytes; CPU time, best of 3")
    print(f"  list:  {listed:.2f} s = {listed / args.pods * 1e6:.1f} µs per event")
    print(f"  watch: {watched:.2f} s = {watched / args.pods * 1e6:.1f} µs per event")
    print(f"  md5 of the lines and keys published: {sent}")
