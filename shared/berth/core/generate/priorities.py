"""PriorityClasses and PodDisruptionBudgets for `berth generate` (params priority_classes, pdbs).

Three classes as a cluster with preemption has them: `critical` for the node DaemonSet and the
burst, `serving` for StatefulSets and Deployments, `batch` (the globalDefault) for Jobs. Objects
look as the API server returns them: a pod carries its class name and value as the Priority
admission plugin writes them.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from berth.core.generate.ids import Ids, rfc3339
from berth.core.generate.workloads import JOB, Workload

CRITICAL, SERVING, BATCH = "critical", "serving", "batch"
CLASSES = ((CRITICAL, 1_000_000, False), (SERVING, 1000, False), (BATCH, 0, True))
VALUE = {name: value for name, value, _ in CLASSES}


def priority_classes(ids: Ids, created: datetime) -> list[dict[str, Any]]:
    out = []
    for name, value, default in CLASSES:
        meta = {"name": name, "uid": ids.uid(), "creationTimestamp": rfc3339(created), "generation": 1}
        obj: dict[str, Any] = {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": meta,
            "value": value,
            "preemptionPolicy": "PreemptLowerPriority",
        }
        if default:
            obj["globalDefault"] = True
        out.append(obj)
    return out


def class_of(w: Workload) -> str:
    return BATCH if w.kind == JOB else SERVING


def with_priority(pod: dict[str, Any], cls: str) -> dict[str, Any]:
    """The pod as admission leaves it under this class."""
    spec = {**pod["spec"], "priorityClassName": cls, "priority": VALUE[cls]}
    return {**pod, "spec": spec}


def pdb(w: Workload, uid: str, created: datetime, healthy: bool) -> dict[str, Any]:
    """A policy/v1 PDB allowing one of the workload's pods to be down, with the status the disruption
    controller writes: none healthy yet, or (healthy) every pod healthy, one disruption allowed."""
    current = w.replicas if healthy else 0
    desired = max(0, w.replicas - 1)
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {
            "name": w.name,
            "namespace": w.namespace,
            "uid": uid,
            "creationTimestamp": rfc3339(created),
            "generation": 1,
        },
        "spec": {"maxUnavailable": 1, "selector": {"matchLabels": dict(w.selector)}},
        "status": {
            "observedGeneration": 1,
            "disruptionsAllowed": max(0, current - desired),
            "currentHealthy": current,
            "desiredHealthy": desired,
            "expectedPods": w.replicas,
        },
    }
