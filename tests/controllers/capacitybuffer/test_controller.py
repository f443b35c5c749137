"""Conditions, strategies, versions and invalid specs through the controller."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from berth.core.api.autoscaling.model import GROUP, Condition
from berth.core.api.kinds import KINDS, convert_as
from berth.core.controllers.capacitybuffer.status import condition_json, set_condition, status_json
from berth.core.errors import InputError
from tests.controllers.capacitybuffer.builders import NOW, buffer, one, pod_template, ready_message, results, workload

PREFIX = "Buffer not ready for provisioning: "
EARLIER = "2026-10-01T00:00:00Z"


def test_transition_time_moves_only_when_status_flips() -> None:
    old = Condition("ReadyForProvisioning", "True", "AttributesSetSuccessfully", "ready", NOW - timedelta(days=3))
    keep = set_condition((old,), Condition("ReadyForProvisioning", "True", "X", "y"), NOW)
    assert keep[0].last_transition_time == old.last_transition_time and keep[0].reason == "X"
    flip = set_condition((old,), Condition("ReadyForProvisioning", "False", "error", "z"), NOW)
    assert flip[0].last_transition_time == NOW


def test_status_from_the_snapshot_is_updated_in_place() -> None:
    status = {
        "replicas": 9,
        "conditions": [
            {
                "type": "ReadyForProvisioning",
                "status": "True",
                "reason": "AttributesSetSuccessfully",
                "message": "ready",
                "lastTransitionTime": EARLIER,
            },
            {
                "type": "Provisioning",
                "status": "True",
                "reason": "FakePodsInjected",
                "message": "",
                "lastTransitionTime": EARLIER,
            },
        ],
    }
    r = one(pod_template("tpl"), buffer("b", template="tpl", replicas=2, status=status))
    out = status_json(r.status)
    assert out["replicas"] == 2
    assert [(c["type"], c["lastTransitionTime"]) for c in out["conditions"]] == [
        ("ReadyForProvisioning", EARLIER),
        ("Provisioning", EARLIER),  # the autoscaler's condition is kept
        ("LimitedByQuotas", "2026-11-02T12:00:00Z"),
    ]


def test_status_json_matches_the_api() -> None:
    r = one(pod_template("tpl"), buffer("b", template="tpl", replicas=2))
    assert status_json(r.status) == {
        "podTemplateRef": {"name": "capacitybuffer-b-pod-template"},
        "replicas": 2,
        "podTemplateGeneration": 1,
        "conditions": [
            {
                "type": "ReadyForProvisioning",
                "status": "True",
                "lastTransitionTime": "2026-11-02T12:00:00Z",
                "reason": "AttributesSetSuccessfully",
                "message": "ready",
            },
            {  # written even without quotas in the namespace
                "type": "LimitedByQuotas",
                "status": "False",
                "observedGeneration": 1,
                "lastTransitionTime": "2026-11-02T12:00:00Z",
                "reason": "ResourceQuotasAllocated",
                "message": "",
            },
        ],
        "provisioningStrategy": "buffer.x-k8s.io/active-capacity",
    }


def test_observed_generation_only_when_set() -> None:
    c = Condition("LimitedByQuotas", "False", "ResourceQuotasAllocated", "", NOW, observed_generation=3)
    assert list(condition_json(c)) == [
        "type",
        "status",
        "observedGeneration",
        "lastTransitionTime",
        "reason",
        "message",
    ]


@pytest.mark.parametrize(
    ("strategy", "want"), [(None, "buffer.x-k8s.io/active-capacity"), ("", "buffer.x-k8s.io/active-capacity")]
)
def test_active_or_empty_strategy_is_processed(strategy: str | None, want: str) -> None:
    r = one(pod_template("tpl"), buffer("b", template="tpl", replicas=1, strategy=strategy))
    assert r.processed and r.status.provisioning_strategy == want


def test_other_strategy_is_left_untouched() -> None:
    status = {"replicas": 5, "provisioningStrategy": "example.com/warm"}
    r = one(pod_template("tpl"), buffer("b", template="tpl", replicas=1, strategy="example.com/warm", status=status))
    assert not r.processed
    assert status_json(r.status) == {"replicas": 5, "provisioningStrategy": "example.com/warm"}


def test_v1alpha1_reads_the_same() -> None:
    r = one(pod_template("tpl"), buffer("b", template="tpl", replicas=3, version="autoscaling.x-k8s.io/v1alpha1"))
    assert (ready_message(r)[0], r.status.replicas) == ("True", 3)


@pytest.mark.parametrize("version", ["autoscaling.x-k8s.io/v1", "v1", "example.com/v1beta1"])
def test_unknown_version_is_an_input_error(version: str) -> None:
    with pytest.raises(InputError, match="apiVersion: unsupported version"):
        convert_as(KINDS[(GROUP, "CapacityBuffer")], buffer("b", template="tpl", replicas=1, version=version))


INVALID: list[tuple[str, dict[str, Any], str]] = [
    (
        "both refs",
        buffer("b", template="tpl", scalable=("apps", "Deployment", "web"), replicas=1),
        "You must define either PodTemplateRef or ScalableRef, but not both",
    ),
    ("neither ref", buffer("b", replicas=1), "neither podTemplateRef nor scalableRef is set"),
    (
        "negative replicas",
        buffer("b", template="tpl", replicas=-1),
        "spec.replicas in body should be greater than or equal to 0",
    ),
    (
        "negative percentage",
        buffer("b", scalable=("apps", "Deployment", "web"), percentage=-5),
        "spec.percentage in body should be greater than or equal to 0",
    ),
    (
        "replicas over int32",
        buffer("b", template="tpl", replicas=2**31),
        "spec.replicas in body should be less than or equal to 2147483647",
    ),
    (
        "negative limit",
        buffer("b", template="tpl", limits={"cpu": "-1"}),
        "spec.limits.cpu should be greater than or equal to 0",
    ),
    (
        "replicas not a number",
        buffer("b", template="tpl", replicas="three"),
        "spec.replicas: expected an integer, got 'three'",
    ),
    (
        "limit not a quantity",
        buffer("b", template="tpl", limits={"cpu": "lots"}),
        "spec.limits.cpu: quantities must match",
    ),
    (
        "empty template name",
        buffer("b", template="", replicas=1),
        "spec.podTemplateRef.name in body should be at least 1 chars long",
    ),
    (
        "scalableRef without kind",
        buffer("b", replicas=1, spec={"scalableRef": {"name": "web"}, "replicas": 1}),
        "spec.scalableRef.kind: Required value",
    ),
    ("spec not an object", buffer("b", spec=[]), "spec: expected an object"),  # type: ignore[arg-type]
    ("no spec", {**buffer("b"), "spec": None}, "spec: Required value"),
    (
        "unknown kind",
        buffer("b", scalable=("apps", "Widget", "w"), replicas=1),
        "kind apps/Widget is not supported to use pod template",
    ),
    ("missing template", buffer("b", template="nope", replicas=1), 'podtemplates "nope" not found'),
]


@pytest.mark.parametrize(("raw", "message"), [i[1:] for i in INVALID], ids=[i[0] for i in INVALID])
def test_invalid_spec_is_a_condition_and_others_go_on(raw: dict[str, Any], message: str) -> None:
    rs = results(
        pod_template("tpl"),
        workload("web"),
        raw,
        buffer("good", template="tpl", replicas=2),
    )
    r = rs["default/b"]
    status, reason, text = ready_message(r)
    assert (status, reason) == ("False", "error")
    assert text.startswith(PREFIX) and message in text
    assert (r.status.pod_template_ref, r.status.replicas, r.status.pod_template_generation) == (None, None, None)
    assert ready_message(rs["default/good"]) == ("True", "AttributesSetSuccessfully", "ready")
    assert rs["default/good"].status.replicas == 2


def test_malformed_old_status_is_replaced() -> None:
    r = one(pod_template("tpl"), buffer("b", template="tpl", replicas=1, status={"conditions": "nope"}))
    assert ready_message(r) == ("True", "AttributesSetSuccessfully", "ready")


def test_results_are_ordered_by_key() -> None:
    rs = results(
        pod_template("tpl", ns="b"),
        pod_template("tpl", ns="a"),
        buffer("y", ns="b", template="tpl", replicas=1),
        buffer("x", ns="b", template="tpl", replicas=1, created="2026-11-01T12:00:00Z"),
        buffer("z", ns="a", template="tpl", replicas=1),
    )
    assert list(rs) == ["a/z", "b/x", "b/y"]
