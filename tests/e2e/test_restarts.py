"""The fixture's knobs later tests build on: kube-scheduler run again with another KubeSchedulerConfiguration,
and the apiserver restarted under running clients."""

from __future__ import annotations

import pytest

from tests.e2e.cluster import Kube, wait_for
from tests.e2e.controlplane import ControlPlane

pytestmark = pytest.mark.e2e


def test_scheduler_restarted_with_another_profile(control_plane: ControlPlane, kube: Kube) -> None:
    other = {"schedulerName": "berth-e2e", "plugins": {"score": {"disabled": [{"name": "*"}]}}}
    control_plane.restart_scheduler({"profiles": [{"schedulerName": "default-scheduler"}, other]})
    try:
        node = kube.node("n1")
        kube.pod("p", {"cpu": "100m"}, spec={"schedulerName": "berth-e2e"})
        assert kube.wait_bound("p") == node
        # events are written per profile: the Scheduled event names the profile's scheduler
        scheduled = wait_for("Scheduled event", lambda: kube.events("p", "Scheduled") or None)
        assert scheduled[0]["reportingComponent"] == "berth-e2e"
    finally:
        control_plane.restart_scheduler(None)


def test_apiserver_restart(control_plane: ControlPlane, kube: Kube) -> None:
    node = kube.node("n1")
    kube.pod("before", {"cpu": "100m"})
    assert kube.wait_bound("before") == node
    control_plane.restart_apiserver()
    kube.pod("after", {"cpu": "100m"})
    assert kube.wait_bound("after") == node
