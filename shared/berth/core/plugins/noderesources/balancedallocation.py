"""NodeResourcesBalancedAllocation (Score): favours nodes whose configured resources the pod leaves
more evenly used than it found them. A node's balance is (1 - std of the fractions) x 100, truncated;
kube 1.36 scores 50 + (50 + balance with the pod - balance without it) // 2 (balancedResourceScorer,
kube PR #135573; kube <= 1.35 scored the balance with the pod alone). Actual requests (no 100m / 200Mi
defaults). PreScore skips a pod requesting none of the resources (kube issue 129138). No
NormalizeScore, as upstream."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec
import numpy as np
import numpy.typing as npt

from berth.core import framework as fwk
from berth.core.api.meta.validation import Problems, invalid, unknown_fields
from berth.core.cache.state import ClusterState
from berth.core.plugins.noderesources.allocation import (
    DEFAULT_RESOURCES,
    FEW_SLOTS,
    SAFE_INT,
    Ints,
    ResourceSpec,
    allocatable_requested,
    as_ints,
    parse_resources,
    pod_request,
)

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

    def pre_score(self, cycle: fwk.Cycle, feasible: fwk.Mask) -> fwk.Status:
        if not any(pod_request(cycle.pod, r.name, False) for r in self.args.resources):
            return fwk.SKIP
        return fwk.OK

    def score(self, cycle: fwk.Cycle, feasible: fwk.Mask) -> fwk.Scores:
        return self._score(cycle, len(feasible), None)

    # node-local (berth.core.framework.runtime.incremental): a node's score reads that node's allocatable and requests
    def score_signature(self, cycle: fwk.Cycle) -> fwk.Signature:
        return fwk.Signature(tuple(pod_request(cycle.pod, r.name, False) for r in self.args.resources))

    def score_on(self, cycle: fwk.Cycle, slots: fwk.Slots) -> fwk.Scores:
        return self._score(cycle, len(slots), slots)

    def moving(self, cycle: fwk.Cycle) -> npt.NDArray[Any] | None:
        return None

    def _score(self, cycle: fwk.Cycle, n: int, slots: fwk.Slots | None) -> fwk.Scores:
        pod = cycle.pod
        columns = allocatable_requested(cycle.state.nodes, pod, self.args.resources, None, False, slots)
        if not columns:  # balanced with and without the pod
            return np.full(n, fwk.MAX_NODE_SCORE // 2 + fwk.MAX_NODE_SCORE // 4, dtype=np.int64)
        wants = [pod_request(pod, spec.name, False) for spec, _, _ in columns]
        if slots is not None and n <= FEW_SLOTS and len(columns) == 2 and all(0 <= w < SAFE_INT for w in wants):
            few = as_ints(columns)
            if few is not None:
                return _two_per_slot(few, wants)
        with_pod = balance([(alloc, have + want) for (_, alloc, have), want in zip(columns, wants, strict=True)], n)
        without = balance([(alloc, have) for _, alloc, have in columns], n)
        with_pod += fwk.MAX_NODE_SCORE // 2
        with_pod -= without
        with_pod //= 2  # never negative: both balances are between 50 and 100
        with_pod += fwk.MAX_NODE_SCORE // 2
        return with_pod


def balance(columns: list[tuple[Ints, Ints]], n: int) -> fwk.Scores:
    """kube's balancedResourceScore on each node, from (allocatable, requested) per resource."""
    if len(columns) == 2:
        return std_score_two(columns[0][0], columns[0][1], columns[1][0], columns[1][1])
    return std_score(columns, n)


def std_score(columns: list[tuple[Ints, Ints]], n: int) -> fwk.Scores:
    """(allocatable, requested) per resource: 1 - the std of the fractions of the resources that count
    (allocatable above 0) on each node, x 100."""
    counted = np.array([alloc > 0 for alloc, _ in columns])
    fractions = np.array([np.minimum(req / np.maximum(alloc, 1), 1.0) for alloc, req in columns], dtype=np.float64)
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
    out: fwk.Scores = ((1 - std) * fwk.MAX_NODE_SCORE).astype(np.int64)
    return out


def _fraction(alloc: Ints, req: Ints) -> npt.NDArray[np.float64]:
    out: npt.NDArray[np.float64] = np.divide(req, np.maximum(alloc, 1))
    return np.minimum(out, 1.0, out=out)


def std_score_two(alloc0: Ints, req0: Ints, alloc1: Ints, req1: Ints) -> fwk.Scores:
    """Two resources (cpu and memory, the default): where both count, (1 - |f0 - f1| / 2) x 100; where one
    or none does (allocatable 0), 100. The same float operations as std_score, in fewer passes."""
    std = _fraction(alloc0, req0)
    std -= _fraction(alloc1, req1)
    std /= 2
    np.abs(std, out=std)
    std[(alloc0 <= 0) | (alloc1 <= 0)] = 0.0
    np.subtract(1, std, out=std)
    std *= fwk.MAX_NODE_SCORE
    out: fwk.Scores = std.astype(np.int64)
    return out


def _two_per_slot(columns: list[tuple[ResourceSpec, list[int], list[int]]], wants: list[int]) -> fwk.Scores:
    """_score over a few slots with two resources, slot by slot (values in [0, 2^55): as_ints)."""
    (_, alloc0, have0), (_, alloc1, have1) = columns
    want0, want1 = wants
    half = fwk.MAX_NODE_SCORE // 2
    out = [
        (_two_at(a0, r0 + want0, a1, r1 + want1) + half - _two_at(a0, r0, a1, r1)) // 2 + half
        for a0, r0, a1, r1 in zip(alloc0, have0, alloc1, have1, strict=True)
    ]
    return np.array(out, dtype=np.int64)


def _two_at(alloc0: int, req0: int, alloc1: int, req1: int) -> int:
    """std_score_two on one slot, in the same float operations."""
    if alloc0 <= 0 or alloc1 <= 0:
        return fwk.MAX_NODE_SCORE
    std = abs((min(float(req0) / float(alloc0), 1.0) - min(float(req1) / float(alloc1), 1.0)) / 2)
    return int((1 - std) * fwk.MAX_NODE_SCORE)


def new(args: Any, handle: ClusterState) -> BalancedAllocation:
    return BalancedAllocation(args if args is not None else Args())
