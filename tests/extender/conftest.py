"""A scorer engine fed with builder events, and the scorer's HTTP server (port 0) serving the extender."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import aiohttp
import pytest_asyncio

from berth.adapters.runtime.http import HttpServer
from berth.adapters.runtime.metrics import Metrics
from berth.core.api.watch import Event, WatchEvent
from berth.core.config.kubeschedulerconfig import parse_config
from berth.core.pipeline.scorer import ScorerEngine
from berth_scorer.extender import BindFn, Routes
from tests.fakeapi import FAST, FakeAPI, api, client  # noqa: F401 - shared fixtures

T0 = datetime(2026, 11, 1, 10, 0, tzinfo=UTC)


def events(*objs: dict[str, Any]) -> list[Event]:
    return [WatchEvent("ADDED", o, T0 + timedelta(seconds=i), i + 1).decoded() for i, o in enumerate(objs)]


def engine_with(*objs: dict[str, Any]) -> ScorerEngine:
    engine = ScorerEngine(parse_config(None))
    for ev in events(*objs):
        engine.handle(ev)
    return engine


class Api:
    """POSTs to the scorer's /scheduler routes as kube-scheduler does."""

    def __init__(self, session: aiohttp.ClientSession, port: int) -> None:
        self.session = session
        self.base = f"http://127.0.0.1:{port}/scheduler"

    async def post(self, verb: str, body: Any) -> Any:
        async with self.session.post(f"{self.base}/{verb}", json=body) as resp:
            assert resp.status == 200, await resp.text()
            return await resp.json()


@pytest_asyncio.fixture
async def serve() -> AsyncIterator[Any]:
    """serve(engine_of, bind=None, score_plugins=()) -> Api: the HttpServer with the extender routes, on port 0."""
    servers: list[HttpServer] = []
    async with aiohttp.ClientSession() as session:

        async def start(engine_of: Any, bind: BindFn | None = None, score_plugins: tuple[str, ...] = ()) -> Api:
            http = HttpServer(Metrics("scorer"), lambda: True, 0, "127.0.0.1")
            Routes(engine_of, bind, score_plugins).add_to(http.app)
            servers.append(http)
            return Api(session, await http.start())

        yield start
    for s in servers:
        await s.stop()
