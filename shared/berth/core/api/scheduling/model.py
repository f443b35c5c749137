"""PriorityClasses and PodDisruptionBudgets, and a pod's priority and preemption policy.

kube's Priority admission plugin writes spec.priority (and spec.preemptionPolicy) from the pod's
PriorityClass when the pod is created, so the scheduler reads spec.priority only. berth also sees
pods in logs and snapshots that never went through admission, so it resolves as admission does:
spec.priority, else the PriorityClass named by priorityClassName, else the globalDefault class
(the one with the lowest value if several claim it, as admission picks), else 0.
"""

from __future__ import annotations

from collections.abc import Mapping

import msgspec

from berth.core.api.core.model import Pod
from berth.core.api.meta.selectors import LabelSelector

PREEMPT_LOWER = "PreemptLowerPriority"
NEVER = "Never"


class PriorityClass(msgspec.Struct, frozen=True, gc=False):
    name: str
    resource_version: str = ""
    value: int = 0
    global_default: bool = False
    preemption_policy: str = PREEMPT_LOWER


class PodDisruptionBudget(msgspec.Struct, frozen=True, gc=False):
    """policy/v1. Preemption reads the selector and status.disruptionsAllowed / disruptedPods only;
    minAvailable and maxUnavailable (an int or "N%") are kept for what reports them."""

    namespace: str
    name: str
    resource_version: str = ""
    selector: LabelSelector | None = None
    min_available: int | str | None = None
    max_unavailable: int | str | None = None
    disruptions_allowed: int = 0
    disrupted_pods: frozenset[str] = frozenset()

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def covers(self, pod: Pod) -> bool:
        """As preemption matches (kube's getPodDisruptionBudgets users): same namespace, and a
        selector that is neither nil nor empty nor invalid and matches the pod's labels."""
        s = self.selector
        if pod.namespace != self.namespace or s is None or not pod.labels:
            return False
        if not s.match_labels and not s.match_expressions:
            return False
        return s.valid and s.matches(pod.labels)


def global_default(classes: Mapping[str, PriorityClass]) -> PriorityClass | None:
    defaults = [c for c in classes.values() if c.global_default]
    return min(defaults, key=lambda c: (c.value, c.name)) if defaults else None


def priority_of(pod: Pod, classes: Mapping[str, PriorityClass]) -> int:
    if pod.priority is not None:
        return pod.priority
    cls = classes.get(pod.priority_class_name) if pod.priority_class_name else global_default(classes)
    return 0 if cls is None else cls.value


def preemption_policy_of(pod: Pod, classes: Mapping[str, PriorityClass]) -> str:
    if pod.preemption_policy:
        return pod.preemption_policy
    cls = classes.get(pod.priority_class_name) if pod.priority_class_name else global_default(classes)
    return PREEMPT_LOWER if cls is None else cls.preemption_policy
