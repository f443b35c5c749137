"""Resource lists and a pod's effective requests, computed as kube does."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import cache

from berth.core.api.core import wire as wc
from berth.core.api.core.model import (
    ResourceList,
)
from berth.core.api.meta.normalise import Bad, amounts, resource_list
from berth.core.api.meta.validation import qualified_name

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
    for part, restartable in init_containers:
        if restartable:
            total = add(total, part)
            sidecars = add(sidecars, part)
            need = sidecars
        else:
            need = add(part, sidecars)
        init_peak = maximum(init_peak, need)
    total = maximum(total, init_peak)
    for k, v in pod_level.items():
        if pod_level_supported(k):
            total[k] = v
    return add(total, overhead)


_CPU_MEMORY = (CPU, MEMORY)


def _resources(v: wc.ResourceRequirements | None, at: str) -> tuple[dict[str, int], dict[str, int]]:
    """(requests, limits) of a container or a pod; requests default to limits as the API server does."""
    if v is None:
        return {}, {}
    try:
        limits = resource_list(v.limits)
    except Bad as e:
        raise e.under(f"{at}.limits") from None
    try:
        requests = resource_list(v.requests)
    except Bad as e:
        raise e.under(f"{at}.requests") from None
    return ({**limits, **requests} if limits else requests), limits


def _names_cpu_memory(r: dict[str, int]) -> bool:
    return CPU in r and MEMORY in r


Amounts = tuple[dict[str, int], dict[str, int], dict[str, int]]
# with the spec's own requests where a resize makes the requests differ from them (else None)
PodAmounts = tuple[dict[str, int], dict[str, int], dict[str, int], dict[str, int] | None]
_POD_AMOUNTS: dict[object, PodAmounts] = {}  # a workload's pods list the same figures: worked out once


def _figures(v: wc.ResourceRequirements | None) -> object:
    if v is None:
        return None
    return (tuple(v.requests.items()) if v.requests else (), tuple(v.limits.items()) if v.limits else ())


def _resize_infeasible(status: wc.PodStatus) -> bool:
    """kube's IsPodResizeInfeasible: the first PodResizePending condition has reason Infeasible."""
    for c in status.conditions or ():
        if c.type == "PodResizePending":
            return c.reason == "Infeasible"
    return False


def _status_figures(spec: wc.PodSpec, status: wc.PodStatus) -> object:
    """What of the status moves kube's requests (in-place resize): None when nothing does, as for
    every pod whose containers' statuses give no requests and no allocated"""
    infeasible = _resize_infeasible(status) if status.conditions else False
    listed = (*(status.container_statuses or ()), *(status.init_container_statuses or ()))
    if not infeasible and all(s.resources is None and s.allocated_resources is None for s in listed):
        return None
    inits = spec.init_containers or ()
    return (
        infeasible,
        tuple([c.name for c in spec.containers or ()]),
        tuple([c.name for c in inits]),
        tuple(
            [
                (
                    s.name,
                    None
                    if s.resources is None or s.resources.requests is None
                    else tuple(s.resources.requests.items()),
                    None if s.allocated_resources is None else tuple(s.allocated_resources.items()),
                )
                for s in listed
            ]
        ),
    )


def pod_amounts(spec: wc.PodSpec, at: str, status: wc.PodStatus | None = None) -> PodAmounts:
    """(requests, limits, non-zero cpu and memory, the spec's own requests where they differ),
    shared by the pods whose specs (and statuses' resize figures) list the same figures (models
    never change them); a bounded cache in front of `work_out_amounts`."""
    inits = spec.init_containers
    resized = None if status is None else _status_figures(spec, status)
    key = (
        tuple([_figures(c.resources) for c in spec.containers]) if spec.containers else (),
        tuple([(_figures(c.resources), c.restart_policy) for c in inits]) if inits else (),
        tuple(spec.overhead.items()) if spec.overhead else (),
        None if spec.resources is None else _figures(spec.resources),
        resized,
    )
    out = _POD_AMOUNTS.get(key)
    if out is None:
        requests, limits, nonzero = work_out_amounts(spec, at, None if resized is None else status)
        own = None if resized is None else pod_amounts(spec, at)[0]
        # equal ones of other figures too
        out = amounts(requests), amounts(limits), amounts(nonzero), None if own == requests else own
        if len(_POD_AMOUNTS) >= 16384:
            _POD_AMOUNTS.clear()
        _POD_AMOUNTS[key] = out
    return out


Views = list[tuple[list[dict[str, int]], list[tuple[dict[str, int], bool]]]]


def _status_views(
    spec: wc.PodSpec, status: wc.PodStatus, reqs: list[dict[str, int]], init_r: list[tuple[dict[str, int], bool]]
) -> Views:
    """kube's PodRequests with UseStatusResources (in-place resize): the containers' allocated and
    actuated requests, each container's from its status (found by name among containerStatuses,
    then initContainerStatuses), else its spec's, or nothing when the resize is Infeasible."""
    infeasible = _resize_infeasible(status)
    found: dict[str, tuple[dict[str, int] | None, dict[str, int] | None]] = {}
    for group, field in (
        (status.init_container_statuses, "initContainerStatuses"),
        (status.container_statuses, "containerStatuses"),
    ):
        for i, s in reversed(list(enumerate(group or ()))):  # the first of a name wins, containers' first
            try:
                allocated = None if s.allocated_resources is None else resource_list(s.allocated_resources)
            except Bad as e:
                raise e.under(f"status.{field}[{i}].allocatedResources") from None
            try:
                actual = (
                    None if s.resources is None or s.resources.requests is None else resource_list(s.resources.requests)
                )
            except Bad as e:
                raise e.under(f"status.{field}[{i}].requests") from None
            found[s.name or ""] = (allocated, actual)

    def view(names: list[str], spec_reqs: list[dict[str, int]], actuated: bool) -> list[dict[str, int]]:
        out = []
        for name, own in zip(names, spec_reqs, strict=True):
            allocated, actual = found.get(name, (None, None))
            if actuated and actual is not None:
                out.append(actual)
            elif allocated is not None:
                out.append(allocated)
            else:
                out.append({} if infeasible else own)
        return out

    names = [c.name or "" for c in spec.containers or ()]
    init_names = [c.name or "" for c in spec.init_containers or ()]
    init_reqs = [r for r, _ in init_r]
    sidecars = [s for _, s in init_r]
    views: Views = [] if infeasible else [(reqs, init_r)]
    for actuated in (False, True):
        views.append(
            (view(names, reqs, actuated), list(zip(view(init_names, init_reqs, actuated), sidecars, strict=True)))
        )
    return views


def work_out_amounts(spec: wc.PodSpec, at: str, status: wc.PodStatus | None = None) -> Amounts:
    """(requests, limits, non-zero cpu and memory): the last as kube's scoring counts them
    (NonMissingContainerRequests): a container naming no cpu counts 100m, none memory 200Mi.
    With a status, the requests are the larger of the spec's, the allocated and the actuated
    ones (each added up over the pod first), as kube's scheduler cache counts a bound pod."""
    reqs, lims = [], []
    for i, c in enumerate(spec.containers or ()):
        r, lim = _resources(c.resources, f"{at}.containers[{i}].resources")
        reqs.append(r)
        lims.append(lim)
    init_r, init_l = [], []
    for i, c in enumerate(spec.init_containers or ()):
        r, lim = _resources(c.resources, f"{at}.initContainers[{i}].resources")
        sidecar = c.restart_policy == "Always"
        init_r.append((r, sidecar))
        init_l.append((lim, sidecar))
    try:
        overhead = resource_list(spec.overhead)
    except Bad as e:
        raise e.under(f"{at}.overhead") from None
    pod_req, pod_lim = _resources(spec.resources, f"{at}.resources")
    limits = effective(lims, init_l, {}, pod_lim)
    # kube adds overhead only to the limits that are set
    limits = add(limits, {k: v for k, v in overhead.items() if k in limits})
    views: Views = [(reqs, init_r)] if status is None else _status_views(spec, status, reqs, init_r)
    requests = _largest([effective(c, i, overhead, pod_req) for c, i in views])
    named = all(_names_cpu_memory(r) for c, i in views for r in (*c, *(r for r, _ in i)))
    if named:  # nothing to fill in: the requests themselves (kept empty, see Pod.nonzero_requests)
        return requests, limits, {}
    fill = NONZERO_DEFAULTS
    total = _largest(
        [effective([{**fill, **r} for r in c], [({**fill, **r}, s) for r, s in i], overhead, pod_req) for c, i in views]
    )
    return requests, limits, {k: total.get(k, 0) for k in _CPU_MEMORY}


def _largest(totals: list[dict[str, int]]) -> dict[str, int]:
    out = totals[0]
    for t in totals[1:]:
        out = maximum(out, t)
    return out


def _is_bytes(name: str) -> bool:
    return name in (MEMORY, EPHEMERAL) or name.startswith("hugepages-")


def show_bytes(value: int) -> str:
    """Bytes in the largest binary suffix that divides them ("10Gi", "1536Mi"), else as a number."""
    for suffix, size in (("Ei", 2**60), ("Pi", 2**50), ("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
        if value and value % size == 0:
            return f"{value // size}{suffix}"
    return str(value)


def show(name: str, value: int) -> str:
    """An amount of a ResourceList as kube writes it: cpu in cores or millicores ("2", "1500m"), byte
    amounts with a binary suffix where one divides them, the rest as numbers."""
    if name == CPU:
        return str(value // 1000) if value % 1000 == 0 else f"{value}m"
    return show_bytes(value) if _is_bytes(name) else str(value)
