"""SchedulingGates (kube's PreEnqueue plugin): a pod that carries spec.schedulingGates is not decided
until every gate is removed. Removing gates is an update of the pod, which the scorer decides again."""

from __future__ import annotations

from berth.core import framework as fwk
from berth.core.api.core.model import Pod
from berth.core.cache.state import ClusterState

NAME = "SchedulingGates"
Args = None


class SchedulingGates:
    name = NAME

    def pre_enqueue(self, pod: Pod) -> fwk.Status:
        if not pod.scheduling_gates:
            return fwk.OK
        # Go's %v of a []string: the names space-separated in brackets
        return fwk.Status(
            fwk.Code.UNRESOLVABLE, f"waiting for scheduling gates: [{' '.join(pod.scheduling_gates)}]", NAME
        )


def new(args: None, handle: ClusterState) -> SchedulingGates:
    return SchedulingGates()
