"""NodeResourcesFit: the Filter (the pod's requests against each node's allocatable less what is
requested there, with ignoredResources / ignoredResourceGroups) and the Score (scoringStrategy:
LeastAllocated, MostAllocated or RequestedToCapacityRatio, counting cpu and memory as kube's
scoring does: 100m / 200Mi for a container naming neither). No NormalizeScore, as upstream."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from berth.core import framework as fwk
from berth.core.api.core.model import Node, Pod
from berth.core.api.core.resources import CPU, EPHEMERAL, MEMORY, PODS, is_extended, is_scalar, is_tracked, show
from berth.core.cache.state import ClusterState
from berth.core.plugins.noderesources.allocation import (
    FEW_SLOTS,
    Ints,
    NonZeroRequested,
    ResourceSpec,
    allocatable_requested,
    as_ints,
    pod_request,
)
from berth.core.plugins.noderesources.fitargs import LEAST, MAX_CUSTOM_PRIORITY_SCORE, MOST, NodeResourcesFitArgs

NAME = "NodeResourcesFit"
Args = NodeResourcesFitArgs


MOST_LEAVING = 5  # pods named in one "fits if they leave" suggestion


def leaving_pods(state: ClusterState, shorts: dict[int, dict[str, tuple[int, int]]]) -> dict[int, fwk.Change]:
    """Per slot, the pods on the node whose leaving frees at least the short amount of every resource
    (resource -> (short, allocatable); allocatable 0: the pod wants more than the whole node, and no
    pod leaving helps): one pod if one does, the one freeing least; else the largest first, then any
    not needed dropped. At most MOST_LEAVING pods. Cost: what they free as a share of the node."""
    names = state.nodes.names
    wanted = {names[s]: s for s, short in shorts.items() if all(a > 0 for _, a in short.values())}
    on: dict[int, list[tuple[str, Mapping[str, int]]]] = {}
    for key in sorted(state.pods):
        usage = state.usage_of(key)
        if usage is not None and usage[0] in wanted:
            on.setdefault(wanted[usage[0]], []).append((key, usage[1]))
    out = {}
    for s, pods in on.items():
        short = shorts[s]

        def cost(amounts: Mapping[str, int], short: dict[str, tuple[int, int]] = short) -> float:
            return sum(amounts.get(r, 0) / a for r, (_, a) in short.items())

        def covers(group: list[tuple[str, Mapping[str, int]]], short: dict[str, tuple[int, int]] = short) -> bool:
            return all(sum(u.get(r, 0) for _, u in group) >= n for r, (n, _) in short.items())

        ranked = sorted(pods, key=lambda p: cost(p[1]))
        one = next((p for p in ranked if covers([p])), None)
        if one is not None:
            group = [one]
        else:
            group = []
            for p in reversed(ranked):
                group.append(p)
                if covers(group):
                    break
            if not covers(group):
                continue
            for p in sorted(group, key=lambda p: cost(p[1])):
                if covers([q for q in group if q is not p]):
                    group.remove(p)
        if len(group) <= MOST_LEAVING:
            freed = sum(cost(u) for _, u in group)
            out[s] = fwk.Change(leave=tuple(sorted(k for k, _ in group)), cost=freed)
    return out


def _least(alloc: Ints, req: Ints) -> Ints:
    out: Ints = alloc - req
    out *= fwk.MAX_NODE_SCORE
    out //= np.maximum(alloc, 1)
    out[req > alloc] = 0
    return out


def _most(alloc: Ints, req: Ints) -> Ints:
    out: Ints = np.minimum(req, alloc) * fwk.MAX_NODE_SCORE // np.maximum(alloc, 1)
    return out


def _per_slot(columns: list[tuple[ResourceSpec, list[int], list[int]]], n: int, least: bool) -> fwk.Scores:
    """_score with LeastAllocated (least) or MostAllocated over a few slots, slot by slot (values in
    [0, 2^55): as_ints): a resource counts where its allocatable is above 0."""
    out = []
    for i in range(n):
        total = weights = 0
        for spec, allocs, reqs in columns:
            alloc, req = allocs[i], reqs[i]
            if alloc <= 0:
                continue
            if least:
                part = 0 if req > alloc else (alloc - req) * fwk.MAX_NODE_SCORE // alloc
            else:
                part = min(req, alloc) * fwk.MAX_NODE_SCORE // alloc
            total += part * spec.weight
            weights += spec.weight
        out.append(total // weights if weights > 0 else 0)
    return np.array(out, dtype=np.int64)


def _trunc_div(a: Ints, b: int) -> Ints:
    """Go's integer division: toward zero."""
    out: Ints = np.where(a < 0, -((-a) // b), a // b)
    return out


def broken_linear(pts: list[tuple[int, int]], p: Ints) -> Ints:
    """kube's buildBrokenLinearFunction over many utilisations at once: (utilization, score) points."""
    out = np.full(len(p), pts[-1][1], dtype=np.int64)
    done = np.zeros(len(p), dtype=bool)
    for i, (u, s) in enumerate(pts):
        here = ~done & (p <= u)
        if i == 0:
            out[here] = s
        else:
            u0, s0 = pts[i - 1]
            out[here] = s0 + _trunc_div((s - s0) * (p[here] - u0), u - u0)
        done |= here
    return out


class NodeResourcesFit:
    name = NAME

    def __init__(self, args: NodeResourcesFitArgs) -> None:
        self.args = args
        self.nonzero = NonZeroRequested()

    def extension(self) -> NonZeroRequested:
        return self.nonzero

    def _ignored(self, name: str) -> bool:
        if not is_extended(name):  # ignoredResources / ignoredResourceGroups apply to these only
            return False
        return name in self.args.ignored_resources or name.split("/")[0] in self.args.ignored_resource_groups

    def wants(self, pod: Pod) -> list[tuple[str, int]]:
        """What the filter checks, in its order: one pod's room, then each resource the pod asks for
        (cpu, memory, ephemeral-storage, then the scalar ones not ignored)."""
        out = [(PODS, 1)]
        requests = pod.requests
        if not any(v for k, v in requests.items() if k != PODS):
            return out
        order = [
            CPU,
            MEMORY,
            EPHEMERAL,
            *sorted(k for k in requests if is_scalar(k) and not self._ignored(k)),
        ]
        out.extend((name, requests[name]) for name in order if requests.get(name, 0) > 0)
        return out

    def reason(self, resource: str) -> str:
        return "Too many pods" if resource == PODS else f"Insufficient {resource}"

    def filter(self, cycle: fwk.Cycle) -> list[fwk.Failure]:
        nodes = cycle.state.nodes
        return self._short(cycle.pod, nodes.valid, nodes.allocatable, nodes.requested)

    def filter_with(self, cycle: fwk.Cycle, slots: fwk.Slots, extra: Mapping[str, Ints]) -> list[fwk.Failure]:
        """The filter on these slots with `extra` more requested on each (per resource, an amount per
        slot: nominated pods' requests, their count under pods), masks over the slots."""
        nodes = cycle.state.nodes
        return self._short(
            cycle.pod,
            nodes.valid[slots],
            lambda n: nodes.allocatable(n)[slots],
            lambda n: nodes.requested(n)[slots] + extra.get(n, 0),
        )

    def _short(
        self, pod: Pod, valid: fwk.Mask, allocatable: Callable[[str], Ints], requested: Callable[[str], Ints]
    ) -> list[fwk.Failure]:
        """Each resource the pod wants more of than is free: Unschedulable, or UnschedulableAndUnresolvable
        where it wants more than the node's whole allocatable (kube's fitsRequest, InsufficientResource.Unresolvable:
        preemption cannot help there; Too many pods never is). Per resource, the Unschedulable slots first."""
        out = []
        for name, want in self.wants(pod):
            alloc = allocatable(name)
            short = valid & (alloc - requested(name) < want)
            if not short.any():
                continue
            reason = self.reason(name)
            whole = short & (alloc < want) if name != PODS else np.zeros_like(short)
            if whole.any():
                if not (short & ~whole).any():
                    out.append(fwk.Failure(short, reason, fwk.Code.UNRESOLVABLE))
                    continue
                out.append(fwk.Failure(short & ~whole, reason))
                out.append(fwk.Failure(whole, reason, fwk.Code.UNRESOLVABLE))
            else:
                out.append(fwk.Failure(short, reason))
        return out

    def explain_filter(self, cycle: fwk.Cycle, slots: fwk.Slots) -> dict[int, list[fwk.Why]]:
        """Per resource short on a node: what the pod requests, what is requested there already, the
        allocatable, and how much more allocatable the node would need; instead of that, the pods there
        whose leaving frees enough of every short resource (leaving_pods)."""
        nodes = cycle.state.nodes
        out: dict[int, list[fwk.Why]] = {}
        shorts: dict[int, dict[str, tuple[int, int]]] = {}  # slot -> resource -> (short, allocatable)
        for name, want in self.wants(cycle.pod):
            alloc, used = nodes.allocatable(name)[slots].tolist(), nodes.requested(name)[slots].tolist()
            for s, a, u in zip(slots.tolist(), alloc, used, strict=True):
                if a - u >= want:
                    continue
                short = want - (a - u)
                text = (
                    f"{name}: the pod requests {show(name, want)}; {show(name, u)} of {show(name, a)} allocatable "
                    f"is requested already, {show(name, max(a - u, 0))} free: {show(name, short)} short"
                )
                if a < want:
                    text += " (more than the node's whole allocatable)"
                facts = {"resource": name, "requested": want, "used": u, "allocatable": a, "short": short}
                cost = short / a if a > 0 else float(short)
                why = fwk.Why(self.reason(name), text, facts, fwk.Change(more=((name, short),), cost=cost))
                out.setdefault(s, []).append(why)
                shorts.setdefault(s, {})[name] = (short, a if a >= want else 0)
        leaving = leaving_pods(cycle.state, shorts)
        for s, leave in leaving.items():
            out[s] = [dataclasses.replace(w, instead=leave) for w in out[s]]
        return out

    # node-local (berth.core.framework.runtime.incremental): a node's answer reads that node's allocatable and requests
    def filter_signature(self, cycle: fwk.Cycle) -> fwk.Signature:
        wants = tuple(self.wants(cycle.pod))
        codes = (fwk.Code.UNSCHEDULABLE, fwk.Code.UNRESOLVABLE)
        return fwk.Signature(
            wants, tuple((self.reason(name), c) for name, _ in wants for c in codes[: 1 + (name != PODS)])
        )

    def filter_on(self, cycle: fwk.Cycle, slots: fwk.Slots) -> list[fwk.Failure]:
        nodes = cycle.state.nodes
        return self._short(
            cycle.pod, nodes.valid[slots], lambda n: nodes.allocatable(n)[slots], lambda n: nodes.requested(n)[slots]
        )

    def moving(self, cycle: fwk.Cycle) -> npt.NDArray[Any] | None:
        return None

    def score_signature(self, cycle: fwk.Cycle) -> fwk.Signature:
        return fwk.Signature(tuple(pod_request(cycle.pod, r.name, True) for r in self.args.scoring_strategy.resources))

    def score_on(self, cycle: fwk.Cycle, slots: fwk.Slots) -> fwk.Scores:
        strategy = self.args.scoring_strategy
        columns = allocatable_requested(cycle.state.nodes, cycle.pod, strategy.resources, self.nonzero, slots=slots)
        if len(slots) <= FEW_SLOTS and strategy.type in (LEAST, MOST):
            few = as_ints(columns)
            if few is not None:
                return _per_slot(few, len(slots), strategy.type == LEAST)
        return self._score(columns, np.ones(len(slots), dtype=bool))

    def score(self, cycle: fwk.Cycle, feasible: fwk.Mask) -> fwk.Scores:
        strategy = self.args.scoring_strategy
        columns = allocatable_requested(cycle.state.nodes, cycle.pod, strategy.resources, self.nonzero)
        return self._score(columns, feasible)

    def _score(self, columns: list[tuple[ResourceSpec, Ints, Ints]], feasible: fwk.Mask) -> fwk.Scores:
        strategy = self.args.scoring_strategy
        n = len(feasible)
        total = np.zeros(n, dtype=np.int64)
        weights: Ints | int = 0  # one weight for every slot while every resource counts on every feasible slot
        infeasible = ~feasible  # only feasible slots are read
        for spec, alloc, req in columns:
            counted = alloc > 0
            if strategy.type == LEAST:
                part = _least(alloc, req)
            elif strategy.type == MOST:
                part = _most(alloc, req)
            else:
                assert strategy.shape is not None
                util = np.where(req > alloc, 100, req * 100 // np.maximum(alloc, 1))
                scale = fwk.MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE
                part = broken_linear([(pt.utilization, pt.score * scale) for pt in strategy.shape], util)
                counted &= part > 0  # a resource scoring 0 drops out with its weight
            if isinstance(weights, int) and (counted | infeasible).all():
                part *= spec.weight
                total += part
                weights += spec.weight
                continue
            total += np.where(counted, part * spec.weight, 0)
            weights = weights + np.where(counted, spec.weight, 0)
        if isinstance(weights, int):  # the same quotient, by one divisor (much cheaper than one per slot)
            if weights <= 0:
                return np.zeros(n, dtype=np.int64)
            if strategy.type in (LEAST, MOST):
                return total // weights
            return (2 * total + weights) // (2 * weights)
        safe = np.maximum(weights, 1)
        if strategy.type in (LEAST, MOST):
            out: fwk.Scores = np.where(weights > 0, total // safe, 0)
        else:  # math.Round: half away from zero (scores are never negative)
            out = np.where(weights > 0, (2 * total + safe) // (2 * safe), 0)
        return out

    def events_to_register(self) -> tuple[fwk.ClusterEventWithHint, ...]:
        # kube: Node Add|Update with a hint; a pod leaving its node frees its requests there, and so does
        # an assigned pod scaled down in place (Pod Delete|UpdatePodScaleDown, InPlacePodVerticalScaling on).
        # berth keeps Node Delete, without a hint, as it always had.
        return (
            fwk.ClusterEventWithHint(fwk.ClusterEvent("Node", fwk.Action.ADD | fwk.Action.UPDATE), self.node_hint),
            fwk.ClusterEventWithHint(fwk.ClusterEvent("Node", fwk.Action.DELETE)),
            fwk.ClusterEventWithHint(fwk.ClusterEvent("Pod", fwk.Action.DELETE)),
            fwk.ClusterEventWithHint(fwk.ClusterEvent("Pod", fwk.Action.UPDATE_POD_SCALE_DOWN), self.scale_down_hint),
        )

    def scale_down_hint(self, state: ClusterState, obj: Any, now: Any) -> fwk.Hint:
        """kube's isSchedulableAfterPodEvent for a scale-down (isSchedulableAfterPodScaleDown): retry a
        pod that asks for a resource the assigned pod now requests less of."""
        assert isinstance(obj, fwk.PodUpdate)
        if not obj.new.node_name:
            return fwk.never
        old, new = obj.old.requests, obj.new.requests
        down = [k for k, v in old.items() if is_tracked(k) and new.get(k, 0) < v]
        if not down:
            return fwk.never
        return lambda pods, version: fwk.each_pod(pods, lambda p: any(p.requests.get(k, 0) > 0 for k in down))

    def node_hint(self, state: ClusterState, obj: Any, now: Any) -> fwk.Hint:
        """kube's isFit: a node added or updated; retry a pod that would fit it were it empty."""
        assert isinstance(obj, Node)
        alloc = obj.allocatable

        def helps(p: Pod) -> bool:
            if alloc.get(PODS, 0) < 1:
                return False
            return all(
                v <= 0 or not is_tracked(k) or self._ignored(k) or alloc.get(k, 0) >= v for k, v in p.requests.items()
            )

        return lambda pods, version: fwk.each_pod(pods, helps)


def new(args: Any, handle: ClusterState) -> NodeResourcesFit:
    return NodeResourcesFit(args if args is not None else Args())
