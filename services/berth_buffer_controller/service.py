"""The buffer controller's handler: statuses as they change, onto the buffer-status topic."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from berth.adapters.kube.client import KubeClient, patch_buffer_status
from berth.adapters.runtime.bootstrap import Start
from berth.adapters.runtime.worker import StreamHandler
from berth.core.api.watch import Event
from berth.core.pipeline.buffers import BufferEngine
from berth.core.pipeline.records import encode_record
from berth.core.ports import BUFFER_STATUS, Bus

if TYPE_CHECKING:
    from berth.adapters.runtime.metrics import Metrics  # prometheus_client: not for an embedded replay

StatusWriter = Callable[[str, dict[str, Any]], Awaitable[None]]


# The status fields the buffer controller computes: upstream's, and the proposal's readyReplicas.
STATUS_FIELDS = ("podTemplateRef", "replicas", "podTemplateGeneration", "conditions", "provisioningStrategy", "readyReplicas")  # fmt: skip


class StatusPatcher:
    """--write-status: each status the controller computes replaces the one of its CapacityBuffer through
    the status subresource (RBAC: patch capacitybuffers/status). A merge patch: the fields the controller
    computes and the new status lacks are sent as null, so removed (a buffer that stops being ready loses
    its replicas); fields anyone else writes are left as they are."""

    def __init__(self, client: KubeClient) -> None:
        self.client = client

    async def __call__(self, buffer: str, status: dict[str, Any]) -> None:
        namespace, name = buffer.split("/", 1)
        await patch_buffer_status(self.client, namespace, name, {**dict.fromkeys(STATUS_FIELDS), **status})


class BufferController(StreamHandler):
    def __init__(
        self,
        engine: BufferEngine,
        bus: Bus,
        topic: str = BUFFER_STATUS,
        metrics: Metrics | None = None,
        write_status: StatusWriter | None = None,
    ) -> None:
        self.engine = engine
        self.bus = bus
        self.topic = topic
        self.metrics = metrics
        self.write_status = write_status  # with --write-status: patch the status subresource

    async def handle(self, ev: Event) -> None:
        records = self.engine.handle(ev)
        for r in records:
            await self.bus.send(self.topic, encode_record(r), r.buffer.encode())
            if self.metrics is not None:
                self.metrics.buffer_statuses.inc()
            if self.write_status is not None:  # upstream's fields, and the proposal's readyReplicas (the CRD's)
                await self.write_status(r.buffer, {**r.status, "readyReplicas": r.ready_replicas})

    def apply_only(self, ev: Event) -> None:
        self.engine.apply(ev)

    async def adopt(self, got: Start[BufferEngine]) -> dict[str, Any]:
        self.engine = got.engine
        return {"buffers": len(got.engine.store.buffers)}
