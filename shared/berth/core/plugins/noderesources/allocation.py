"""What NodeResourcesFit's scoring and NodeResourcesBalancedAllocation share (kube's
resourceAllocationScorer): per configured resource, each node's allocatable and what would be
requested there with the pod, over all slots at once; and the per-node "non-zero" cpu and memory
totals kube's NodeResourcesFit scoring counts (100m / 200Mi for a container naming neither).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import msgspec
import numpy as np
import numpy.typing as npt

from berth.core.api.core.model import Pod
from berth.core.api.core.resources import CPU, MEMORY, PODS, is_scalar, is_tracked
from berth.core.api.meta.validation import Problems, invalid, is_int
from berth.core.cache.extension import StateExtension
from berth.core.cache.nodes import NodeTable
from berth.core.cache.state import ClusterState

Ints = npt.NDArray[np.int64]

# score_on over this many slots or fewer works slot by slot in Python: an incremental cycle computes
# one or two slots again, where numpy's cost per call (about a microsecond) outweighs the arithmetic
FEW_SLOTS = 8
# per-slot arithmetic matches numpy's int64 only while nothing can wrap: values in [0, 2^55)
SAFE_INT = 1 << 55


class ResourceSpec(msgspec.Struct, frozen=True):
    name: str
    weight: int = 1


DEFAULT_RESOURCES = (ResourceSpec(CPU, 1), ResourceSpec(MEMORY, 1))


def parse_resources(raw: Any, path: str, problems: Problems) -> tuple[ResourceSpec, ...]:
    """kube's v1 defaulting of a resources list: empty or absent -> cpu and memory, weight 0 -> 1."""
    if raw is None:
        return DEFAULT_RESOURCES
    if not isinstance(raw, list):
        problems.append(invalid(path, raw, "must be a list of {name, weight}"))
        return DEFAULT_RESOURCES
    out = []
    for i, item in enumerate(raw):
        at = f"{path}[{i}]"
        if not isinstance(item, Mapping) or not isinstance(item.get("name"), str):
            problems.append(
                invalid(f"{at}.name", item.get("name") if isinstance(item, Mapping) else item, "must be a string")
            )
            continue
        weight = item.get("weight", 0)
        if not is_int(weight):
            problems.append(invalid(f"{at}.weight", weight, "must be an integer"))
            continue
        out.append(ResourceSpec(item["name"], weight or 1))
    return tuple(out) or DEFAULT_RESOURCES


class NonZeroRequested(StateExtension):
    """Per node, the pods' cpu and memory as kube's scoring counts them (NodeInfo.NonZeroRequested),
    kept in step with pods as they are bound, reserved, released and deleted. A ClusterState extension
    of no kinds of its own."""

    assigned_only = True

    def __init__(self) -> None:
        self._by_node: dict[str, list[int]] = {}
        self._counted: dict[str, tuple[str, int, int]] = {}  # pod key -> (node, cpu, memory)
        self.cpu: Ints = np.zeros(0, dtype=np.int64)
        self.memory: Ints = np.zeros(0, dtype=np.int64)
        self._nodes: NodeTable | None = None

    def _fit(self, nodes: NodeTable) -> None:
        self._nodes = nodes
        n = len(nodes.valid)
        if len(self.cpu) < n:
            self.cpu = np.concatenate([self.cpu, np.zeros(n - len(self.cpu), dtype=np.int64)])
            self.memory = np.concatenate([self.memory, np.zeros(n - len(self.memory), dtype=np.int64)])

    def _add(self, node: str, cpu: int, memory: int) -> None:
        total = self._by_node.setdefault(node, [0, 0])
        total[0] += cpu
        total[1] += memory
        slot = None if self._nodes is None else self._nodes.slot.get(node)
        if slot is not None:
            if slot >= len(self.cpu):
                self._fit(self._nodes)  # type: ignore[arg-type]
            self.cpu[slot] += cpu
            self.memory[slot] += memory

    def pod_changed(self, state: ClusterState, old: Pod | None, new: Pod | None) -> None:
        self._fit(state.nodes)
        key = (new or old).key  # type: ignore[union-attr]
        prev = self._counted.pop(key, None)
        now = None
        if new is not None and new.node_name and not new.terminated:
            nonzero = new.nonzero_requests or new.requests
            now = (new.node_name, nonzero.get(CPU, 0), nonzero.get(MEMORY, 0))
            if now == prev:
                self._counted[key] = now  # counted there already: off and on again nets zero
                return
        if prev is not None:
            self._add(prev[0], -prev[1], -prev[2])
        if now is not None:
            self._counted[key] = now
            self._add(*now)

    def node_changed(self, state: ClusterState, slot: int) -> None:
        self._fit(state.nodes)
        name = state.nodes.names[slot] if slot < len(state.nodes.names) else None
        total = self._by_node.get(name, [0, 0]) if name is not None else [0, 0]
        self.cpu[slot], self.memory[slot] = total

    def read(self, nodes: NodeTable, resource: str) -> Ints:
        self._fit(nodes)
        n = len(nodes.valid)
        return (self.cpu if resource == CPU else self.memory)[:n]


def pod_request(pod: Pod, name: str, nonzero: bool) -> int:
    if nonzero and name in (CPU, MEMORY):
        return (pod.nonzero_requests or pod.requests).get(name, 0)
    return pod.requests.get(name, 0)


def allocatable_requested(
    nodes: NodeTable,
    pod: Pod,
    resources: Sequence[ResourceSpec],
    nonzero: NonZeroRequested | None,
    with_pod: bool = True,
    slots: npt.NDArray[np.intp] | None = None,
) -> list[tuple[ResourceSpec, Ints, Ints]]:
    """Per configured resource kube scores: (spec, allocatable, requested) over all slots. A resource
    is left out where kube skips it: a scalar the pod does not request, a name kube keeps on no node
    (neither cpu, memory, ephemeral-storage nor scalar), `pods`; a slot whose
    allocatable is 0 is to be skipped by the caller (both its score and its weight). nonzero: the
    node totals to use for cpu and memory (NodeResourcesFit), None for the actual requests. slots: those
    slots only."""
    out = []
    for spec in resources:
        want = pod_request(pod, spec.name, nonzero is not None)
        if spec.name == PODS or not is_tracked(spec.name) or (want == 0 and is_scalar(spec.name)):
            continue  # kube's nodes keep no figure of an untracked name: its allocatable reads 0
        alloc = nodes.allocatable(spec.name)
        if nonzero is not None and spec.name in (CPU, MEMORY):
            have = nonzero.read(nodes, spec.name)
        else:
            have = nodes.requested(spec.name)
        if slots is not None:
            alloc, have = alloc[slots], have[slots]
        out.append((spec, alloc, have + want if with_pod else have.copy()))
    return out


def as_ints(columns: list[tuple[ResourceSpec, Ints, Ints]]) -> list[tuple[ResourceSpec, list[int], list[int]]] | None:
    """allocatable_requested's columns over a few slots as Python ints, for scoring slot by slot;
    None where a value is outside [0, 2^55) (int64 arithmetic on it could wrap)."""
    out = []
    for spec, alloc, req in columns:
        a, r = alloc.tolist(), req.tolist()
        if not all(0 <= v < SAFE_INT for v in a) or not all(0 <= v < SAFE_INT for v in r):
            return None
        out.append((spec, a, r))
    return out
