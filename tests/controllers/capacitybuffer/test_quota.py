"""ResourceQuota allocation across a namespace's buffers, oldest first."""

from __future__ import annotations

from typing import Any

import pytest

from berth.core.api.core.model import Pod, ResourceQuota, ScopeRequirement
from berth.core.controllers.capacitybuffer.controller import BufferResult
from berth.core.controllers.capacitybuffer.quota import Candidate, ScopeError, allocate, quota_matches
from tests.controllers.capacitybuffer.builders import buffer, pod_template, quota, results


def limited(r: BufferResult) -> tuple[str, str, str, int] | None:
    c = r.status.condition("LimitedByQuotas")
    return None if c is None else (c.status, c.reason, c.message, c.observed_generation)


def two_buffers(q: dict[str, Any], b1: int, b2: int) -> dict[str, BufferResult]:
    return results(
        pod_template("tpl", cpu="1", memory=None),
        buffer("b1", template="tpl", replicas=b1, created="2026-11-01T10:00:00Z"),
        buffer("b2", template="tpl", replicas=b2, created="2026-11-01T11:00:00Z"),
        q,
    )


@pytest.mark.parametrize(
    ("hard", "b1", "b2", "want1", "want2"),
    [
        ("5", 2, 4, 2, 3),  # the upstream integration test: b2 limited to 3
        ("5", 4, 4, 4, 1),  # raise b1 to 4: b2 drops to 1
        ("10", 4, 4, 4, 4),  # raise the quota: nobody limited
        ("1", 4, 4, 1, 0),
    ],
)
def test_first_come_first_served(hard: str, b1: int, b2: int, want1: int, want2: int) -> None:
    rs = two_buffers(quota("q", hard={"cpu": hard}), b1, b2)
    assert (rs["default/b1"].status.replicas, rs["default/b2"].status.replicas) == (want1, want2)
    for r, want, desired in ((rs["default/b1"], want1, b1), (rs["default/b2"], want2, b2)):
        if want < desired:
            message = f"Buffer replicas limited from {desired} to {want} due to quotas: q"
            assert limited(r) == ("True", "ResourceQuotasAllocated", message, 1)
        else:
            assert limited(r) == ("False", "ResourceQuotasAllocated", "", 1)


def test_older_buffer_wins_regardless_of_name() -> None:
    rs = results(
        pod_template("tpl", cpu="1", memory=None),
        buffer("a-new", template="tpl", replicas=3, created="2026-11-01T12:00:00Z"),
        buffer("z-old", template="tpl", replicas=3, created="2026-11-01T09:00:00Z"),
        quota("q", hard={"cpu": "4"}),
    )
    assert (rs["default/z-old"].status.replicas, rs["default/a-new"].status.replicas) == (3, 1)


def test_same_age_ties_break_by_name() -> None:
    rs = results(
        pod_template("tpl", cpu="1", memory=None),
        buffer("b", template="tpl", replicas=3),
        buffer("a", template="tpl", replicas=3),
        quota("q", hard={"cpu": "4"}),
    )
    assert (rs["default/a"].status.replicas, rs["default/b"].status.replicas) == (3, 1)


def test_used_counts_and_requests_prefix_too() -> None:
    rs = two_buffers(quota("q", hard={"requests.cpu": "5"}, used={"requests.cpu": "2"}), 2, 4)
    assert (rs["default/b1"].status.replicas, rs["default/b2"].status.replicas) == (2, 1)


def test_over_used_quota_allows_nothing() -> None:
    rs = two_buffers(quota("q", hard={"cpu": "2"}, used={"cpu": "3"}), 2, 0)
    assert rs["default/b1"].status.replicas == 0
    assert limited(rs["default/b2"]) == ("False", "ResourceQuotasAllocated", "", 1)


def test_every_quota_below_desired_is_named() -> None:
    rs = results(
        pod_template("tpl", cpu="1", memory="1Gi"),
        buffer("b", template="tpl", replicas=10),
        quota("z-mem", hard={"memory": "8Gi"}),
        quota("a-cpu", hard={"cpu": "4"}),
        quota("roomy", hard={"cpu": "100"}),
        quota("pods-only", hard={"pods": "1", "count/pods": "1", "limits.cpu": "1"}),
    )
    r = rs["default/b"]
    assert r.status.replicas == 4
    assert limited(r) == (
        "True",
        "ResourceQuotasAllocated",
        "Buffer replicas limited from 10 to 4 due to quotas: a-cpu, z-mem",
        1,
    )


def test_other_namespaces_quotas_do_not_apply() -> None:
    rs = results(
        pod_template("tpl", cpu="1"), buffer("b", template="tpl", replicas=3), quota("q", ns="other", hard={"cpu": "1"})
    )
    assert rs["default/b"].status.replicas == 3


def test_chunk_without_requests_is_skipped() -> None:
    rs = results(
        pod_template("tpl", cpu=None, memory=None),
        buffer("b", template="tpl", replicas=3),
        quota("q", hard={"cpu": "1"}),
    )
    assert rs["default/b"].status.replicas == 3
    assert limited(rs["default/b"]) is None


def test_not_ready_buffer_is_skipped_and_takes_nothing() -> None:
    rs = results(
        pod_template("tpl", cpu="1"),
        buffer("broken", template="missing", replicas=3, created="2026-11-01T09:00:00Z"),
        buffer("ok", template="tpl", replicas=3),
        quota("q", hard={"cpu": "3"}),
    )
    assert limited(rs["default/broken"]) is None
    assert rs["default/ok"].status.replicas == 3


def test_observed_generation_is_the_buffers() -> None:
    rs = results(
        pod_template("tpl", cpu="1"),
        buffer("b", template="tpl", replicas=3, generation=7),
        quota("q", hard={"cpu": "1"}),
    )
    assert limited(rs["default/b"]) == (
        "True",
        "ResourceQuotasAllocated",
        "Buffer replicas limited from 3 to 1 due to quotas: q",
        7,
    )


# ---- scopes ------------------------------------------------------------------------------


def cand(cpu: int = 1000, memory: int = 0, priority_class: str = "", cross: bool = False) -> Candidate:
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v}
    return Candidate("ns/b", 1, Pod("ns", "b", requests=requests, priority_class_name=priority_class), cross)


def rq(scopes: tuple[str, ...] = (), selector: tuple[tuple[str, str, tuple[str, ...]], ...] = ()) -> ResourceQuota:
    reqs = tuple(ScopeRequirement(n, op, v) for n, op, v in selector)
    return ResourceQuota("ns", "q", hard={"cpu": 1000}, scopes=scopes, scope_selector=reqs)


SCOPES = [
    ("no scopes", rq(), cand(), True),
    ("Terminating never", rq(("Terminating",)), cand(), False),
    ("NotTerminating always", rq(("NotTerminating",)), cand(), True),
    ("BestEffort without cpu or memory", rq(("BestEffort",)), cand(cpu=0), True),
    ("BestEffort with cpu", rq(("BestEffort",)), cand(), False),
    ("NotBestEffort with memory", rq(("NotBestEffort",)), cand(cpu=0, memory=5), True),
    ("PriorityClass scope needs a class", rq(("PriorityClass",)), cand(), False),
    ("PriorityClass In", rq(selector=(("PriorityClass", "In", ("high",)),)), cand(priority_class="high"), True),
    ("PriorityClass In miss", rq(selector=(("PriorityClass", "In", ("high",)),)), cand(priority_class="low"), False),
    ("PriorityClass NotIn", rq(selector=(("PriorityClass", "NotIn", ("high",)),)), cand(priority_class="low"), True),
    ("PriorityClass Exists", rq(selector=(("PriorityClass", "Exists", ()),)), cand(priority_class="x"), True),
    ("PriorityClass Exists without class", rq(selector=(("PriorityClass", "Exists", ()),)), cand(), False),
    ("PriorityClass DoesNotExist", rq(selector=(("PriorityClass", "DoesNotExist", ()),)), cand(), True),
    ("CrossNamespacePodAffinity", rq(("CrossNamespacePodAffinity",)), cand(cross=True), True),
    ("CrossNamespacePodAffinity miss", rq(("CrossNamespacePodAffinity",)), cand(), False),
    ("selector scope without operator semantics", rq(selector=(("NotTerminating", "Exists", ()),)), cand(), True),
    ("scopes AND selector", rq(("NotTerminating",), (("PriorityClass", "In", ("high",)),)), cand(), False),
    ("unknown scope", rq(("VolumeAttributesClass",)), cand(), False),
]


@pytest.mark.parametrize(("q", "c", "want"), [s[1:] for s in SCOPES], ids=[s[0] for s in SCOPES])
def test_scope_matching(q: ResourceQuota, c: Candidate, want: bool) -> None:
    assert quota_matches(q, c) is want


@pytest.mark.parametrize("selector", [("PriorityClass", "In", ()), ("PriorityClass", "Gt", ("1",))])
def test_bad_priority_selector_skips_the_quota(selector: tuple[str, str, tuple[str, ...]]) -> None:
    q = rq(selector=(selector,))
    with pytest.raises(ScopeError):
        quota_matches(q, cand())
    assert allocate([Candidate("ns/b", 5, Pod("ns", "b", requests={"cpu": 1000}))], [q])["ns/b"].allowed == 5


def test_cross_namespace_affinity_from_the_template() -> None:
    affinity = {
        "podAntiAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 1, "podAffinityTerm": {"topologyKey": "zone", "namespaceSelector": {}}}
            ]
        }
    }
    rs = results(
        pod_template("tpl", cpu="1", affinity=affinity),
        buffer("b", template="tpl", replicas=3),
        quota("q", hard={"cpu": "1"}, scopes=["CrossNamespacePodAffinity"]),
    )
    assert rs["default/b"].status.replicas == 1
