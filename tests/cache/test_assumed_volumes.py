"""A PV a reservation assumed for a claim is given back when the API server binds that claim to another PV
(kube-scheduler through the extender, or another scheduler, chose differently): as kube's assume cache
holds only what the scheduler itself binds. Before, the assumed PV stayed taken once the pod was
confirmed on its node, and the next claim found no PV there."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from berth.core.api.watch import WatchEvent
from berth.core.config.kubeschedulerconfig import parse_config
from berth.core.pipeline.scorer import ScorerEngine
from tests.builders import node, pod, pv, pvc, storage_class

T0 = datetime(2026, 11, 1, 10, 0, tzinfo=UTC)


class Log:
    def __init__(self) -> None:
        self.engine = ScorerEngine(parse_config(None))
        self.n = 0

    def send(self, etype: str, obj: dict[str, Any], rv: int) -> list[tuple[str, str, str | None]]:
        self.n += 1
        obj["metadata"]["resourceVersion"] = str(rv)
        ev = WatchEvent(etype, obj, T0 + timedelta(seconds=self.n), self.n).decoded()
        return [(r.pod, r.status, r.node) for r in self.engine.handle(ev)]


def test_a_claim_bound_elsewhere_gives_the_assumed_pv_back() -> None:
    log = Log()
    for i, obj in enumerate([storage_class(), node("n1"), pv("pv-a", "10Gi", on="n1"), pv("pv-b", "10Gi", on="n1")]):
        log.send("ADDED", obj, i + 1)
    log.send("ADDED", pvc("data-0"), 10)
    assert log.send("ADDED", pod("db-0", ("data-0",)), 11) == [("default/db-0", "Scheduled", "n1")]
    assumed = log.engine.state.reserved("default/db-0")
    assert assumed is not None and assumed.bindings == (("default/data-0", "pv-a"),)
    # kube-scheduler bound the claim to pv-b (the PV controller's writes), then the pod
    log.send("MODIFIED", pv("pv-b", "10Gi", on="n1", claim="default/data-0", phase="Bound"), 20)
    log.send("MODIFIED", pvc("data-0", volume="pv-b", bound=True), 21)
    log.send("MODIFIED", pod("db-0", ("data-0",), node_name="n1"), 22)
    assert log.engine.state.pvs["pv-a"].claim_ref is None  # the API server's again
    log.send("ADDED", pvc("data-1"), 30)
    assert log.send("ADDED", pod("db-1", ("data-1",)), 31) == [("default/db-1", "Scheduled", "n1")]
    assert log.engine.state.reserved("default/db-1").bindings == (("default/data-1", "pv-a"),)  # type: ignore[union-attr]


def test_the_same_pv_bound_keeps_it() -> None:
    log = Log()
    for i, obj in enumerate([storage_class(), node("n1"), pv("pv-a", "10Gi", on="n1")]):
        log.send("ADDED", obj, i + 1)
    log.send("ADDED", pvc("data-0"), 10)
    log.send("ADDED", pod("db-0", ("data-0",)), 11)
    log.send("MODIFIED", pod("db-0", ("data-0",), node_name="n1"), 12)  # confirmed before the PV's update
    assert log.engine.state.pvs["pv-a"].claim_ref is not None
    log.send("MODIFIED", pv("pv-a", "10Gi", on="n1", claim="default/data-0", phase="Bound"), 20)
    assert log.engine.state.pvs["pv-a"].claim_ref is not None  # as the API server says
    log.send("ADDED", pvc("data-1"), 30)
    assert log.send("ADDED", pod("db-1", ("data-1",)), 31)[0][1] == "Unschedulable"
