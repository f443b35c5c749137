"""Resource lists and a pod's effective requests, computed as kube does."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import cache

from berth.core.model import ResourceList
from berth.core.validation import qualified_name

CPU = "cpu"
MEMORY = "memory"
PODS = "pods"
EPHEMERAL = "ephemeral-storage"
NATIVE = (CPU, MEMORY, EPHEMERAL, PODS)
# what kube's scoring counts for a container that names no cpu / no memory request (100m, 200Mi)
NONZERO_DEFAULTS = {CPU: 100, MEMORY: 200 * 1024 * 1024}


def is_native(name: str) -> bool:
    """kube's IsNativeResource: no domain, or one under kubernetes.io."""
    return "/" not in name or "kubernetes.io/" in name


@cache
def is_extended(name: str) -> bool:
    """kube's IsExtendedResourceName: a domain outside kubernetes.io, not `requests.`-prefixed, and
    a qualified name once `requests.` is put before it."""
    if is_native(name) or name.startswith("requests."):
        return False
    problems: list[str] = []
    qualified_name("requests." + name, "", problems)
    return not problems


def is_scalar(name: str) -> bool:
    """kube's IsScalarResourceName: the names its NodeInfo keeps beside cpu, memory, ephemeral-storage
    and pods (extended, hugepages, kubernetes.io-prefixed and attachable volumes)."""
    return is_extended(name) or name.startswith(("hugepages-", "attachable-volumes-")) or "kubernetes.io/" in name


def is_tracked(name: str) -> bool:
    """The names kube's NodeInfo keeps a figure of besides pods (its Resource: cpu, memory,
    ephemeral-storage and the scalar ones): what Filter, hints and scores compare."""
    return name in (CPU, MEMORY, EPHEMERAL) or is_scalar(name)


def pod_level_supported(name: str) -> bool:
    return name in (CPU, MEMORY) or name.startswith("hugepages-")


def add(a: Mapping[str, int], b: Mapping[str, int]) -> ResourceList:
    out = dict(a)
    for k, v in b.items():
        out[k] = out.get(k, 0) + v
    return out


def maximum(a: Mapping[str, int], b: Mapping[str, int]) -> ResourceList:
    out = dict(a)
    for k, v in b.items():
        out[k] = max(out.get(k, 0), v)
    return out


def effective(
    containers: Iterable[Mapping[str, int]],
    init_containers: Iterable[tuple[Mapping[str, int], bool]],
    overhead: Mapping[str, int],
    pod_level: Mapping[str, int],
) -> ResourceList:
    """kube's PodRequests/PodLimits.

    Regular containers and sidecars (restartable init containers) add up. Each
    regular init container needs its own amount plus the sidecars started before
    it; the pod needs the larger of the two. Pod-level values, where set,
    replace the aggregate for the resources that support them. Overhead is added last.
    """
    total: ResourceList = {}
    for c in containers:
        total = add(total, c)
    sidecars: ResourceList = {}
    init_peak: ResourceList = {}
    for amounts, restartable in init_containers:
        if restartable:
            total = add(total, amounts)
            sidecars = add(sidecars, amounts)
            need = sidecars
        else:
            need = add(amounts, sidecars)
        init_peak = maximum(init_peak, need)
    total = maximum(total, init_peak)
    for k, v in pod_level.items():
        if pod_level_supported(k):
            total[k] = v
    return add(total, overhead)
