"""Fake pods an autoscaler can inject, and readyReplicas: how many chunks fit right now.

A buffer gets fake pods when the injector would take it: status strategy
`buffer.x-k8s.io/active-capacity`, ReadyForProvisioning=True, replicas > 0.
readyReplicas places those pods one after another with reservation, every
buffer in turn (oldest first), so buffers never count the same free room
twice; then every reservation is released.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Any

import msgspec

from berth.core.api.autoscaling.model import ACTIVE_CAPACITY, OWNER_API_VERSION
from berth.core.api.core.model import Pod
from berth.core.api.meta.model import OwnerRef
from berth.core.controllers.capacitybuffer.controller import BufferResult, age_order
from berth.core.controllers.capacitybuffer.status import is_ready
from berth.core.controllers.capacitybuffer.store import FAKE_POD_TYPE
from berth.core.scheduler.schedule_one import Scheduler

SAFE_TO_EVICT = "cluster-autoscaler.kubernetes.io/safe-to-evict"
DEFAULT_LIMIT = 10_000  # fake pods materialized (and tried) per buffer

Place = Callable[[Pod], bool]
Release = Callable[[str], None]


def wanted(r: BufferResult) -> int:
    """How many fake pods the injector would build for this buffer."""
    s = r.status
    if r.chunk is None or s.provisioning_strategy != ACTIVE_CAPACITY or not is_ready(s):
        return 0
    if s.pod_template_ref is None or s.replicas is None:
        return 0
    return max(0, s.replicas)


def fake_name(buffer_name: str, i: int) -> str:
    return f"capacity-buffer-{buffer_name}-{i}"


def _annotations(r: BufferResult) -> dict[str, str]:
    assert r.chunk is not None
    return {**r.chunk.annotations, FAKE_POD_TYPE[0]: FAKE_POD_TYPE[1], SAFE_TO_EVICT: "true"}


def fake_pod(r: BufferResult, i: int) -> Pod:
    """The i-th (1-based) fake pod as berth's model reads it."""
    assert r.chunk is not None
    b = r.buffer
    name = fake_name(b.name, i)
    volumes = tuple(
        msgspec.structs.replace(v, claim_name=f"{name}-{v.name}") if v.ephemeral else v for v in r.chunk.pod.volumes
    )
    owner = OwnerRef(kind="CapacityBuffer", name=b.name, uid=b.uid, api_version=OWNER_API_VERSION, controller=True)
    return msgspec.structs.replace(
        r.chunk.pod,
        namespace=b.namespace,
        name=name,
        uid=f"{b.uid}-{i}",
        annotations=_annotations(r),
        owner_refs=(owner,),
        volumes=volumes,
    )


def fake_manifest(r: BufferResult, i: int) -> dict[str, Any]:
    """The i-th fake pod as Kubernetes JSON."""
    assert r.chunk is not None
    b = r.buffer
    metadata: dict[str, Any] = {"name": fake_name(b.name, i), "namespace": b.namespace, "uid": f"{b.uid}-{i}"}
    if r.chunk.labels:
        metadata["labels"] = r.chunk.labels
    metadata["annotations"] = _annotations(r)
    metadata["ownerReferences"] = [
        {"apiVersion": OWNER_API_VERSION, "kind": "CapacityBuffer", "name": b.name, "uid": b.uid, "controller": True}
    ]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": r.chunk.spec}


def manifests(r: BufferResult, limit: int = DEFAULT_LIMIT) -> list[dict[str, Any]]:
    return [fake_manifest(r, i) for i in range(1, min(wanted(r), limit) + 1)]


def count_ready(
    results: Iterable[BufferResult], place: Place, release: Release, limit: int = DEFAULT_LIMIT
) -> dict[str, int]:
    """readyReplicas per buffer key. `place` decides and reserves one pod (True when it fits).

    Chunks of one buffer are identical, so the first that does not fit ends that
    buffer. At most `limit` chunks are tried per buffer. Every placed pod is
    released before returning, even on error.
    """
    ordered = sorted(results, key=lambda r: (*age_order(r.buffer), r.buffer.namespace))
    counts: dict[str, int] = {}
    placed: list[str] = []
    try:
        for r in ordered:
            n = 0
            for i in range(1, min(wanted(r), limit) + 1):
                pod = fake_pod(r, i)
                if not place(pod):
                    break
                placed.append(pod.key)
                n += 1
            counts[r.buffer.key] = n
    finally:
        for key in reversed(placed):
            release(key)
    return counts


def scheduler_placer(scheduler: Scheduler, now: datetime) -> tuple[Place, Release]:
    """place/release over berth's scheduler, leaving the state as it was afterwards."""
    state = scheduler.state

    def place(pod: Pod) -> bool:
        if pod.key in state.pods:
            return False  # never shadow a real pod of the same name
        outcome = scheduler.decide(pod, now.astimezone(UTC))
        if outcome.reservation is None:
            return False
        state.reserve(outcome.reservation)
        return True

    return place, state.release
