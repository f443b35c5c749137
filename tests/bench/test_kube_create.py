"""The kube bench's creates: a try that stalls past its deadline, or whose connection drops, is tried
again; one that went through before its answer was lost is read back from the 409 of the next."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import pytest
import pytest_asyncio
from aiohttp import web
from bench.kube import kubeside


@dataclass
class Server:
    """An API server's pods endpoint whose first POSTs misbehave as `plan` says, one word each:
    "stall" (stored, then no answer), "drop" (stored, connection closed), "lost" (not stored, no answer)."""

    plan: list[str]
    stored: dict[str, Any] = field(default_factory=dict)
    posts: int = 0

    async def post(self, request: web.Request) -> web.StreamResponse:
        obj = await request.json()
        name = obj["metadata"]["name"]
        self.posts += 1
        how = self.plan.pop(0) if self.plan else "ok"
        if how == "lost":
            await asyncio.sleep(3600)
        if name in self.stored:
            return web.json_response({"reason": "AlreadyExists"}, status=409)
        self.stored[name] = {**obj, "metadata": {**obj["metadata"], "uid": f"uid-{name}"}}
        if how == "stall":
            await asyncio.sleep(3600)
        if how == "drop":
            assert request.transport is not None
            request.transport.close()
            await asyncio.sleep(3600)
        return web.json_response(self.stored[name], status=201)

    async def get(self, request: web.Request) -> web.StreamResponse:
        return web.json_response(self.stored[request.match_info["name"]])


@dataclass
class Plane:
    server: str


@pytest_asyncio.fixture
async def serve() -> AsyncIterator[Any]:
    runners: list[web.AppRunner] = []

    async def start(server: Server) -> Plane:
        app = web.Application()
        app.router.add_post("/api/v1/namespaces/bench/pods", server.post)
        app.router.add_get("/api/v1/namespaces/bench/pods/{name}", server.get)
        runner = web.AppRunner(app, shutdown_timeout=0.1)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        runners.append(runner)
        port = runner.addresses[0][1]
        return Plane(f"http://127.0.0.1:{port}")

    yield start
    for runner in runners:
        await runner.cleanup()


def pod(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}}


CASES = [
    # (plan, tries made, retried, the answer: stored by the server)
    (["ok"], 1, 0),
    (["stall"], 2, 1),  # stored, answer lost: the second try's 409 reads it back
    (["lost", "ok"], 2, 1),  # never stored: the second try stores it
    (["drop"], 2, 1),
    (["lost", "lost", "stall"], 4, 3),
]


@pytest.mark.asyncio
@pytest.mark.parametrize(("plan", "posts", "retried"), CASES)
async def test_a_create_is_tried_again_and_read_back(
    serve: Any, monkeypatch: pytest.MonkeyPatch, plan: list[str], posts: int, retried: int
) -> None:
    monkeypatch.setattr(kubeside, "CREATE_DEADLINE", 0.2)
    server = Server(list(plan))
    plane = await serve(server)
    async with aiohttp.ClientSession() as session:
        api = kubeside.Api(plane, session)
        made = await api.create("/api/v1/namespaces/bench/pods", pod("p"))
    assert made == server.stored["p"] and made["metadata"]["uid"] == "uid-p"
    assert (server.posts, api.retried) == (posts, retried)


@pytest.mark.asyncio
async def test_a_create_gives_up_after_its_tries(serve: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kubeside, "CREATE_DEADLINE", 0.1)
    server = Server(["lost"] * kubeside.CREATE_TRIES)
    plane = await serve(server)
    async with aiohttp.ClientSession() as session:
        api = kubeside.Api(plane, session)
        with pytest.raises(RuntimeError, match=f"{kubeside.CREATE_TRIES} tries"):
            await api.create("/api/v1/namespaces/bench/pods", pod("p"))
    assert server.posts == kubeside.CREATE_TRIES


@pytest.mark.asyncio
async def test_a_refused_create_is_not_tried_again(serve: Any) -> None:
    server = Server([])
    server.stored["p"] = pod("p")  # AlreadyExists on the first try: the caller's mistake, not a lost answer
    plane = await serve(server)
    async with aiohttp.ClientSession() as session:
        api = kubeside.Api(plane, session)
        with pytest.raises(RuntimeError, match="409"):
            await api.create("/api/v1/namespaces/bench/pods", pod("p"))
    assert (server.posts, api.retried) == (1, 0)
    assert json.dumps(server.stored["p"]) == json.dumps(pod("p"))
