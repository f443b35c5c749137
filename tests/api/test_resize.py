"""In-place pod resize (KEP-1287): a pod's requests as kube-scheduler counts them, from its spec and its
containers' statuses. Upstream's table: TestPodResourceRequests in
k8s.io/component-helpers/resource/helpers_test.go (kubernetes 0085214e5634), the cases that read
containerStatuses/initContainerStatuses and the PodResizePending condition; the names are upstream's."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from berth.core.api.core import wire as wc
from berth.core.api.core.resources import pod_amounts, work_out_amounts
from berth.core.api.kinds import convert
from berth.core.api.meta.normalise import Bad

INFEASIBLE = [{"type": "PodResizePending", "status": "True", "reason": "Infeasible"}]
ALWAYS = "Always"


def _c(name: str, requests: dict[str, str], restart: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "resources": {"requests": requests}}
    if restart:
        out["restartPolicy"] = restart
    return out


def _s(name: str, requests: dict[str, str] | None = None, allocated: dict[str, str] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name}
    if requests is not None:
        out["resources"] = {"requests": requests}
    if allocated is not None:
        out["allocatedResources"] = allocated
    return out


# (upstream case name, use status, spec, status, expected requests in berth's units: milli-cpu, bytes)
CASES = [
    (
        "resized, infeasible",
        True,
        {"containers": [_c("container-1", {"cpu": "4"})]},
        {"conditions": INFEASIBLE, "containerStatuses": [_s("container-1", {"cpu": "2"})]},
        {"cpu": 2000},
    ),
    (
        "resized, infeasible & in-progress",
        True,
        {"containers": [_c("container-1", {"cpu": "6"})]},
        {"conditions": INFEASIBLE, "containerStatuses": [_s("container-1", {"cpu": "2"}, {"cpu": "4"})]},
        {"cpu": 4000},
    ),
    (
        "resized, no resize status",
        True,
        {"containers": [_c("container-1", {"cpu": "4"})]},
        {"containerStatuses": [_s("container-1", {"cpu": "2"})]},
        {"cpu": 4000},
    ),
    (
        "resized: per-resource 3-way maximum",
        True,
        {"containers": [_c("container-1", {"cpu": "30m", "memory": "20M", "ephemeral-storage": "10G"})]},
        {
            "containerStatuses": [
                _s(
                    "container-1",
                    {"cpu": "10m", "memory": "30M", "ephemeral-storage": "20G"},
                    {"cpu": "20m", "memory": "10M", "ephemeral-storage": "30G"},
                )
            ]
        },
        {"cpu": 30, "memory": 30_000_000, "ephemeral-storage": 30_000_000_000},
    ),
    (
        "resized, infeasible, but don't use status",
        False,
        {"containers": [_c("container-1", {"cpu": "4"})]},
        {"conditions": INFEASIBLE, "containerStatuses": [_s("container-1", {"cpu": "2"})]},
        {"cpu": 4000},
    ),
    (
        "resized, restartable init container, infeasible",
        True,
        {"initContainers": [_c("restartable-init-1", {"cpu": "4"}, ALWAYS)]},
        {"conditions": INFEASIBLE, "initContainerStatuses": [_s("restartable-init-1", {"cpu": "2"})]},
        {"cpu": 2000},
    ),
    (
        "resized, restartable init container, no resize status",
        True,
        {"initContainers": [_c("restartable-init-1", {"cpu": "4"}, ALWAYS)]},
        {"initContainerStatuses": [_s("restartable-init-1", {"cpu": "2"})]},
        {"cpu": 4000},
    ),
    (
        "resized, restartable init container, infeasible, but don't use status",
        False,
        {"initContainers": [_c("restartable-init-1", {"cpu": "4"}, ALWAYS)]},
        {"conditions": INFEASIBLE, "initContainerStatuses": [_s("restartable-init-1", {"cpu": "2"})]},
        {"cpu": 4000},
    ),
    (
        "aggregate request resolves max of sums instead of sum of maxes",
        True,
        {"containers": [_c("c1", {"cpu": "1"}), _c("c2", {"cpu": "2"})]},
        {"containerStatuses": [_s("c1", allocated={"cpu": "2"}), _s("c2", allocated={"cpu": "1"})]},
        {"cpu": 3000},
    ),
]


def _pod(spec: dict[str, Any], status: dict[str, Any]) -> Any:
    meta = {"name": "p", "namespace": "ns"}
    return convert({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status})


@pytest.mark.parametrize(("name", "use_status", "spec", "status", "want"), CASES, ids=[c[0] for c in CASES])
def test_pod_resource_requests_as_upstream(
    name: str, use_status: bool, spec: dict[str, Any], status: dict[str, Any], want: dict[str, int]
) -> None:
    """UseStatusResources is kube's scheduler cache (NodeInfo) reading a pod; without it, the spec's
    requests, as NodeResourcesFit reads the pod it schedules (pod_amounts without a status)."""
    if use_status:
        assert _pod(spec, status).requests == want
    else:
        assert pod_amounts(msgspec.convert(spec, wc.PodSpec), "spec")[0] == want


def test_a_downsize_not_yet_actuated_keeps_the_old_figure_and_is_not_shared_with_the_spec() -> None:
    """Equal specs, different statuses: the amounts' cache key tells them apart (both ways round)."""
    spec = {"containers": [_c("app", {"cpu": "1", "memory": "1Gi"})]}
    resized = {"containerStatuses": [_s("app", {"cpu": "3", "memory": "1Gi"}, {"cpu": "1", "memory": "1Gi"})]}
    caught_up = {"containerStatuses": [_s("app", {"cpu": "1", "memory": "1Gi"}, {"cpu": "1", "memory": "1Gi"})]}
    assert _pod(spec, resized).requests == {"cpu": 3000, "memory": 1 << 30}
    assert _pod(spec, {}).requests == {"cpu": 1000, "memory": 1 << 30}
    assert _pod(spec, caught_up).requests == {"cpu": 1000, "memory": 1 << 30}
    assert _pod(spec, resized).requests == {"cpu": 3000, "memory": 1 << 30}


def test_infeasible_without_statuses_counts_nothing_but_overhead() -> None:
    """Upstream's rule read literally: an Infeasible resize drops the spec, and a container without a
    status then gives nothing (overhead still counts); non-zero scoring fills 100m / 200Mi for it."""
    spec = {"containers": [_c("app", {"cpu": "1"})], "overhead": {"cpu": "100m"}}
    p = _pod(spec, {"conditions": INFEASIBLE})
    assert p.requests == {"cpu": 100}
    assert p.nonzero_requests == {"cpu": 200, "memory": 200 * 1024 * 1024}


def test_non_zero_requests_take_the_status_figures_too() -> None:
    """kube's Non0CPU/Non0Mem: NonMissingContainerRequests fills each of the three views' containers."""
    spec = {"containers": [_c("app", {"cpu": "1"})]}
    p = _pod(spec, {"containerStatuses": [_s("app", {"cpu": "2", "memory": "300Mi"})]})
    assert p.requests == {"cpu": 2000, "memory": 300 * 1024 * 1024}
    assert p.nonzero_requests == {"cpu": 2000, "memory": 300 * 1024 * 1024}


def test_cached_amounts_equal_working_them_out_afresh() -> None:
    for _, _, spec, status, _ in CASES:
        wspec, wstatus = msgspec.convert(spec, wc.PodSpec), msgspec.convert(status, wc.PodStatus)
        got = pod_amounts(wspec, "spec", wstatus)
        assert got[:3] == work_out_amounts(wspec, "spec", wstatus)
        own = work_out_amounts(wspec, "spec")[0]
        assert got[3] == (None if own == got[0] else own)  # the spec's own requests, where they differ


_LIST = st.dictionaries(st.sampled_from(["cpu", "memory"]), st.sampled_from(["1", "2", "500m", "1Gi", "0"]), max_size=2)
_NAME = st.sampled_from(["a", "b"])
_CONTAINER = st.fixed_dictionaries(
    {"name": _NAME},
    optional={"resources": st.fixed_dictionaries({}, optional={"requests": _LIST}), "restartPolicy": st.just(ALWAYS)},
)
_STATUS = st.fixed_dictionaries(
    {"name": _NAME},
    optional={"resources": st.fixed_dictionaries({}, optional={"requests": _LIST}), "allocatedResources": _LIST},
)
_POD_STATUS = st.fixed_dictionaries(
    {},
    optional={
        "conditions": st.lists(
            st.fixed_dictionaries(
                {
                    "type": st.sampled_from(["PodResizePending", "Ready"]),
                    "reason": st.sampled_from(["Infeasible", "Deferred"]),
                }
            ),
            max_size=2,
        ),
        "containerStatuses": st.lists(_STATUS, max_size=2),
        "initContainerStatuses": st.lists(_STATUS, max_size=2),
    },
)
_SPEC = st.fixed_dictionaries(
    {"containers": st.lists(_CONTAINER, min_size=1, max_size=2)},
    optional={"initContainers": st.lists(_CONTAINER, max_size=2), "overhead": _LIST},
)


@given(st.lists(st.tuples(_SPEC, _POD_STATUS), min_size=1, max_size=6))
@settings(max_examples=300, deadline=None)
def test_shared_amounts_are_the_ones_worked_out_from_spec_and_status(pods: list[tuple[dict, dict]]) -> None:
    """The cache (and its key, None when a status moves nothing) gives what working out the spec
    with its status afresh gives."""
    for spec, status in pods:
        wspec, wstatus = msgspec.convert(spec, wc.PodSpec), msgspec.convert(status, wc.PodStatus)
        try:
            fresh: object = work_out_amounts(wspec, "spec", wstatus)
        except Bad as e:
            fresh = str(e)
        try:
            amounts = pod_amounts(wspec, "spec", wstatus)
            own = work_out_amounts(wspec, "spec")[0]
            assert amounts[3] == (None if own == amounts[0] else own)  # the spec's own, where they differ
            got: object = amounts[:3]
        except Bad as e:
            got = str(e)
        assert got == fresh
