"""A pod resized in place: kube-scheduler counts the larger of its spec's and its containers' status
figures (tests/api/test_resize.py), Koordinator's estimator the spec's only (PodRequestsAndLimits
without status resources). The estimate and the priority class follow the spec."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from berth.core.api.kinds import convert
from berth.core.plugins.loadawarescheduling.args import parse_args
from berth.core.plugins.loadawarescheduling.estimator import BATCH, PROD, Estimator, priority_class
from berth.core.plugins.loadawarescheduling.store import NodeMetricStore
from berth.core.plugins.loadawarescheduling.vectors import Resources

ARGS = parse_args({})  # cpu 85%, memory 70%


def _pod(spec_cpu: str | None, status: dict[str, Any] | None) -> Any:
    resources = {"requests": {"cpu": spec_cpu}} if spec_cpu else {}
    raw: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web-0", "namespace": "default"},
        "spec": {"nodeName": "n1", "containers": [{"name": "c", "resources": resources}]},
    }
    if status is not None:
        raw["status"] = {"phase": "Running", "containerStatuses": [{"name": "c", **status}]}
    return convert(raw)


# (case, spec cpu, container status, kube's cpu request, the estimate's cpu, priority class)
CASES = [
    ("no status", "1", None, 1000, 850, PROD),
    ("downsize not yet actuated", "1", {"resources": {"requests": {"cpu": "3"}}}, 3000, 850, PROD),
    ("downsize allocated, not actuated", "1", {"allocatedResources": {"cpu": "1"}, "resources": {"requests": {"cpu": "3"}}}, 3000, 850, PROD),
    ("upsize allocated", "4", {"allocatedResources": {"cpu": "4"}, "resources": {"requests": {"cpu": "2"}}}, 4000, 3400, PROD),
    ("actuated as the spec", "2", {"resources": {"requests": {"cpu": "2"}}}, 2000, 1700, PROD),
    ("best effort in the spec, requests in the status", None, {"resources": {"requests": {"cpu": "1"}}}, 1000, 250, BATCH),
]  # fmt: skip


@pytest.mark.parametrize(
    ("spec_cpu", "status", "kube", "estimate", "cls"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_estimate_reads_the_spec(
    spec_cpu: str | None, status: dict[str, Any] | None, kube: int, estimate: int, cls: str
) -> None:
    p = _pod(spec_cpu, status)
    assert p.requests.get("cpu", 0) == kube
    res = Resources.of(ARGS)
    est = Estimator(ARGS, res).estimate(p)
    assert est[res.index["cpu"]] == estimate
    assert priority_class(p) == cls
    got, prod = NodeMetricStore(ARGS).estimate(p)
    assert np.array_equal(got, est) and prod == (cls == PROD)


def test_spec_requests_kept_only_when_they_differ() -> None:
    assert _pod("1", None).spec_requests is None
    assert _pod("2", {"resources": {"requests": {"cpu": "2"}}}).spec_requests is None
    assert _pod("1", {"resources": {"requests": {"cpu": "3"}}}).spec_requests == {"cpu": 1000}
