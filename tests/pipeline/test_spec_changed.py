"""Which updates of a waiting pod are decided again: every Pod field but version and status churn."""

from __future__ import annotations

from typing import Any

import pytest

from berth.core.api.core.model import Pod
from berth.core.api.kinds import pod_from_raw
from berth.core.pipeline.scorer import PLACEMENT, STATUS_ONLY, spec_changed
from tests.builders import node, pod
from tests.pipeline.test_engine import Log, replay
from tests.plugins.interpod.builders import affinity, spread, term


def test_every_pod_field_is_compared_or_named_status_only() -> None:
    """A field added to Pod is compared unless someone names it status-only here and in the scorer."""
    fields = set(Pod.__struct_fields__)
    assert fields >= STATUS_ONLY
    assert set(PLACEMENT) == fields - STATUS_ONLY
    assert {"resource_version", "conditions", "creation", "phase", "node_name", "deleting"} == STATUS_ONLY


def base(rv: str = "1", labels: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    meta = {"labels": labels or {"app": "db"}, "resourceVersion": rv}
    return pod("p", cpu="100", metadata=meta, **spec)


def container(name: str, **extra: Any) -> dict[str, Any]:
    return {"containers": [{"name": "main", "image": name, "resources": {"requests": {"cpu": "100"}}, **extra}]}


# (what changed, the pod's spec after the update)
CHANGES: list[tuple[str, dict[str, Any]]] = [
    ("pod affinity", {"affinity": affinity(anti=[term({"app": "db"}, "kubernetes.io/hostname")])}),
    ("topology spread", {"topologySpreadConstraints": [spread("zone", {"app": "db"})]}),
    (
        "preferred node affinity",
        {
            "affinity": {
                "nodeAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {"weight": 5, "preference": {"matchExpressions": [{"key": "a", "operator": "Exists"}]}}
                    ]
                }
            }
        },
    ),
    ("host ports", container("app", ports=[{"hostPort": 80}])),
    ("images", container("db:2")),
    ("inline disks", {"volumes": [{"name": "d", "gcePersistentDisk": {"pdName": "disk"}}]}),
    ("labels", {"labels": {"app": "web"}}),
    ("scheduler name", {"schedulerName": "other"}),
]


@pytest.mark.parametrize("spec", [c[1] for c in CHANGES], ids=[c[0] for c in CHANGES])
def test_a_placement_field_change_counts(spec: dict[str, Any]) -> None:
    assert spec_changed(pod_from_raw(base()), pod_from_raw(base(**spec)))


def test_version_and_status_churn_do_not_count() -> None:
    old = pod_from_raw(base())
    churn = base(rv="2")
    churn["status"] = {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False"}]}
    assert not spec_changed(old, pod_from_raw(churn))


def test_a_waiting_pod_updated_with_a_new_spread_is_decided_again() -> None:
    """The pod waits (too big); a resourceVersion bump leaves it waiting without a decision, a new
    topology spread constraint is decided at once."""
    log = Log().add(node("n1", cpu="4")).add(base(), at=1)
    log.add(base(rv="2"), "MODIFIED", at=1)
    log.add(base(rv="3", topologySpreadConstraints=[spread("zone", {"app": "db"})]), "MODIFIED", at=1)
    _, out = replay(log)
    assert [d.pod for d in out] == ["default/p", "default/p"]
    assert all(d.status == "Unschedulable" for d in out)
