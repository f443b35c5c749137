"""ResourceQuota allocation: first come, first served over a namespace's buffers.

Buffers arrive oldest first. Each gets what fits in hard − used − (what earlier
buffers took) of every quota whose scopes match its chunk; the chunk's requests
count under both `<resource>` and `requests.<resource>`.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from berth.core.api.core.model import Pod, ResourceQuota, ScopeRequirement
from berth.core.api.meta.normalise import MilliList, to_milli


class ScopeError(ValueError):
    """A scope the quota evaluator cannot read; that quota is skipped."""


class Candidate(msgspec.Struct, frozen=True):
    key: str
    replicas: int
    pod: Pod
    cross_namespace_affinity: bool = False


class Allocation(msgspec.Struct, frozen=True):
    allowed: int
    blocking: tuple[str, ...] = ()


def demand(pod: Pod) -> MilliList:
    """One chunk's quota usage: each non-zero request under both of its names."""
    out: MilliList = {}
    for res, amount in to_milli(pod.requests).items():
        if amount > 0:
            out[res] = amount
            out[f"requests.{res}"] = amount
    return out


def _best_effort(pod: Pod) -> bool:
    return not pod.requests.get("cpu") and not pod.requests.get("memory")


def scope_matches(scope: str, c: Candidate) -> bool:
    if scope == "Terminating":
        return False
    if scope == "NotTerminating":
        return True
    if scope == "BestEffort":
        return _best_effort(c.pod)
    if scope == "NotBestEffort":
        return not _best_effort(c.pod)
    if scope == "PriorityClass":
        return bool(c.pod.priority_class_name)
    if scope == "CrossNamespacePodAffinity":
        return c.cross_namespace_affinity
    return False  # scopes for other objects never match a pod


def _priority_matches(r: ScopeRequirement, name: str) -> bool:
    if r.operator == "In":
        if not r.values:
            raise ScopeError("operator In needs values")
        return name in r.values
    if r.operator == "NotIn":
        return name not in r.values
    if r.operator == "Exists":
        return bool(name)
    if r.operator == "DoesNotExist":
        return not name
    raise ScopeError(f"unsupported operator {r.operator!r}")


def quota_matches(q: ResourceQuota, c: Candidate) -> bool:
    """spec.scopes and spec.scopeSelector, ANDed; raises ScopeError."""
    if not all(scope_matches(s, c) for s in q.scopes):
        return False
    for r in q.scope_selector:
        if r.scope_name == "PriorityClass":
            if not _priority_matches(r, c.pod.priority_class_name):
                return False
        elif not scope_matches(r.scope_name, c):
            return False
    return True


def allocate(candidates: Sequence[Candidate], quotas: Sequence[ResourceQuota]) -> dict[str, Allocation]:
    """Allowed replicas per candidate key, in candidate order.

    A candidate whose chunk requests nothing is left out: quotas do not limit it.
    """
    ordered = sorted(quotas, key=lambda q: q.name)
    reserved: dict[str, MilliList] = {q.key: {} for q in ordered}
    out: dict[str, Allocation] = {}
    for c in candidates:
        need = demand(c.pod)
        if not need:
            continue
        allowed = c.replicas
        blocking = []
        matching = []
        for q in ordered:
            try:
                if not quota_matches(q, c):
                    continue
            except ScopeError:
                continue
            matching.append(q)
            taken = reserved[q.key]
            fits = [
                max(0, hard - q.used.get(res, 0) - taken.get(res, 0)) // need[res]
                for res, hard in q.hard.items()
                if res in need
            ]
            if not fits:
                continue
            most = min(fits)
            if most < c.replicas:
                blocking.append(q.name)
            allowed = min(allowed, most)
        if allowed > 0:
            for q in matching:
                taken = reserved[q.key]
                for res in q.hard:
                    if res in need:
                        taken[res] = taken.get(res, 0) + allowed * need[res]
        out[c.key] = Allocation(allowed, tuple(blocking))
    return out
