"""What an assigned pod's update is to the waiting pods (kube's PodSchedulingPropertiesChange, the
parts berth reports). Upstream's table: TestPodSchedulingPropertiesChange in
pkg/scheduler/framework/events_test.go, the cases on labels and requests; the names are upstream's.
Its other cases (tolerations, scheduling gates, resource claims) are updates of a pod not yet bound,
which berth decides again without events."""

from __future__ import annotations

from typing import Any

import pytest

from berth.core.api.kinds import convert
from berth.core.framework.events import Action, ClusterEvent, pod_update


def _pod(cpu: str, labels: dict[str, str] | None = None, actuated: str | None = None, **meta: Any) -> Any:
    """A bound pod whose container "app" asks for cpu, allocated as asked (actuated: the status's figure)."""
    status: dict[str, Any] = {"name": "app", "allocatedResources": {"cpu": cpu}}
    if actuated is not None:
        status["resources"] = {"requests": {"cpu": actuated}}
    raw = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default", "labels": labels or {}, **meta},
        "spec": {"nodeName": "n1", "containers": [{"name": "app", "resources": {"requests": {"cpu": cpu}}}]},
        "status": {"containerStatuses": [status]},
    }
    return convert(raw)


BIG, SMALL = _pod("101m"), _pod("100m")
LABEL, SCALE_DOWN = Action.UPDATE_POD_LABEL, Action.UPDATE_POD_SCALE_DOWN
CASES = [
    ("only label is updated", _pod("100m", {"foo": "bar2"}), _pod("100m", {"foo": "bar"}), LABEL),
    ("pod's resource request is scaled down", BIG, SMALL, SCALE_DOWN),
    ("pod's resource request is scaled up", SMALL, BIG, Action(0)),
    ("both pod's resource request and label are updated", BIG, _pod("100m", {"foo": "bar"}), LABEL | SCALE_DOWN),
    ("untracked properties of pod is updated", _pod("100m", annotations={"foo": "bar2"}),
     _pod("100m", annotations={"foo": "bar"}), Action(0)),
    ("berth: the kubelet actuates a downsize (status 3 -> 1, spec 1)", _pod("1", actuated="3"), _pod("1", actuated="1"),
     SCALE_DOWN),
    ("berth: a downsize in the spec not yet actuated", _pod("3", actuated="3"), _pod("1", actuated="3"), Action(0)),
]  # fmt: skip


@pytest.mark.parametrize(("old", "new", "want"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_pod_update_as_upstream(old: Any, new: Any, want: Action) -> None:
    assert pod_update(old, new) == want


# kube's ActionType: Update holds UpdatePodLabel and UpdatePodScaleDown, so a plugin registered for
# Pod/Update sees a scale-down; one registered for UpdatePodLabel (InterPodAffinity) does not.
MATCHES = [
    (Action.UPDATE, SCALE_DOWN, True),
    (Action.UPDATE, LABEL, True),
    (Action.ALL, SCALE_DOWN, True),
    (LABEL, SCALE_DOWN, False),
    (Action.ADD | LABEL | Action.DELETE, SCALE_DOWN, False),
    (Action.DELETE | SCALE_DOWN, SCALE_DOWN, True),
    (Action.DELETE | SCALE_DOWN, LABEL, False),
    (Action.DELETE | SCALE_DOWN, LABEL | SCALE_DOWN, True),
]


@pytest.mark.parametrize(("registered", "action", "want"), MATCHES)
def test_a_scale_down_is_an_update(registered: Action, action: Action, want: bool) -> None:
    assert ClusterEvent("Pod", registered).matches("Pod", action) is want
