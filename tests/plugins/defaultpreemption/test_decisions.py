"""Preemption in a decision (the contract: status, nominatedNode, victims, kube's message) and in a
run of pods (`berth evaluate`: a later pod sees the nominated pod placed and the victims gone)."""

from __future__ import annotations

import msgspec

from berth.core.api.kinds import convert
from berth.core.cache.state import ClusterState
from berth.core.config.kubeschedulerconfig import parse_config
from berth.core.scheduler.schedule_one import Scheduler
from tests.builders import NOW
from tests.plugins.defaultpreemption.helpers import HIGH, LOW, MID, knode, kpod, pdb, priority_class


def scheduler(*raws: dict[str, object]) -> Scheduler:
    state = ClusterState()
    s = Scheduler(parse_config(None).build(state))  # berth's default profile, DefaultPreemption on
    for raw in raws:
        state.apply(convert(raw))
    return s


def decide(s: Scheduler, name: str) -> dict[str, object]:
    out: dict[str, object] = msgspec.to_builtins(s.decide(s.state.pods[f"default/{name}"], NOW).decision)
    out.pop("nodes")
    return out


FULL = {"cpu": "1", "memory": "1Gi"}
HALF = {"cpu": "600m", "memory": "100Mi"}


def test_a_preempting_decision_names_its_node_and_victims() -> None:
    s = scheduler(knode("n1", FULL), kpod("low", "n1", LOW, HALF), kpod("web", priority=HIGH, req=HALF))
    assert decide(s, "web") == {
        "pod": "default/web",
        "status": "Unschedulable",
        "node": None,
        "message": "0/1 nodes are available: 1 Insufficient cpu.",  # kube: Success adds no PostFilter message
        "volumeBindings": [],
        "nominatedNode": "n1",
        "victims": ["default/low"],
    }


def test_when_preemption_cannot_help_the_fields_are_absent_and_the_message_says_why() -> None:
    # kube FitError appends " <PostFilter message>" (types.go, FitError.Error)
    s = scheduler(knode("n1", FULL), kpod("peer", "n1", HIGH, HALF), kpod("web", priority=HIGH, req=HALF))
    assert decide(s, "web") == {
        "pod": "default/web",
        "status": "Unschedulable",
        "node": None,
        "message": "0/1 nodes are available: 1 Insufficient cpu. no new claims to deallocate, "
        "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.",
        "volumeBindings": [],
    }


def test_unresolvable_nodes_are_not_helped() -> None:
    s = scheduler(
        knode("n1", FULL) | {"spec": {"unschedulable": True}},
        kpod("low", "n1", LOW, HALF),
        kpod("web", priority=HIGH, req=HALF),
    )
    message = decide(s, "web")["message"]
    assert isinstance(message, str)
    assert message.endswith(
        "were unschedulable. no new claims to deallocate, preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
    )


def test_priority_comes_from_the_priority_class_else_the_global_default() -> None:
    s = scheduler(
        priority_class("batch", 10, default=True),
        priority_class("serving", 1000),
        knode("n1", FULL),
        kpod("job", "n1", req=HALF),  # no spec.priority: the global default, 10
        kpod("web", req=HALF, priorityClassName="serving"),
        kpod("other-job", req=HALF),
    )
    assert decide(s, "web")["victims"] == ["default/job"]
    assert "victims" not in decide(s, "other-job")  # 10 does not preempt 10


def test_a_pod_that_never_preempts_says_so() -> None:
    s = scheduler(
        priority_class("polite", 1000, policy="Never"),
        knode("n1", FULL),
        kpod("low", "n1", LOW, HALF),
        kpod("web", req=HALF, priorityClassName="polite"),
    )
    got = decide(s, "web")
    assert (
        got["message"]
        == "0/1 nodes are available: 1 Insufficient cpu. no new claims to deallocate, preemption: not eligible due to preemptionPolicy=Never."
    )
    assert "nominatedNode" not in got


def test_pdb_protected_pods_are_spared_while_unprotected_victims_exist() -> None:
    protected = {"app": "db"}
    s = scheduler(
        knode("n1", FULL),
        knode("n2", FULL),
        kpod("db", "n1", LOW, HALF, labels=protected),
        kpod("batch", "n2", MID, HALF),
        pdb(protected, allowed=0),
        kpod("web", priority=HIGH, req=HALF),
    )
    # n1's victim would violate its budget: n2 wins although its victim has the higher priority
    assert decide(s, "web")["nominatedNode"] == "n2"


def test_a_run_sees_the_nominated_pod_placed_and_the_victims_gone() -> None:
    s = scheduler(
        knode("n1", FULL),
        knode("n2", FULL),
        kpod("low1", "n1", LOW, HALF),
        kpod("low2", "n2", MID, HALF),
        kpod("web1", priority=HIGH, req=HALF, metadata={"creationTimestamp": "2026-11-01T10:00:00Z"}),
        kpod("web2", priority=HIGH, req=HALF, metadata={"creationTimestamp": "2026-11-01T10:00:01Z"}),
        kpod("web3", priority=HIGH, req=HALF, metadata={"creationTimestamp": "2026-11-01T10:00:02Z"}),
    )
    got = s.run(s.state.pending_pods(), NOW)
    assert [(d.pod, d.nominated_node, d.victims) for d in got] == [
        ("default/web1", "n1", ["default/low1"]),  # the lowest victim priority
        ("default/web2", "n2", ["default/low2"]),  # n1 now holds web1
        ("default/web3", msgspec.UNSET, msgspec.UNSET),  # nothing lower is left
    ]
    assert "default/low1" not in s.state.pods and "default/low2" not in s.state.pods
    assert s.state.reserved("default/web1") is None  # nominated, not reserved: kube's nominator
    assert [p.key for p in s.nominator.for_pod(s.state.pods["default/web3"])["n1"]] == ["default/web1"]
