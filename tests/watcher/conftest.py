"""The fake API server, a real kubernetes-asyncio client pointed at it, and helpers for event streams."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator
from typing import Any

import msgspec

from berth.adapters.files.eventlog import read_events
from berth.core.api.watch import WatchEvent
from tests.fakeapi import FAST, FakeAPI, api, client  # noqa: F401 - shared fixtures


class Sleeps:
    """An injected sleep: records the delays, waits no real time."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)
        await asyncio.sleep(0)


class Fixed(random.Random):
    """random() is always the same value: jitter and watch timeouts become predictable."""

    def __init__(self, value: float = 0.0) -> None:
        super().__init__(0)
        self.value = value

    def random(self) -> float:
        return self.value


async def take(
    events: AsyncIterator[WatchEvent], n: int, timeout: float = 5.0, markers: bool = False
) -> list[WatchEvent]:
    """The next n events; without `markers`, the BOOKMARKs marking the first lists are passed over."""
    out: list[WatchEvent] = []
    async with asyncio.timeout(timeout):
        while len(out) < n:
            ev = await anext(events)
            if markers or ev.type != "BOOKMARK":
                out.append(ev)
    return out


def recorded(path: str) -> list[WatchEvent]:
    """The events of a recorded log, as the watcher published them (objects as dicts)."""
    return [WatchEvent(e.type, msgspec.json.decode(e.raw), e.ts, e.position) for e in read_events(path, strict=True)]


def obj(ev: WatchEvent) -> dict[str, Any]:
    """An event's object as a dict (the watcher passes the API server's bytes on as they came)."""
    out: dict[str, Any] = msgspec.json.decode(ev.object) if isinstance(ev.object, msgspec.Raw) else ev.object
    return out


def summary(events: list[WatchEvent]) -> list[tuple[str, str, str]]:
    """(type, kind, namespace/name or name) per event."""
    out = []
    for ev in events:
        o = obj(ev)
        meta = o.get("metadata") or {}
        key = f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else meta.get("name", "")
        out.append((ev.type, o.get("kind", ""), key))
    return out


def pod(name: str, namespace: str = "db", node: str | None = None, **spec: Any) -> dict[str, Any]:
    s: dict[str, Any] = {"containers": [{"name": "c", "resources": {"requests": {"cpu": "100m"}}}], **spec}
    if node:
        s["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace}, "spec": s}


def node(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
    }


def buffer(name: str, namespace: str = "db", version: str = "v1beta1") -> dict[str, Any]:
    return {
        "apiVersion": f"autoscaling.x-k8s.io/{version}",
        "kind": "CapacityBuffer",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"podTemplateRef": {"name": "tpl"}, "replicas": 2},
    }
