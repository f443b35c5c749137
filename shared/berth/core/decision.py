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


def with_post_filter(message: str, post_filter: str) -> str:
    """kube's FitError with its PostFilter message appended after a space (FitError.Error)."""
    return f"{message} {post_filter}" if post_filter else message


# kube's ErrNoNodesAvailable: the cycle ends before PreFilter when the cluster has no node.
NO_NODES_AVAILABLE = "no nodes available to schedule pods"


def fit_error(total_nodes: int, reasons: dict[str, int], pre_filter: str = "") -> str:
    """kube's FitError.Error(): "0/N nodes are available:", then the PreFilter message if a PreFilter
    rejected the pod, else each reason counted ("%d %s") over the nodes' first failing plugins, sorted
    as strings and joined with ", "; each part ends with "." (with_post_filter adds the PostFilter's)."""
    text = f"0/{total_nodes} nodes are available:"
    if pre_filter:
        text += f" {pre_filter}."
    else:
        parts = sorted(f"{n} {r}" for r, n in reasons.items())
        if parts:
            text += f" {', '.join(parts)}."
    return text
