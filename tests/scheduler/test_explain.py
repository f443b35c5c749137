"""berth explain's core: each plugin's constraint behind its reason, scores with weights, and
suggestions kept only when trying them on the state makes the node pass."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from berth.core import framework as fwk
from berth.core.api.kinds import convert
from berth.core.cache.state import ClusterState
from berth.core.config.kubeschedulerconfig import parse_config
from berth.core.scheduler.explain import Explanation, Suggestion, explain
from berth.core.scheduler.schedule_one import Scheduler
from tests.builders import HOST, NOW, ZONE, csi_node, node, pod, pv, pvc, storage_class, volume_attachment


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
EBS = "ebs.csi.aws.com"


def ports(port: int, ip: str = "") -> list[dict[str, Any]]:
    """Containers asking for a host port (on ip; none: 0.0.0.0)."""
    mapping = {"containerPort": 80, "hostPort": port, **({"hostIP": ip} if ip else {})}
    return [{"name": "c", "image": "x", "ports": [mapping], "resources": {"requests": {"cpu": "100m"}}}]


def ebs_pv(name: str, claim: str, **extra: Any) -> dict[str, Any]:
    """A bound EBS CSI PV of class ebs, handle = its name."""
    spec = {"csi": {"driver": EBS, "volumeHandle": name}}
    return pv(name, "10Gi", cls="ebs", phase="Bound", claim=claim, spec=spec, **extra)


def ebs_pvc(name: str, volume: str, **extra: Any) -> dict[str, Any]:
    return pvc(name, cls="ebs", volume=volume, bound=True, **extra)


EBS_CLASS = storage_class("ebs", provisioner=EBS, mode="Immediate")
RWOP = ("ReadWriteOncePod",)
HIGH = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"}, "value": 100}
BY_NAME = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]
        }
    }
}

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
    (
        "the pod holding the host port",
        [node("n1"), pod("q", node_name="n1", containers=ports(8080)), pod("p", containers=ports(8080))],
        "n1",
        "NodePorts",
        "host port TCP/8080 on 0.0.0.0 is held by default/q (TCP/8080 on 0.0.0.0)",
        "n1 fits if default/q leaves",
    ),
    (
        "a host port on one address against 0.0.0.0",
        [
            node("n1"),
            pod("q", node_name="n1", containers=ports(53, "10.0.0.1")),
            pod("o", node_name="n1", containers=ports(54)),
            pod("p", containers=ports(53)),
        ],
        "n1",
        "NodePorts",
        "host port TCP/53 on 0.0.0.0 is held by default/q (TCP/53 on 10.0.0.1)",
        "n1 fits if default/q leaves",
    ),
    (
        "the PV's zone against the node's",
        [
            EBS_CLASS,
            node("n1", zone="z1", cpu="1"),
            node("n2", zone="z2"),
            ebs_pv("pv-z", "default/c", metadata={"labels": {ZONE: "z1"}}),
            ebs_pvc("c", "pv-z"),
            pod("p", claims=("c",), cpu="2"),
        ],
        "n2",
        "VolumeZone",
        "claim default/c is bound to PV pv-z, labelled topology.kubernetes.io/zone=z1 (node: z2)",
        "n2 fits if PV pv-z were in the node's topology (topology.kubernetes.io/zone=z2), or the claim bound to a PV there",
    ),
    (
        "a node without the PV's region label",
        [
            EBS_CLASS,
            node("n1", zone="z1", labels={"topology.kubernetes.io/region": "r1"}),
            node("n2", zone="z1"),
            ebs_pv("pv-z", "default/c", metadata={"labels": {"topology.kubernetes.io/region": "r2"}}),
            ebs_pvc("c", "pv-z"),
            pod("p", claims=("c",)),
        ],
        "n1",
        "VolumeZone",
        "labelled topology.kubernetes.io/region=r2 (node: r1)",
        "n1 fits if PV pv-z were in the node's topology (topology.kubernetes.io/region=r1), or the claim bound to a PV there",
    ),
    (
        "the pod using the ReadWriteOncePod claim",
        [
            EBS_CLASS,
            node("n1"),
            node("n2"),
            ebs_pv("pv-r", "default/c", modes=RWOP),
            ebs_pvc("c", "pv-r", modes=RWOP),
            pod("q", claims=("c",), node_name="n1"),
            pod("p", claims=("c",)),
        ],
        "n2",
        "VolumeRestrictions",
        "claim default/c (ReadWriteOncePod) is in use by default/q on n1",
        "n2 fits if default/q leaves",
    ),
    (
        "the pod whose inline disk clashes",
        [
            node("n1"),
            pod("q", node_name="n1", volumes=[{"name": "d", "gcePersistentDisk": {"pdName": "disk-1"}}]),
            pod("p", volumes=[{"name": "d", "gcePersistentDisk": {"pdName": "disk-1", "readOnly": True}}]),
        ],
        "n1",
        "VolumeRestrictions",
        "gce disk disk-1 (read-only) clashes with default/q's gce disk disk-1",
        "n1 fits if default/q leaves",
    ),
    (
        "volumes attached against the driver's limit",
        [
            EBS_CLASS,
            node("n1"),
            csi_node("n1", **{EBS: 2}),
            *[ebs_pv(f"v{i}", f"default/c{i}") for i in (1, 2, 3)],
            *[ebs_pvc(f"c{i}", f"v{i}") for i in (1, 2, 3)],
            volume_attachment("va-2", "n1", EBS, "v2"),
            pod("q", claims=("c1",), node_name="n1"),
            pod("p", claims=("c3",)),
        ],
        "n1",
        "NodeVolumeLimits",
        "ebs.csi.aws.com: 2 of 2 volume(s) attached (1 by pods on the node, 1 by VolumeAttachments only), the pod brings 1 new: 1 over",
        "n1 fits if default/q leaves",
    ),
    (
        "a cordoned node",
        [node("n1", unschedulable=True), pod("p")],
        "n1",
        "NodeUnschedulable",
        "the node is cordoned (spec.unschedulable)",
        None,
    ),
    (
        "the named pods whose leaving frees the cpu",
        [
            node("n1", cpu="4"),
            *[pod(f"q{i}", cpu=c, node_name="n1") for i, c in enumerate(("1", "1", "1500m"))],
            pod("p", cpu="3"),
        ],
        "n1",
        "NodeResourcesFit",
        "cpu: the pod requests 3; 3500m of 4 allocatable is requested already, 500m free: 2500m short",
        "n1 fits if default/q1, default/q2 leave",
    ),
    (
        "the smallest pod that frees enough",
        [
            node("n1", cpu="4"),
            *[pod(f"q{i}", cpu=c, node_name="n1") for i, c in enumerate(("2", "1500m", "500m"))],
            pod("p", cpu="1"),
        ],
        "n1",
        "NodeResourcesFit",
        "cpu: the pod requests 1; 4 of 4 allocatable is requested already, 0 free: 1 short",
        "n1 fits if default/q1 leaves",
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


def applied(objects: list[dict[str, Any]], s: Suggestion) -> list[dict[str, Any]]:
    """The raw objects with a suggestion's change made to them (pods gone, allocatable raised, PVs
    resized or relabelled, the pod's tolerations), for a fresh scheduler to decide again."""
    out = []
    for raw in copy.deepcopy(objects):
        meta, kind = raw["metadata"], raw["kind"]
        if kind == "Pod" and f"{meta['namespace']}/{meta['name']}" in s.leave:
            continue
        if kind == "Node" and meta["name"] == s.node:
            for k, v in s.more.items():
                have = convert(raw).allocatable.get(k, 0)
                raw["status"]["allocatable"][k] = f"{have + v}m" if k == "cpu" else str(have + v)
        if kind == "PersistentVolume" and meta["name"] in s.relabel:
            meta.setdefault("labels", {}).update(s.relabel[meta["name"]])
        if kind == "PersistentVolume" and meta["name"] in s.resize:
            raw["spec"]["capacity"]["storage"] = s.resize[meta["name"]]
        if kind == "Pod" and meta["name"] == "p" and s.tolerate:
            raw["spec"]["tolerations"] = [
                {"key": k, "value": v.partition(":")[0], "effect": v.partition(":")[2]}
                for k, _, v in (t.partition("=") for t in s.tolerate)
            ]
        out.append(raw)
    return out


@pytest.mark.parametrize(
    ("objects", "suggestion"), [(c[1], c[5]) for c in CASES if c[5]], ids=[c[0] for c in CASES if c[5]]
)
def test_each_suggestion_fits_when_made(objects: list[dict[str, Any]], suggestion: str) -> None:
    """The suggested change made to the objects themselves, decided again from scratch: the node is feasible."""
    x = run(setup(*objects), "default/p")
    s = next(s for s in x.suggestions if s.text == suggestion)
    changed = applied(objects, s)
    scheduler = setup(*changed)
    decision = scheduler.decide(scheduler.state.pods["default/p"], NOW).decision
    assert decision.nodes[s.node].feasible and not x.decision.nodes[s.node].feasible


def test_every_filter_of_the_default_profile_explains() -> None:
    profile = parse_config(None).default.build(ClusterState())
    assert profile.filters and all(isinstance(f, fwk.ExplainsFilter) for f in profile.filters), [
        f.name for f in profile.filters if not isinstance(f, fwk.ExplainsFilter)
    ]


def test_at_most_five_suggestions_closest_node_first_both_kinds() -> None:
    """Six nodes short of cpu by different amounts: five suggestions, the closest node's first, and for
    each node its more-allocatable one followed by the pods whose leaving frees enough."""
    objects: list[dict[str, Any]] = []
    for i in range(6):
        objects += [node(f"n{i}", cpu="4"), pod(f"q{i}", cpu=f"{3000 + 100 * (5 - i)}m", node_name=f"n{i}")]
    x = run(setup(*objects, pod("p", cpu="1500m")), "default/p")
    assert [(s.node, bool(s.more), s.leave) for s in x.suggestions] == [
        ("n5", True, []),
        ("n5", False, ["default/q5"]),
        ("n4", True, []),
        ("n4", False, ["default/q4"]),
        ("n3", True, []),
    ]


def test_a_node_failing_only_with_nominated_pods_names_them() -> None:
    objects = [
        HIGH,
        node("n1", cpu="4"),
        node("n2", cpu="1"),
        pod("r", cpu="3", priorityClassName="high", status={"phase": "Pending", "nominatedNodeName": "n1"}),
        pod("p", cpu="2"),
    ]
    x = run(setup(*objects), "default/p")
    n1 = next(r for r in x.rejected if r.node == "n1")
    assert n1.nominated == ["default/r (priority 100)"]
    fit = n1.plugins[0]
    assert fit.plugin == "NodeResourcesFit" and fit.reasons == ["Insufficient cpu"]
    assert "the pods nominated to it" in fit.details[0].text and "default/r (priority 100)" in fit.details[0].text
    assert "3 of 4 allocatable is requested already" in fit.details[1].text
    assert not any(s.node == "n1" for s in x.suggestions) and any("nominated" in n for n in x.notes)
    # without the nomination the node fits: only the nominated pod stands in the way
    alone = run(setup(*objects[:2], objects[4]), "default/p")
    assert alone.decision.node == "n1"


def test_a_node_outside_the_prefilter_node_set() -> None:
    """NodeAffinity's PreFilter names n1 only (metadata.name In): n2 is outside its node set, and its
    Filter rejects n2 too."""
    x = run(setup(node("n1", cpu="1"), node("n2"), pod("p", cpu="2", affinity=BY_NAME)), "default/p")
    n2 = next(r for r in x.rejected if r.node == "n2")
    outside, fails = n2.plugins
    assert (outside.plugin, outside.reasons) == ("NodeAffinity", ["node(s) didn't satisfy plugin(s) [NodeAffinity]"])
    assert outside.details[0].text == (
        "the node is outside NodeAffinity's PreFilter node set (n1): kube runs no filter on it; every required "
        "node affinity term names its nodes by metadata.name (term 1: metadata.name In [n1])"
    )
    assert fails.reasons == ["node(s) didn't match Pod's node affinity/selector"]
    assert [s.node for s in x.suggestions] == ["n1"]


def test_a_prefilter_that_turns_the_pod_away_says_why() -> None:
    claims = [{"name": "gpu", "resourceClaimName": "gpu-claim"}]
    x = run(setup(node("n1"), pod("p", resourceClaims=claims)), "default/p")
    assert x.decision.status == "Error"
    assert x.notes == [
        "DynamicResources's PreFilter turned the pod away before any node was looked at: "
        "dynamic resource allocation is not modelled: the pod references ResourceClaims (gpu)"
    ]
