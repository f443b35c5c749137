"""CapacityBuffers and what they point at: PodTemplates, a live Deployment, and a ResourceQuota.

Buffers cycle through three kinds: a warm pool from a PodTemplate (replicas), headroom for the live
`frontend` Deployment (percentage, scalableRef), and a batch pool capped by limits that is only
active in a window opening half-way through the run (berth.dev/buffer-schedule).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from berth.core.api.autoscaling.model import ACTIVE_CAPACITY, SCHEDULE_ANNOTATION
from berth.core.generate.ids import Ids, cpu, mem, rfc3339
from berth.core.generate.pods import container
from berth.core.generate.workloads import DEPLOYMENT, Workload

API_VERSION = "autoscaling.x-k8s.io/v1beta1"
QUOTA_NAMESPACE = "web"


@dataclass
class Quota:
    """The `web/compute` quota: what admission charges pending and running pods against."""

    uid: str
    created: datetime
    hard_cpu: int  # millicores
    hard_mem: int  # MiB
    used_cpu: int = 0
    used_mem: int = 0

    def admits(self, cpu_milli: int, mem_mib: int) -> bool:
        return self.used_cpu + cpu_milli <= self.hard_cpu and self.used_mem + mem_mib <= self.hard_mem

    def charge(self, cpu_milli: int, mem_mib: int, sign: int = 1) -> None:
        self.used_cpu += sign * cpu_milli
        self.used_mem += sign * mem_mib

    def object(self) -> dict[str, Any]:
        hard = {"requests.cpu": cpu(self.hard_cpu), "requests.memory": mem(self.hard_mem)}
        return {
            "apiVersion": "v1",
            "kind": "ResourceQuota",
            "metadata": {
                "name": "compute",
                "namespace": QUOTA_NAMESPACE,
                "uid": self.uid,
                "creationTimestamp": rfc3339(self.created),
            },
            "spec": {"hard": hard},
            "status": {
                "hard": hard,
                "used": {"requests.cpu": cpu(self.used_cpu), "requests.memory": mem(self.used_mem)},
            },
        }


def frontend(ids: Ids, replicas: int, created: datetime) -> Workload:
    """The long-lived Deployment the headroom buffers scale with; its pods run from before t0."""
    return Workload(
        kind=DEPLOYMENT,
        namespace=QUOTA_NAMESPACE,
        name="frontend",
        uid=ids.uid(),
        app="api",
        replicas=replicas,
        cpu_milli=500,
        mem_mib=1024,
        created=created,
        hash=ids.suffix(10),
        rs_uid=ids.uid(),
    )


def pod_template(
    namespace: str, name: str, image: str, cpu_milli: int, mem_mib: int, ids: Ids, created: datetime
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PodTemplate",
        "metadata": {"name": name, "namespace": namespace, "uid": ids.uid(), "creationTimestamp": rfc3339(created)},
        "template": {
            "metadata": {"labels": {"role": name}},
            "spec": {
                "containers": [container("runner", image, cpu_milli, mem_mib, [])],
                "restartPolicy": "Always",
                "terminationGracePeriodSeconds": 30,
                "dnsPolicy": "ClusterFirst",
                "securityContext": {},
                "schedulerName": "default-scheduler",
            },
        },
    }


def templates(ids: Ids, created: datetime) -> list[dict[str, Any]]:
    return [
        pod_template("web", "warm-runner", "registry.example.com/ci/runner:4.2.0", 1000, 2048, ids, created),
        pod_template("batch", "batch-runner", "registry.example.com/data/etl:5.0.2", 2000, 4096, ids, created),
    ]


def window(start: datetime, opens_after: int) -> str:
    """A daily two-hour window opening `opens_after` seconds after `start` (UTC)."""
    t = start + timedelta(seconds=opens_after)
    return f"TZ=UTC; {t.minute} {t.hour} * * * 2h"


def capacity_buffer(i: int, ids: Ids, created: datetime, start: datetime, duration: int) -> dict[str, Any]:
    """Buffer `i`: kind i % 3 (warm pool, frontend headroom, scheduled batch pool); later rounds get -2, -3 ..."""
    kind = i % 3
    suffix = "" if i < 3 else f"-{i // 3 + 1}"
    meta: dict[str, Any] = {"generation": 1, "creationTimestamp": rfc3339(created + timedelta(minutes=i))}
    spec: dict[str, Any]
    if kind == 0:
        name, namespace = f"warm-runners{suffix}", "web"
        spec = {"podTemplateRef": {"name": "warm-runner"}, "replicas": 3}
    elif kind == 1:
        name, namespace = f"frontend-headroom{suffix}", "web"
        spec = {"scalableRef": {"apiGroup": "apps", "kind": DEPLOYMENT, "name": "frontend"}, "percentage": 25}
    else:
        name, namespace = f"batch-pool{suffix}", "batch"
        spec = {"podTemplateRef": {"name": "batch-runner"}, "limits": {"cpu": "16", "memory": "32Gi"}}
        meta["annotations"] = {SCHEDULE_ANNOTATION: window(start, duration // 2)}
    spec["provisioningStrategy"] = ACTIVE_CAPACITY
    return {
        "apiVersion": API_VERSION,
        "kind": "CapacityBuffer",
        "metadata": {"name": name, "namespace": namespace, "uid": ids.uid(), **meta},
        "spec": spec,
    }


def resized(buffer: dict[str, Any], replicas: int) -> dict[str, Any]:
    """The buffer after a user edit of spec.replicas (the API server bumps the generation)."""
    meta = {**buffer["metadata"], "generation": buffer["metadata"]["generation"] + 1}
    return {**buffer, "metadata": meta, "spec": {**buffer["spec"], "replicas": replicas}}
