"""What the pipeline emits, as msgspec Structs (JSON on files and on the bus).

Every record is one member of the `Record` union, told apart by its `kind` tag, which is
encoded first. The evolution rules (docs/records.md): fields are only added, with defaults;
a field's meaning never changes; readers ignore unknown fields; a new record is a new kind,
and a reader skips a kind it does not know (`decode_record` returns None).
"""

from __future__ import annotations

from typing import Any

import msgspec

from berth.core.scheduler.results import Decision, NodeResult, VolumeBindingOut


class DecisionRecord(msgspec.Struct, frozen=True, rename="camel", kw_only=True, tag_field="kind", tag="Decision"):
    """The same object `berth evaluate` prints, plus when, which, and where in the log."""

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
    # Added in issue 18: when nothing fits, how many nodes gave each reason (kube's counts in the message).
    # Left out of the JSON when unset, so records without it keep their bytes.
    reasons: dict[str, int] | msgspec.UnsetType = msgspec.UNSET
    # Added in issue 17: a preemption's nominated node and its victims (namespace/name); left out unless set.
    nominated_node: str | msgspec.UnsetType = msgspec.UNSET
    victims: list[str] | msgspec.UnsetType = msgspec.UNSET

    @classmethod
    def of(
        cls,
        d: Decision,
        ts: str | None,
        decision_id: str,
        position: int,
        attempt: int,
        reasons: dict[str, int] | None = None,
    ) -> DecisionRecord:
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
            reasons=reasons or msgspec.UNSET,
            nominated_node=d.nominated_node,
            victims=d.victims,
        )


class BufferStatusRecord(
    msgspec.Struct, frozen=True, rename="camel", kw_only=True, tag_field="kind", tag="BufferStatus"
):
    """A CapacityBuffer's status when it changed: the upstream fields plus berth's readiness."""

    ts: str | None
    position: int
    buffer: str
    status: dict[str, Any]
    ready_replicas: int
    fake_pods: int = 0


class RejectRecord(msgspec.Struct, frozen=True, kw_only=True, tag_field="kind", tag="Reject"):
    """An input that could not be used, with the reason; the original bytes travel with it.
    This is also the dead-letter record: `source` says which service read it, and where."""

    source: str
    position: int
    reason: str
    text: str


Record = DecisionRecord | BufferStatusRecord | RejectRecord
KINDS = frozenset(t.__struct_config__.tag for t in (DecisionRecord, BufferStatusRecord, RejectRecord))

_decoder: msgspec.json.Decoder[Record] = msgspec.json.Decoder(Record)
_encoder = msgspec.json.Encoder()


class _Kind(msgspec.Struct):
    kind: str


def decode_record(data: bytes) -> Record | None:
    """One record, or None when its kind is one this version does not know (a newer writer's):
    the reader skips it and goes on. A known kind that does not decode, or bytes without a
    kind, raise msgspec's error, as any bad input does."""
    try:
        return _decoder.decode(data)
    except msgspec.ValidationError:
        if msgspec.json.decode(data, type=_Kind).kind in KINDS:
            raise
        return None


def encode_record(record: Record) -> bytes:
    return _encoder.encode(record)
