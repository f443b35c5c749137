"""Basic feasibility, so that a decision is a real placement: kube's own filters."""

from __future__ import annotations

from typing import ClassVar

from berth.core.framework import OK, Cycle, Failure, Status
from berth.core.model import Taint, Toleration
from berth.core.resources import CPU, EPHEMERAL, MEMORY, PODS


class NodeUnschedulable:
    name: ClassVar[str] = "NodeUnschedulable"
    _taint = Taint(key="node.kubernetes.io/unschedulable", effect="NoSchedule")

    def pre_filter(self, cycle: Cycle) -> Status:
        return OK

    def filter(self, cycle: Cycle) -> list[Failure]:
        if any(t.tolerates(self._taint) for t in cycle.pod.tolerations):
            return []
        return [
            Failure(
                cycle.state.nodes.unschedulable & cycle.state.nodes.valid,
                "node(s) were unschedulable",
            )
        ]


class NodeAffinity:
    name: ClassVar[str] = "NodeAffinity"
    reason = "node(s) didn't match Pod's node affinity/selector"

    def pre_filter(self, cycle: Cycle) -> Status:
        return OK

    def filter(self, cycle: Cycle) -> list[Failure]:
        pod, nodes = cycle.pod, cycle.state.nodes
        if not pod.node_selector and pod.affinity is None:
            return []
        ok = nodes.valid.copy()
        if pod.node_selector:
            ok &= nodes.match_labels_mask(pod.node_selector)
        if pod.affinity is not None:
            ok &= nodes.selector_mask(pod.affinity)
        return [Failure(nodes.valid & ~ok, self.reason)]


def untolerated(taints: tuple[Taint, ...], tolerations: tuple[Toleration, ...]) -> Taint | None:
    return next((t for t in taints if not any(tol.tolerates(t) for tol in tolerations)), None)


class TaintToleration:
    name: ClassVar[str] = "TaintToleration"

    def pre_filter(self, cycle: Cycle) -> Status:
        return OK

    def filter(self, cycle: Cycle) -> list[Failure]:
        nodes = cycle.state.nodes
        out = []
        for tid, taints in enumerate(nodes.taint_sets):
            bad = untolerated(taints, cycle.pod.tolerations) if taints else None
            if bad is not None:
                mask = (nodes.taint_set == tid) & nodes.valid
                if mask.any():
                    out.append(Failure(mask, f"node(s) had untolerated taint {{{bad.key}: {bad.value}}}"))
        return out


class NodeResourcesFit:
    name: ClassVar[str] = "NodeResourcesFit"

    def pre_filter(self, cycle: Cycle) -> Status:
        return OK

    def filter(self, cycle: Cycle) -> list[Failure]:
        nodes = cycle.state.nodes
        out = []
        full = nodes.valid & (nodes.requested(PODS) + 1 > nodes.allocatable(PODS))
        if full.any():
            out.append(Failure(full, "Too many pods"))
        requests = cycle.pod.requests
        if not any(v for k, v in requests.items() if k != PODS):
            return out
        order = [
            CPU,
            MEMORY,
            EPHEMERAL,
            *sorted(k for k in requests if k not in (CPU, MEMORY, EPHEMERAL, PODS)),
        ]
        for name in order:
            want = requests.get(name, 0)
            if want <= 0:
                continue
            short = nodes.valid & (nodes.allocatable(name) - nodes.requested(name) < want)
            if short.any():
                out.append(Failure(short, f"Insufficient {name}"))
        return out
