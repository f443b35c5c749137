"""TaintToleration: the Filter rejects NoSchedule and NoExecute taints the pod does not tolerate; the
Score counts the node's PreferNoSchedule taints the pod's PreferNoSchedule (or effect-less)
tolerations do not tolerate, and NormalizeScore reverses the counts (fewest: 100)."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from berth.core import framework as fwk
from berth.core.api.core.model import Node, Taint, Toleration
from berth.core.cache.extension import StateExtension
from berth.core.cache.nodes import NodeTable
from berth.core.cache.state import ClusterState
from berth.core.plugins.helper.normalize_score import default_normalize

NAME = "TaintToleration"
Args = None
# kube 1.36: the reason names no taint (taint_toleration.go, Filter; TestTaintTolerationFilter)
REASON = "node(s) had untolerated taint(s)"
_NONE_COUNTED = f"{NAME}.none"  # cycle.data: this cycle's scores are all zero


def untolerated(taints: tuple[Taint, ...], tolerations: tuple[Toleration, ...]) -> Taint | None:
    return next((t for t in taints if not any(tol.tolerates(t) for tol in tolerations)), None)


class PreferTaints(StateExtension):
    """Each slot's PreferNoSchedule taints, as an id into a list of distinct sets (a ClusterState
    extension kept as nodes change), so the Score counts once per distinct set."""

    assigned_only = True

    def __init__(self) -> None:
        self.sets: list[tuple[Taint, ...]] = [()]
        self._index: dict[tuple[Taint, ...], int] = {(): 0}
        self._ids: npt.NDArray[np.int64] = np.zeros(0, dtype=np.int64)

    def ids(self, nodes: NodeTable) -> npt.NDArray[np.int64]:
        n = len(nodes.valid)
        if len(self._ids) < n:
            self._ids = np.concatenate([self._ids, np.zeros(n - len(self._ids), dtype=np.int64)])
        return self._ids

    def node_changed(self, state: ClusterState, slot: int) -> None:
        ids = self.ids(state.nodes)
        node = state.nodes.node(slot)
        key = () if node is None else tuple(t for t in node.taints if t.effect == "PreferNoSchedule")
        sid = self._index.get(key)
        if sid is None:
            sid = self._index[key] = len(self.sets)
            self.sets.append(key)
        ids[slot] = sid


class TaintToleration:
    name = NAME
    ignores_pods = True  # its verdict never reads the pods on a node (framework.IgnoresPods)

    def __init__(self) -> None:
        self.prefer = PreferTaints()

    def extension(self) -> PreferTaints:
        return self.prefer

    def filter(self, cycle: fwk.Cycle) -> list[fwk.Failure]:
        nodes = cycle.state.nodes
        tolerations = cycle.pod.tolerations
        bad = [
            t for t, taints in enumerate(nodes.taint_sets) if taints and untolerated(taints, tolerations) is not None
        ]
        if not bad:
            return []
        mask = np.isin(nodes.taint_set, bad) & nodes.valid
        return [fwk.Failure(mask, REASON, fwk.Code.UNRESOLVABLE)] if mask.any() else []

    def explain_filter(self, cycle: fwk.Cycle, slots: fwk.Slots) -> dict[int, list[fwk.Why]]:
        """The node's NoSchedule and NoExecute taints the pod does not tolerate, by key, value and effect."""
        nodes, tolerations = cycle.state.nodes, cycle.pod.tolerations
        out: dict[int, list[fwk.Why]] = {}
        for s in slots.tolist():
            taints = [t for t in nodes.taint_sets[int(nodes.taint_set[s])] if untolerated((t,), tolerations)]
            if not taints:
                continue
            shown = [f"{t.key}={t.value}:{t.effect}" if t.value else f"{t.key}:{t.effect}" for t in taints]
            text = f"untolerated taint(s): {', '.join(shown)}"
            facts = {"taints": [{"key": t.key, "value": t.value, "effect": t.effect} for t in taints]}
            wanted = tuple(Toleration(key=t.key, value=t.value, effect=t.effect) for t in taints)
            out[s] = [fwk.Why(REASON, text, facts, fwk.Change(tolerate=wanted))]
        return out

    def pre_score(self, cycle: fwk.Cycle, feasible: fwk.Mask) -> fwk.Status:
        cycle.data[self.name] = tuple(t for t in cycle.pod.tolerations if t.effect in ("", "PreferNoSchedule"))
        return fwk.OK

    def score(self, cycle: fwk.Cycle, feasible: fwk.Mask) -> fwk.Scores:
        tolerations: tuple[Toleration, ...] = cycle.data[self.name]
        sets = self.prefer.sets
        counts = np.array(
            [sum(1 for t in taints if not any(tol.tolerates(t) for tol in tolerations)) for taints in sets],
            dtype=np.int64,
        )
        if not counts.any():  # no node has a PreferNoSchedule taint the pod does not tolerate
            cycle.data[_NONE_COUNTED] = True
            return np.zeros(len(feasible), dtype=np.int64)
        ids = self.prefer.ids(cycle.state.nodes)
        out: fwk.Scores = np.where(feasible, counts[ids[: len(feasible)]], 0)
        return out

    def normalize_score(self, cycle: fwk.Cycle, scores: fwk.Scores, feasible: fwk.Mask) -> None:
        if cycle.data.get(_NONE_COUNTED) and len(scores) == len(feasible):
            np.multiply(feasible, fwk.MAX_NODE_SCORE, out=scores)  # all zero, reversed: 100 where feasible
            return
        default_normalize(scores, feasible, reverse=True)

    def events_to_register(self) -> tuple[fwk.ClusterEventWithHint, ...]:
        # kube: Node Add|UpdateNodeTaint with a hint (and the pod's own toleration update, which the scorer
        # decides again anyway). berth keeps Delete, without a hint, as it always had.
        return (
            fwk.ClusterEventWithHint(fwk.ClusterEvent("Node", fwk.Action.ADD | fwk.Action.UPDATE), self.node_hint),
            fwk.ClusterEventWithHint(fwk.ClusterEvent("Node", fwk.Action.DELETE)),
        )

    def node_hint(self, state: ClusterState, obj: Any, now: Any) -> fwk.Hint:
        """kube: a node added or its taints changed; retry a pod that tolerates its taints now."""
        assert isinstance(obj, Node)
        taints = tuple(t for t in obj.taints if t.effect in ("NoSchedule", "NoExecute"))
        return lambda pods, version: fwk.each_pod(pods, lambda p: untolerated(taints, p.tolerations) is None)


def new(args: Any, handle: ClusterState) -> TaintToleration:
    return TaintToleration()
