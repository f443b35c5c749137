"""What the pipeline emits, as msgspec Structs (JSON on files and on the bus).

Schema evolution: fields are only ever added, with defaults; readers ignore unknown fields;
a field's meaning never changes. `kind` tells the record types apart on a shared stream.
"""

from __future__ import annotations

from typing import Any

import msgspec

from berth.core.decision import Decision, NodeResult, VolumeBindingOut


class DecisionRecord(msgspec.Struct, frozen=True, rename="camel", kw_only=True):
    """The same object `berth evaluate` prints, plus when, which, and where in the log."""

    kind: str = "Decision"
    ts: str | None
    decision_id: str
    position: int
    attempt: int = 1
    pod: str
    status: str
    node: str | None
    message: str
    volume_bindings: list[VolumeBindingOut] = []
    nodes: dict[str, NodeResult] = {}

    @classmethod
    def of(cls, d: Decision, ts: str | None, decision_id: str, position: int, attempt: int) -> DecisionRecord:
        return cls(
            ts=ts,
            decision_id=decision_id,
            position=position,
            attempt=attempt,
            pod=d.pod,
            status=d.status,
            node=d.node,
            message=d.message,
            volume_bindings=d.volume_bindings,
            nodes=d.nodes,
        )


class BufferStatusRecord(msgspec.Struct, frozen=True, rename="camel", kw_only=True):
    """A CapacityBuffer's status when it changed: the upstream fields plus berth's readiness."""

    kind: str = "BufferStatus"
    ts: str | None
    position: int
    buffer: str
    status: dict[str, Any]
    ready_replicas: int
    fake_pods: int = 0


class RejectRecord(msgspec.Struct, frozen=True, kw_only=True):
    """An input that could not be used, with the reason; the original bytes travel with it."""

    kind: str = "Reject"
    source: str
    position: int
    reason: str
    text: str


Record = DecisionRecord | BufferStatusRecord | RejectRecord
