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


def fit_error(total_nodes: int, reasons: dict[str, int]) -> str:
    """kube's FitError text: counts then reasons, sorted as strings."""
    parts = sorted(f"{n} {r}" for r, n in reasons.items())
    text = f"0/{total_nodes} nodes are available:"
    return f"{text} {', '.join(parts)}." if parts else text
