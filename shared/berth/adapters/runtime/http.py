"""The HTTP side of every service: /healthz, /readyz, /metrics, and extra routes (the extender).

/healthz answers while the event loop runs. /readyz answers 200 once the service's state has caught
up with the stream (the service decides what that means), 503 before.
"""

from __future__ import annotations

from collections.abc import Callable

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from berth.adapters.runtime.metrics import Metrics


class HttpServer:
    def __init__(
        self,
        metrics: Metrics,
        ready: Callable[[], bool],
        port: int,
        host: str = "0.0.0.0",
        detail: Callable[[], str] | None = None,
    ) -> None:
        """detail: a line /readyz adds to its answer (where the state came from, why not ready)."""
        self.metrics = metrics
        self.ready = ready
        self.detail = detail
        self.port = port
        self.host = host
        self.app = web.Application()
        self.app.router.add_get("/healthz", self._healthz)
        self.app.router.add_get("/readyz", self._readyz)
        self.app.router.add_get("/metrics", self._metrics)
        self._runner: web.AppRunner | None = None

    async def _healthz(self, _: web.Request) -> web.Response:
        return web.Response(text="ok\n")

    async def _readyz(self, _: web.Request) -> web.Response:
        more = f"{self.detail()}\n" if self.detail is not None else ""
        if self.ready():
            return web.Response(text=f"ready\n{more}")
        return web.Response(status=503, text=f"catching up\n{more}")

    async def _metrics(self, _: web.Request) -> web.Response:
        body = generate_latest(self.metrics.registry)
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def start(self) -> int:
        """Start serving; returns the bound port (useful with port 0 in tests)."""
        self._runner = web.AppRunner(self.app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port)
        await site.start()
        for address in self._runner.addresses:
            return int(address[1])
        return self.port

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
