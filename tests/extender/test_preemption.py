"""Preemption in binder mode (`berth scorer --bind`) against the fake API server: the victims get
kube's DisruptionTarget condition and are deleted, the preemptor's status.nominatedNodeName is set,
and once the deletion is seen the preemptor is bound there."""

from __future__ import annotations

from datetime import timedelta

import pytest

from berth.adapters.bus.memory import MemoryBus
from berth.adapters.kube.client import KubeClient
from berth.adapters.store.memory import MemoryStore
from berth.core.api.watch import WatchEvent
from berth.core.config.kubeschedulerconfig import parse_config
from berth.core.pipeline.records import decode_record
from berth.core.pipeline.scorer import ScorerEngine
from berth.core.ports import DECISIONS
from berth_scorer.binder import Binder
from berth_scorer.service import Scorer
from tests.extender.conftest import T0, events
from tests.fakeapi import FakeAPI
from tests.plugins.defaultpreemption.helpers import knode, kpod

SLOT = {"cpu": "600m", "memory": "100Mi"}


@pytest.mark.asyncio
async def test_a_preemption_is_carried_out_through_the_api(api: FakeAPI, client: KubeClient) -> None:
    bus = MemoryBus()
    scorer = Scorer(ScorerEngine(parse_config(None)), bus, MemoryStore(), binder=Binder(client))
    objs = [
        knode("n1", {"cpu": "1", "memory": "1Gi"}),
        kpod("low", "n1", 0, SLOT),
        kpod("web", priority=1000, req=SLOT, schedulerName="berth"),
    ]
    for ev in events(*[api.add(o) for o in objs]):
        await scorer.handle(ev)

    writes = [(r.method, r.path) for r in api.requests if r.method != "GET"]
    assert writes == [
        ("PATCH", "/api/v1/namespaces/default/pods/low/status"),
        ("DELETE", "/api/v1/namespaces/default/pods/low"),
        ("PATCH", "/api/v1/namespaces/default/pods/web/status"),
    ]
    condition = next(r for r in api.requests if r.method == "PATCH").body["status"]["conditions"][0]
    assert {k: condition[k] for k in ("type", "status", "reason", "message")} == {
        "type": "DisruptionTarget",
        "status": "True",
        "reason": "PreemptionByScheduler",
        "message": "berth: preempting to accommodate a higher priority pod",
    }
    assert api.get("pods", "web", "default")["status"]["nominatedNodeName"] == "n1"
    published = [decode_record(m.value) for m in bus.topics[DECISIONS][0]]
    assert [(r.pod, r.nominated_node, r.victims) for r in published if r is not None] == [
        ("default/web", "n1", ["default/low"])
    ]

    # the watcher reports the victim gone: the preemptor is retried and bound on its node
    gone = WatchEvent("DELETED", kpod("low", "n1", 0, SLOT), T0 + timedelta(seconds=10), 10).decoded()
    await scorer.handle(gone)
    assert api.get("pods", "web", "default")["spec"]["nodeName"] == "n1"


@pytest.mark.parametrize(
    ("waiting_priority", "scheduler", "cleared"),
    [
        (500, "berth", True),  # lower than the preemptor's, nominated to its node: cleared first
        (1000, "berth", False),  # equal priority: kept (getLowerPriorityNominatedPods: strictly lower); web sees it
        (500, "default-scheduler", False),  # another scheduler's pod: not in this scheduler's nominator
    ],
)
@pytest.mark.asyncio
async def test_a_preemption_clears_lower_priority_nominations_on_its_node(
    api: FakeAPI, client: KubeClient, waiting_priority: int, scheduler: str, cleared: bool
) -> None:
    # kube's prepareCandidateAsync (issue 37): before the victims go, the pods nominated to the node with
    # a lower priority lose their status.nominatedNodeName. `waiting` fits nowhere (preemptionPolicy
    # Never keeps its nomination).
    bus = MemoryBus()
    scorer = Scorer(ScorerEngine(parse_config(None)), bus, MemoryStore(), binder=Binder(client))
    waiting = kpod(
        "waiting",
        priority=waiting_priority,
        req={"cpu": "100m", "memory": "100Mi"},
        schedulerName=scheduler,
        preemptionPolicy="Never",
        nodeSelector={"disk": "none"},
        status={"nominatedNodeName": "n1"},
    )
    objs = [
        knode("n1", {"cpu": "1", "memory": "1Gi"}),
        kpod("low", "n1", 0, SLOT),
        waiting,
        kpod("web", priority=1000, req=SLOT, schedulerName="berth"),
    ]
    for ev in events(*[api.add(o) for o in objs]):
        await scorer.handle(ev)
    writes = [(r.method, r.path.rsplit("/", 2)[-2:]) for r in api.requests if r.method != "GET"]
    clear = [("PATCH", ["waiting", "status"])] if cleared else []
    assert writes == [
        *clear,
        ("PATCH", ["low", "status"]),
        ("DELETE", ["pods", "low"]),
        ("PATCH", ["web", "status"]),
    ]
    assert api.get("pods", "waiting", "default")["status"].get("nominatedNodeName") == (None if cleared else "n1")
