"""The buffer controller: every buffer's status from the store and the clock.

Per namespace, as upstream: keep buffers with the active (or empty) strategy,
order them oldest first, translate each (shape, managed template, replicas),
then allocate the namespace's ResourceQuotas in that order. Buffers with
another strategy keep their status untouched.

Beyond upstream: a spec that fails CRD validation or names neither ref gets
ReadyForProvisioning=False instead of being skipped, and the schedule
annotation sets replicas to 0 outside its windows (condition ScheduleActive).
"""

from __future__ import annotations

from datetime import UTC, datetime

import msgspec

from berth.core.api.autoscaling.model import (
    ACTIVE_CAPACITY,
    SCHEDULE_ANNOTATION,
    BufferStatus,
    CapacityBuffer,
    Condition,
)
from berth.core.api.meta.normalise import to_milli
from berth.core.controllers.capacitybuffer import quota, replicas, schedule, shape
from berth.core.controllers.capacitybuffer import status as st
from berth.core.controllers.capacitybuffer.store import BufferStore

_OLDEST = datetime.min.replace(tzinfo=UTC)


class BufferResult(msgspec.Struct, frozen=True):
    buffer: CapacityBuffer
    status: BufferStatus
    chunk: shape.Chunk | None = None  # the resolved shape, when translation got that far
    processed: bool = True  # False: another provisioning strategy, status left as it was


def handled(buffer: CapacityBuffer) -> bool:
    return buffer.spec.provisioning_strategy in (ACTIVE_CAPACITY, "")


def age_order(buffer: CapacityBuffer) -> tuple[datetime, str]:
    """Oldest first, ties by name; a missing timestamp counts as the oldest."""
    return (buffer.creation or _OLDEST, buffer.name)


def reconcile(store: BufferStore, now: datetime) -> list[BufferResult]:
    """All buffers, ordered by namespace/name."""
    out = [r for ns in store.namespaces() for r in reconcile_namespace(store, ns, now)]
    return sorted(out, key=lambda r: r.buffer.key)


def reconcile_namespace(store: BufferStore, namespace: str, now: datetime) -> list[BufferResult]:
    """One namespace's buffers, handled ones oldest first (the quota order), then the rest."""
    buffers = store.buffers_in(namespace)
    kept = sorted((b for b in buffers if handled(b)), key=age_order)
    results = [translate(b, store, now) for b in kept]
    results = allocate_quotas(results, store, now)
    others = sorted((b for b in buffers if not handled(b)), key=lambda b: b.name)
    return results + [BufferResult(b, b.status, processed=False) for b in others]


# ---- translation -------------------------------------------------------------------


def _schedule_condition(buffer: CapacityBuffer, now: datetime) -> tuple[Condition | None, bool, str]:
    """(ScheduleActive condition, active?, error) from the schedule annotation."""
    text = buffer.annotations.get(SCHEDULE_ANNOTATION)
    if text is None:
        return None, True, ""
    try:
        sched = schedule.parse(text)
    except schedule.ScheduleError as e:
        problem = f"invalid annotation {SCHEDULE_ANNOTATION}: {e}"
        return Condition(st.SCHEDULE, "False", "InvalidSchedule", problem), False, problem
    window = sched.active(now)
    if window is not None:
        start, end = (schedule.rfc3339(t) for t in window)
        return Condition(st.SCHEDULE, "True", "InsideActiveWindow", f"active window {start} to {end}"), True, ""
    upcoming = sched.next_start(now)
    nxt = "no window opens within 5 years" if upcoming is None else f"next window opens {schedule.rfc3339(upcoming)}"
    message = f"outside the active windows of {SCHEDULE_ANNOTATION}, replicas set to 0; {nxt}"
    return Condition(st.SCHEDULE, "False", "OutsideActiveWindows", message), False, ""


def translate(buffer: CapacityBuffer, store: BufferStore, now: datetime) -> BufferResult:
    strategy = buffer.spec.provisioning_strategy or ACTIVE_CAPACITY
    conditions = buffer.status.conditions
    sched, active, sched_error = _schedule_condition(buffer, now)
    conditions = (
        st.remove_condition(conditions, st.SCHEDULE) if sched is None else st.set_condition(conditions, sched, now)
    )

    def failed(error: str, ref: str | None = None, gen: int | None = None) -> BufferStatus:
        return BufferStatus(
            pod_template_ref=ref,
            replicas=None,
            pod_template_generation=gen,
            conditions=st.set_condition(conditions, st.not_ready(error), now),
            provisioning_strategy=strategy,
        )

    spec = buffer.spec
    if buffer.spec_error:
        return BufferResult(buffer, failed(buffer.spec_error))
    if sched_error:
        return BufferResult(buffer, failed(sched_error))
    try:
        if spec.pod_template_ref is not None:
            resolved = shape.resolve_template_ref(buffer, store.templates)
        elif spec.scalable_ref is not None:
            resolved = shape.resolve_scalable(buffer, store.workloads, store.pods_in(buffer.namespace))
        else:
            return BufferResult(buffer, failed("neither podTemplateRef nor scalableRef is set"))
    except shape.ShapeError as e:
        return BufferResult(buffer, failed(str(e)))
    chunk = resolved.chunk
    ref = shape.managed_name(buffer.name)
    gen = shape.managed_generation(store.templates.get(f"{buffer.namespace}/{ref}"), chunk)
    try:
        n = replicas.desired(
            spec.replicas, spec.percentage, resolved.scalable_replicas, spec.limits, to_milli(chunk.pod.requests)
        )
    except replicas.ReplicaError as e:
        return BufferResult(buffer, failed(f"couldn't get number of replicas for buffer: {e}", ref, gen), chunk)
    status = BufferStatus(
        pod_template_ref=ref,
        replicas=n if active else 0,
        pod_template_generation=gen,
        conditions=st.set_condition(conditions, st.ready(), now),
        provisioning_strategy=strategy,
    )
    return BufferResult(buffer, status, chunk)


# ---- quotas ------------------------------------------------------------------------


def allocate_quotas(results: list[BufferResult], store: BufferStore, now: datetime) -> list[BufferResult]:
    """Lower replicas to what the namespace's quotas leave, oldest buffer first."""
    if not results:
        return results
    candidates = []
    for r in results:
        s = r.status
        if r.chunk is None or s.pod_template_ref is None or s.replicas is None or s.pod_template_generation is None:
            continue
        candidates.append(quota.Candidate(r.buffer.key, s.replicas, r.chunk.pod, r.chunk.cross_namespace_affinity))
    allocations = quota.allocate(candidates, store.quotas_in(results[0].buffer.namespace))
    out = []
    for r in results:
        a = allocations.get(r.buffer.key)
        if a is None:
            out.append(r)
            continue
        current = r.status.replicas or 0
        generation = r.buffer.generation
        if a.allowed < current:
            cond = st.limited(current, a.allowed, a.blocking, generation)
            new_replicas = a.allowed
        else:
            cond = st.not_limited(generation)
            new_replicas = current
        status = msgspec.structs.replace(
            r.status, replicas=new_replicas, conditions=st.set_condition(r.status.conditions, cond, now)
        )
        out.append(msgspec.structs.replace(r, status=status))
    return out
