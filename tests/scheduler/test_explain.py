"""berth explain's core: each plugin's constraint behind its reason, scores with weights, and
suggestions kept only when trying them on the state makes the node pass."""

from __future__ import annotations

from typing import Any

import pytest

from berth.core import framework as fwk
from berth.core.api.kinds import convert
from berth.core.cache.state import ClusterState
from berth.core.config.kubeschedulerconfig import parse_config
from berth.core.scheduler.explain import Explanation, explain
from berth.core.scheduler.schedule_one import Scheduler
from tests.builders import HOST, NOW, ZONE, node, pod, pv, pvc, storage_class


def setup(*raws: dict[str, Any]) -> Scheduler:
    """A scheduler of kube's default profile over a state holding raws (built first, as evaluate does)."""
    state = ClusterState()
    scheduler = Scheduler(parse_config(None).default.build(state))
    for raw in raws:
        state.apply(convert(raw))
    return scheduler


def run(scheduler: Scheduler, key: str) -> Explanation:
    return explain(scheduler, scheduler.state.pods[key], NOW)


def anti(key: str, **labels: str) -> dict[str, Any]:
    term = {"topologyKey": key, "labelSelector": {"matchLabels": labels}}
    return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}


def spread(**labels: str) -> list[dict[str, Any]]:
    return [
        {
            "maxSkew": 1,
            "topologyKey": ZONE,
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": labels},
        }
    ]


APP = {"metadata": {"labels": {"app": "a"}}}
TAINT = [{"key": "gpu", "value": "yes", "effect": "NoSchedule"}]

CASES = [
    (
        "resources: requested, used and allocatable",
        [node("n1", cpu="4"), pod("q", cpu="3", node_name="n1"), pod("p", cpu="2")],
        "n1",
        "NodeResourcesFit",
        "cpu: the pod requests 2; 3 of 4 allocatable is requested already, 1 free: 1 short",
        "n1 fits if it had 1 cpu more allocatable (or that much freed)",
    ),
    (
        "taints by key and effect",
        [node("n1", taints=TAINT), pod("p")],
        "n1",
        "TaintToleration",
        "untolerated taint(s): gpu=yes:NoSchedule",
        "n1 fits if the pod tolerated gpu=yes:NoSchedule",
    ),
    (
        "nodeSelector and node affinity terms",
        [node("n1", labels={"disk": "hdd"}), pod("p", nodeSelector={"disk": "ssd"})],
        "n1",
        "NodeAffinity",
        "nodeSelector disk=ssd (node: hdd)",
        None,
    ),
    (
        "the pod whose anti-affinity blocks the node",
        [node("n1"), pod("q", node_name="n1", **APP), pod("p", affinity=anti(HOST, app="a"))],
        "n1",
        "InterPodAffinity",
        "anti-affinity term 1 (topologyKey kubernetes.io/hostname, selector app=a): default/q in kubernetes.io/hostname=n1",
        "n1 fits if default/q leaves",
    ),
    (
        "an existing pod's anti-affinity",
        [
            node("n1"),
            pod("q", node_name="n1", affinity=anti(HOST, app="b")),
            pod("p", metadata={"labels": {"app": "b"}}),
        ],
        "n1",
        "InterPodAffinity",
        "default/q's anti-affinity (topologyKey kubernetes.io/hostname, selector app=b) matches this pod in kubernetes.io/hostname=n1",
        "n1 fits if default/q leaves",
    ),
    (
        "the spread domain counts",
        [
            node("n1", zone="z1"),
            node("n2", zone="z2", taints=TAINT),
            pod("q0", node_name="n1", **APP),
            pod("q1", node_name="n1", **APP),
            pod("p", topologySpreadConstraints=spread(app="a"), **APP),
        ],
        "n1",
        "PodTopologySpread",
        "topology.kubernetes.io/zone=z1 has 2 matching pod(s), the fewest is 0 (z2): skew 3 > 1",
        "n1 fits if default/q0, default/q1 leave",
    ),
    (
        "the claim and the PVs it was matched against",
        [
            storage_class(),
            node("n1"),
            pv("pv-1", "10Gi", on="n1"),
            pv("pv-2", "50Gi", on="n1", claim="x/y"),
            pvc("c", "20Gi"),
            pod("p", claims=("c",)),
        ],
        "n1",
        "VolumeBinding",
        "claim default/c wants 20Gi of class local: PVs of the class on the node: pv-1 10Gi (too small), pv-2 50Gi (bound to x/y)",
        "n1 fits if PV pv-1 had 20Gi (it has 10Gi)",
    ),
    (
        "a bound claim's PV node affinity",
        [
            storage_class(),
            node("n1"),
            node("n2"),
            pv("pv-2", "10Gi", on="n2", claim="default/c", phase="Bound"),
            pvc("c", "10Gi", volume="pv-2", bound=True),
            pod("p", claims=("c",)),
        ],
        "n1",
        "VolumeBinding",
        "claim default/c is bound to PV pv-2, whose node affinity excludes the node: term 1: kubernetes.io/hostname In [n2] (node: n1)",
        None,
    ),
]


@pytest.mark.parametrize(
    ("objects", "at", "plugin", "detail", "suggestion"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_each_plugin_names_its_constraint(
    objects: list[dict[str, Any]], at: str, plugin: str, detail: str, suggestion: str | None
) -> None:
    x = run(setup(*objects), "default/p")
    rejected = {r.node: r for r in x.rejected}
    rejection = next(p for p in rejected[at].plugins if p.plugin == plugin)
    assert rejection.reasons and set(rejection.reasons) <= set(x.decision.nodes[at].reasons)
    assert any(detail in d.text for d in rejection.details), [d.text for d in rejection.details]
    assert (
        (suggestion in [s.text for s in x.suggestions]) if suggestion else not any(s.node == at for s in x.suggestions)
    )


def test_the_explained_decision_is_the_schedulers() -> None:
    objects = [node("n1", cpu="4"), node("n2", taints=TAINT), pod("q", cpu="3", node_name="n1"), pod("p", cpu="2")]
    x = run(setup(*objects), "default/p")
    assert x.decision == setup(*objects).decide(convert(objects[-1]), NOW).decision


def test_every_suggestion_is_tried_on_the_state(monkeypatch: pytest.MonkeyPatch) -> None:
    """A plugin that expects the wrong change (a pod leaving that does not hold the node) gets no
    suggestion: the change is tried and the node still fails; the state is as it was after."""
    scheduler = setup(node("n1", taints=TAINT), pod("q", node_name="n1"), pod("p"))
    taints = next(p for p in scheduler.profile.filters if p.name == "TaintToleration")
    wrong = fwk.Why("node(s) had untolerated taint(s)", "x", {}, fwk.Change(leave=("default/q",)))
    monkeypatch.setattr(taints, "explain_filter", lambda cycle, slots: {int(s): [wrong] for s in slots})
    before = dict(scheduler.state.pods)
    x = run(scheduler, "default/p")
    assert x.suggestions == [] and x.notes
    assert scheduler.state.pods == before
    assert run(scheduler, "default/p").decision == x.decision


def test_scores_weights_shares_and_margin() -> None:
    x = run(setup(node("n1", cpu="4"), node("n2", cpu="8"), pod("p", cpu="2")), "default/p")
    weights = dict(parse_config(None).scores)
    assert x.decision.node == "n2" and [s.node for s in x.scores] == ["n2", "n1"]
    for s in x.scores:
        assert sum(p.weighted for p in s.parts) == s.total == x.decision.nodes[s.node].total
        assert all(p.weighted == p.score * weights[p.plugin] for p in s.parts)
    assert x.margin is not None and (x.margin.winner, x.margin.runner_up) == ("n2", "n1")
    assert x.margin.by == x.scores[0].total - x.scores[1].total == sum(x.margin.plugins.values()) > 0


def test_preemption_names_nomination_and_victims() -> None:
    low = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "low"}, "value": -5}
    x = run(
        setup(low, node("n1", cpu="4"), pod("q", cpu="3", node_name="n1", priorityClassName="low"), pod("p", cpu="2")),
        "default/p",
    )
    assert x.preemption is not None
    assert (x.preemption.nominated_node, x.preemption.victims) == ("n1", ["default/q"])
