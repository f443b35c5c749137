"""DynamicResources for a pod that references ResourceClaims (issue 34): berth does not model dynamic resource
allocation, so such a pod's decision is an Error saying so, never a placement. kube's PreFilter order holds:
an earlier PreFilter's rejection comes first; with the plugin off, kube ignores the claims, and so does berth."""

from __future__ import annotations

from typing import Any

from berth.core.config.kubeschedulerconfig import parse_config
from berth.core.plugins.dynamicresources import NOT_MODELLED
from berth.core.scheduler.schedule_one import Scheduler
from tests.builders import NOW, cluster, node, pod

CLAIMS = [{"name": "gpu", "resourceClaimTemplateName": "gpu"}, {"name": "nic", "resourceClaimName": "nic-0"}]


def decide(raw: dict[str, Any], config: dict[str, Any] | None = None) -> Any:
    state = cluster(node("n1"), node("n2"), raw)
    return Scheduler(parse_config(config).build(state)).decide(state.pods["default/p"], NOW).decision


def test_a_pod_with_resource_claims_is_an_error_not_a_placement() -> None:
    d = decide(pod("p", resourceClaims=CLAIMS))
    assert (d.status, d.node) == ("Error", None)
    assert d.message == f"{NOT_MODELLED} (gpu, nic)"


def test_the_same_pod_without_claims_is_placed() -> None:
    assert decide(pod("p")).status == "Scheduled"


def test_an_earlier_pre_filter_rejection_comes_first() -> None:
    # VolumeBinding's PreFilter, before DynamicResources' in kube's default profile: UnschedulableAndUnresolvable
    d = decide(pod("p", ("missing",), resourceClaims=CLAIMS))
    assert d.status == "Unschedulable" and 'persistentvolumeclaim "missing" not found' in d.message


def test_with_dynamic_resources_off_the_claims_are_ignored_as_kube_ignores_them() -> None:
    off = {"profiles": [{"plugins": {"multiPoint": {"disabled": [{"name": "DynamicResources"}]}}}]}
    assert decide(pod("p", resourceClaims=CLAIMS), off).status == "Scheduled"
