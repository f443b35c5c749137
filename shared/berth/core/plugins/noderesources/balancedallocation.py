"""NodeResourcesBalancedAllocation (Score): favours nodes whose configured resources would be used
in equal fractions with the pod: (1 - std of the fractions) x 100, truncated. Actual requests (no
100m / 200Mi defaults). PreScore skips a pod requesting none of the resources (kube issue 129138).
No NormalizeScore, as upstream."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec
import numpy as np

from berth.core.framework import MAX_NODE_SCORE, OK, SKIP, Cycle, Mask, Scores, Status
from berth.core.plugins.noderesources.allocation import (
    DEFAULT_RESOURCES,
    ResourceSpec,
    allocatable_requested,
    parse_resources,
    pod_request,
)
from berth.core.state import ClusterState
from berth.core.validation import Problems, invalid, unknown_fields

NAME = "NodeResourcesBalancedAllocation"


class Args(msgspec.Struct, frozen=True, kw_only=True):
    resources: tuple[ResourceSpec, ...] = DEFAULT_RESOURCES

    @classmethod
    def parse(cls, raw: Mapping[str, Any], path: str, problems: Problems) -> Args:
        unknown_fields(raw, {"apiVersion", "kind", "resources"}, path, problems)
        if raw.get("kind", f"{NAME}Args") != f"{NAME}Args":
            problems.append(invalid(f"{path}.kind", raw["kind"], f"want {NAME}Args"))
        resources = parse_resources(raw.get("resources") or None, f"{path}.resources", problems)
        seen: set[str] = set()
        for i, r in enumerate(resources):
            if r.name in seen:
                problems.append(f'{path}.resources[{i}].name: Duplicate value: "{r.name}"')
            seen.add(r.name)
            if r.weight != 1:
                problems.append(invalid(f"{path}.resources[{i}].weight", r.weight, "must be 1"))
        return cls(resources=resources)


class BalancedAllocation:
    name = NAME

    def __init__(self, args: Args) -> None:
        self.args = args

    def pre_score(self, cycle: Cycle, feasible: Mask) -> Status:
        if not any(pod_request(cycle.pod, r.name, False) for r in self.args.resources):
            return SKIP
        return OK

    def score(self, cycle: Cycle, feasible: Mask) -> Scores:
        columns = allocatable_requested(cycle.state.nodes, cycle.pod, self.args.resources, None)
        n = len(feasible)
        if not columns:
            return np.full(n, MAX_NODE_SCORE, dtype=np.int64)
        counted = np.array([alloc > 0 for _, alloc, _ in columns])
        fractions = np.array(
            [np.minimum(req / np.maximum(alloc, 1), 1.0) for _, alloc, req in columns], dtype=np.float64
        )
        fractions = np.where(counted, fractions, 0.0)
        k = counted.sum(axis=0)
        std = np.zeros(n, dtype=np.float64)
        if len(columns) >= 2:
            # two kept resources: |f1 - f2| / 2, in kube's order of operations
            first = np.argmax(counted, axis=0)
            last = len(columns) - 1 - np.argmax(counted[::-1], axis=0)
            cols = np.arange(n)
            two = np.abs((fractions[first, cols] - fractions[last, cols]) / 2)
            mean = fractions.sum(axis=0) / np.maximum(k, 1)
            dev = np.where(counted, (fractions - mean) ** 2, 0.0).sum(axis=0)
            more = np.sqrt(dev / np.maximum(k, 1))
            std = np.where(k == 2, two, np.where(k > 2, more, 0.0))
        out: Scores = ((1 - std) * MAX_NODE_SCORE).astype(np.int64)
        return out


def new(args: Any, handle: ClusterState) -> BalancedAllocation:
    return BalancedAllocation(args if args is not None else Args())
