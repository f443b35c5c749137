"""Decisions: what berth prints for every pending pod, in one JSON shape everywhere.

A Decision is written inside a DecisionRecord (berth.core.pipeline.records), so it follows
the records' evolution rules (docs/records.md).
"""

from __future__ import annotations

import msgspec


class Provision(msgspec.Struct, frozen=True, omit_defaults=True, rename="camel"):
    storage_class: str
    node: str


class VolumeBindingOut(msgspec.Struct, frozen=True, omit_defaults=True):
    claim: str
    pv: str | None = None
    provision: Provision | None = None


class NodeResult(msgspec.Struct, frozen=True, omit_defaults=True):
    feasible: bool
    reasons: list[str]
    scores: dict[str, int] | None = None
    total: int | None = None


class Decision(msgspec.Struct, frozen=True, rename="camel"):
    pod: str
    status: str  # Scheduled | Unschedulable | Error
    node: str | None
    message: str
    volume_bindings: list[VolumeBindingOut] = []
    nodes: dict[str, NodeResult] = {}
    # preemption (DefaultPreemption): the node nominated for the pod and the pods (namespace/name) to
    # evict there; left out of the JSON when preemption cannot help
    nominated_node: str | msgspec.UnsetType = msgspec.UNSET
    victims: list[str] | msgspec.UnsetType = msgspec.UNSET
