"""`berth buffers` run the way users run it, on snapshot files in tests/data/buffers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from berth_cli import main as cli

DATA = Path(__file__).parents[2] / "data" / "buffers"
SHOP = str(DATA / "shop.yaml")
WEEKDAY = "2026-11-02T12:00:00Z"
SATURDAY = "2026-11-07T12:00:00Z"
PREFIX = "Buffer not ready for provisioning: "


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(["buffers", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def by_buffer(out: str) -> dict[str, dict[str, Any]]:
    return {b["buffer"]: b for b in json.loads(out)["buffers"]}


def condition(entry: dict[str, Any], type_: str) -> tuple[str, str, str] | None:
    for c in entry["status"].get("conditions", []):
        if c["type"] == type_:
            return c["status"], c["reason"], c["message"]
    return None


def summary(entry: dict[str, Any]) -> tuple[Any, ...]:
    return (entry["status"].get("replicas"), entry["readyReplicas"], len(entry["fakePods"]))


def test_weekday(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "--snapshot", SHOP, "--now", WEEKDAY)
    assert code == 0
    assert err == f"warning: {SHOP}: skipped 1 object(s) of kind ConfigMap (core): berth does not read it\n"
    got = by_buffer(out)
    assert list(got) == sorted(got)
    # 6 free CPUs: web-headroom (oldest) takes 2, ci 4, nothing left for nightly
    assert {k: summary(v) for k, v in got.items() if not k.startswith("shop/broken")} == {
        "shop/web-headroom": (2, 2, 2),  # max(1, ceil(50% of 3 running))
        "shop/ci": (4, 4, 4),  # limits: 4 CPUs of 1-CPU chunks
        "shop/nightly": (1, 0, 1),  # quota leaves 1 of 2
        "shop/warm": (5, 0, 0),  # another strategy: untouched
    }
    assert condition(got["shop/nightly"], "LimitedByQuotas") == (
        "True",
        "ResourceQuotasAllocated",
        "Buffer replicas limited from 2 to 1 due to quotas: shop-quota",
    )
    assert condition(got["shop/nightly"], "ScheduleActive") == (
        "True",
        "InsideActiveWindow",
        "active window 2026-11-02T08:00:00Z to 2026-11-02T18:00:00Z",
    )
    assert got["shop/warm"]["status"] == {"replicas": 5, "provisioningStrategy": "example.com/warm-pool"}


def test_full_entry(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run(capsys, "--snapshot", SHOP, "--now", WEEKDAY)
    ci = by_buffer(out)["shop/ci"]
    assert ci["status"] == {
        "podTemplateRef": {"name": "capacitybuffer-ci-pod-template"},
        "replicas": 4,
        "podTemplateGeneration": 1,
        "conditions": [
            {
                "type": "ReadyForProvisioning",
                "status": "True",
                "lastTransitionTime": WEEKDAY,
                "reason": "AttributesSetSuccessfully",
                "message": "ready",
            },
            {
                "type": "LimitedByQuotas",
                "status": "False",
                "observedGeneration": 2,
                "lastTransitionTime": WEEKDAY,
                "reason": "ResourceQuotasAllocated",
                "message": "",
            },
        ],
        "provisioningStrategy": "buffer.x-k8s.io/active-capacity",
    }
    pod = ci["fakePods"][3]
    assert pod["metadata"]["name"] == "capacity-buffer-ci-4"
    assert pod["metadata"]["uid"] == "u-ci-4"
    assert pod["metadata"]["labels"] == {"role": "ci"}
    assert pod["spec"]["containers"][0]["resources"] == {
        "limits": {"cpu": "1", "memory": "2Gi"},
        "requests": {"cpu": "1", "memory": "2Gi"},
    }


def test_saturday_turns_the_scheduled_buffer_off(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run(capsys, "--snapshot", SHOP, "--now", SATURDAY)
    nightly = by_buffer(out)["shop/nightly"]
    assert summary(nightly) == (0, 0, 0)
    assert condition(nightly, "ScheduleActive") == (
        "False",
        "OutsideActiveWindows",
        "outside the active windows of berth.dev/buffer-schedule, replicas set to 0; next window opens 2026-11-09T08:00:00Z",
    )
    assert condition(nightly, "LimitedByQuotas") == ("False", "ResourceQuotasAllocated", "")
    assert condition(nightly, "ReadyForProvisioning") == ("True", "AttributesSetSuccessfully", "ready")


BROKEN = {
    "shop/broken-both": "You must define either PodTemplateRef or ScalableRef, but not both",
    "shop/broken-none": "neither podTemplateRef nor scalableRef is set",
    "shop/broken-negative": "spec.replicas in body should be greater than or equal to 0",
    "shop/broken-kind": 'failed to resolve live pod: failed to get scale object: no matches for kind "Widget" in group '
    '"example.com", failed to resolve scalable object: kind example.com/Widget is not supported to use pod template',
    "shop/broken-template": 'capacity buffer client can\'t get pod template: podtemplates "gone" not found',
}


def test_broken_buffers_get_conditions(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run(capsys, "--snapshot", SHOP, "--now", WEEKDAY)
    got = by_buffer(out)
    for key, message in BROKEN.items():
        assert got[key]["status"] == {
            "conditions": [
                {
                    "type": "ReadyForProvisioning",
                    "status": "False",
                    "lastTransitionTime": WEEKDAY,
                    "reason": "error",
                    "message": PREFIX + message,
                }
            ],
            "provisioningStrategy": "buffer.x-k8s.io/active-capacity",
        }
        assert summary(got[key]) == (None, 0, 0)


def test_max_chunks(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run(capsys, "--snapshot", SHOP, "--now", WEEKDAY, "--max-chunks", "3")
    ci = by_buffer(out)["shop/ci"]
    assert (len(ci["fakePods"]), ci["fakePodsOmitted"], ci["readyReplicas"]) == (3, 1, 3)


def test_table(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--snapshot", SHOP, "--now", WEEKDAY, "-o", "table")
    assert code == 0
    assert "berth buffers: 9 buffer(s)" in out
    assert "shop/web-headroom" in out and "not processed" in out


def test_bad_clock_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        cli.main(["buffers", "--snapshot", SHOP, "--now", "tuesday"])
    assert info.value.code == 2
    assert "invalid RFC 3339 time 'tuesday'" in capsys.readouterr().err


def test_unsupported_version_names_the_object(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "--snapshot", str(DATA / "bad-version.yaml"))
    assert (code, out) == (2, "")
    assert err == (
        f"berth buffers: error: {DATA / 'bad-version.yaml'}: CapacityBuffer shop/old: apiVersion: unsupported version "
        "'autoscaling.x-k8s.io/v1': want autoscaling.x-k8s.io/v1beta1 or autoscaling.x-k8s.io/v1alpha1\n"
    )


def test_empty_snapshot(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    empty = tmp_path / "empty.yaml"
    empty.write_text("apiVersion: v1\nkind: List\nitems: []\n")
    code, out, _ = run(capsys, "--snapshot", str(empty))
    assert (code, json.loads(out)) == (0, {"buffers": []})
