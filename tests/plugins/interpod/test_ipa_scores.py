"""InterPodAffinity's Score against upstream's tables (interpodaffinity scoring_test.go TestPreferredAffinity
and TestPreferredAffinityWithHardPodAffinitySymmetricWeight): normalised scores per node, or None where
PreScore skips. Upstream's pods without a namespace are in "default" here. Not carried over: "invalid
Affinity fails PreScore" and "invalid AntiAffinity fails PreScore" (berth reads a selector that does not
parse as matching no pod, docs/plugins.md)."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from berth.core.plugins import interpodaffinity
from berth.core.plugins.interpodaffinity import Args
from tests.plugins.interpod.builders import affinity, namespace
from tests.plugins.interpod.harness import knode, kpod, scores

S1, S2 = {"security": "S1"}, {"security": "S2"}
CHINA, INDIA, AZ1, AZ2 = {"region": "China"}, {"region": "India"}, {"az": "az1"}, {"az": "az2"}
NAMESPACES = [
    namespace("subteam1.team1", team="team1"),
    namespace("subteam2.team1", team="team1"),
    namespace("subteam1.team2", team="team2"),
    namespace("subteam2.team2", team="team2"),
]


def req(key: str, op: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": op, **({"values": list(values)} if values else {})}


def term(key: str, *exprs: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"labelSelector": {"matchExpressions": list(exprs)}, "topologyKey": key, **extra}


IN_S1, IN_S2 = req("security", "In", "S1"), req("security", "In", "S2")
TEAM1 = {"namespaces": ["subteam2.team2"], "namespaceSelector": {"matchExpressions": [req("team", "In", "team1")]}}
STAY_S1_REGION = affinity(preferred=[(5, term("region", IN_S1))])
STAY_S2_REGION = affinity(preferred=[(6, term("region", IN_S2))])
AFFINITY3 = affinity(
    preferred=[
        (8, term("region", req("security", "NotIn", "S1"), IN_S2)),
        (2, term("region", req("security", "Exists"), req("wrongkey", "DoesNotExist"))),
    ]
)
HARD = affinity(
    required=[
        term("region", req("security", "In", "S1", "value2")),
        term("region", req("security", "Exists"), req("wrongkey", "DoesNotExist")),
    ]
)
AWAY_S1_AZ = affinity(preferred_anti=[(5, term("az", IN_S1))])
AWAY_S2_AZ = affinity(preferred_anti=[(5, term("az", IN_S2))])
STAY_S1_AWAY_S2 = affinity(preferred=[(8, term("region", IN_S1))], preferred_anti=[(5, term("az", IN_S2))])
AFFINITY_NS = affinity(preferred=[(5, term("region", IN_S1, **TEAM1))])
ANTI_NS = affinity(preferred_anti=[(5, term("region", IN_S1, **TEAM1))])

_names = itertools.count()


def on(node: str, labels: dict[str, str] | None = None, aff: dict[str, Any] | None = None, ns: str = "default") -> Any:
    spec = {"affinity": aff} if aff else {}
    return kpod(f"e{next(_names)}", node=node, ns=ns, labels=labels, **spec)


def nodes(*labels: dict[str, str]) -> list[dict[str, Any]]:
    return [knode(f"node{i}", **lab) for i, lab in enumerate(labels, 1)]


def incoming(labels: dict[str, str] | None = None, aff: dict[str, Any] | None = None, ns: str = "default") -> Any:
    spec = {"affinity": aff} if aff else {}
    return kpod("p", ns=ns, labels=labels, **spec)


def want(*scores_: int) -> dict[str, int]:
    return {f"node{i}": s for i, s in enumerate(scores_, 1)}


PA = "TestPreferredAffinity/"
# (upstream case, the pod, existing pods, nodes, want (None: PreScore Skip), ignorePreferredTermsOfExistingPods)
CASES: list[tuple[str, Any, list[Any], list[Any], dict[str, int] | None, bool]] = [
    (PA + "all nodes are same priority as Affinity is nil", incoming(S1), [], nodes(CHINA, INDIA, AZ1), None, False),
    (
        PA + "Affinity: pod that matches topology key & pods in nodes will get high score comparing to others"
        "which doesn't match either pods in nodes or in topology key",
        incoming(S1, STAY_S1_REGION),
        [on("node1", S1), on("node2", S2), on("node3", S1)],
        nodes(CHINA, INDIA, AZ1),
        want(100, 0, 0),
        False,
    ),
    (
        PA + "All the nodes that have the same topology key & label value with one of them has an existing pod that "
        "match the affinity rules, have the same score",
        incoming(None, STAY_S1_REGION),
        [on("node1", S1)],
        nodes(CHINA, CHINA | AZ1, INDIA),
        want(100, 100, 0),
        False,
    ),
    (
        PA + "Affinity: nodes in one region has more matching pods comparing to other region, so the region which has "
        "more matches will get high score",
        incoming(S1, STAY_S2_REGION),
        [on(n, S2) for n in ("node1", "node1", "node2", "node3", "node4", "node5")],
        nodes(CHINA, INDIA, CHINA, CHINA, INDIA),
        want(100, 0, 100, 100, 0),
        False,
    ),
    (
        PA + "Affinity: different Label operators and values for pod affinity scheduling preference, including some "
        "match failures ",
        incoming(S1, AFFINITY3),
        [on("node1", S1), on("node2", S2), on("node3", S1)],
        nodes(CHINA, INDIA, AZ1),
        want(20, 100, 0),
        False,
    ),
    (
        PA + "Affinity symmetry: considered only the preferredDuringSchedulingIgnoredDuringExecution in pod affinity "
        "symmetry",
        incoming(S2),
        [on("node1", S1, STAY_S1_REGION), on("node2", S2, STAY_S2_REGION)],
        nodes(CHINA, INDIA, AZ1),
        want(0, 100, 0),
        False,
    ),
    (
        PA + "Affinity symmetry with namespace selector",
        incoming(S1, ns="subteam1.team1"),
        [on("node1", S1, AFFINITY_NS), on("node2", S2, STAY_S2_REGION)],
        nodes(CHINA, INDIA, AZ1),
        want(100, 0, 0),
        False,
    ),
    (
        PA + "AntiAffinity symmetry with namespace selector",
        incoming(S1, ns="subteam1.team1"),
        [on("node1", S1, ANTI_NS), on("node2", S2, STAY_S2_REGION)],
        nodes(CHINA, INDIA, AZ1),
        want(0, 100, 100),
        False,
    ),
    (
        PA + "Affinity symmetry: considered RequiredDuringSchedulingIgnoredDuringExecution in pod affinity symmetry",
        incoming(S1),
        [on("node1", S1, HARD), on("node2", S2, HARD)],
        nodes(CHINA, INDIA, AZ1),
        want(100, 100, 0),
        False,
    ),
    (
        PA + "Anti Affinity: pod that does not match existing pods in node will get high score ",
        incoming(S1, AWAY_S1_AZ),
        [on("node1", S1), on("node2", S2)],
        nodes(AZ1, CHINA),
        want(0, 100),
        False,
    ),
    (
        PA + "Anti Affinity: pod that does not match topology key & match the pods in nodes will get higher score "
        "comparing to others ",
        incoming(S1, AWAY_S1_AZ),
        [on("node1", S1), on("node2", S1)],
        nodes(AZ1, CHINA),
        want(0, 100),
        False,
    ),
    (
        PA + "Anti Affinity: one node has more matching pods comparing to other node, so the node which has more "
        "unmatches will get high score",
        incoming(S1, AWAY_S1_AZ),
        [on("node1", S1), on("node1", S1), on("node2", S2)],
        nodes(AZ1, INDIA),
        want(0, 100),
        False,
    ),
    (
        PA + "Anti Affinity symmetry: the existing pods in node which has anti affinity match will get high score",
        incoming(S2),
        [on("node1", S1, AWAY_S2_AZ), on("node2", S2, AWAY_S1_AZ)],
        nodes(AZ1, AZ2),
        want(0, 100),
        False,
    ),
    (
        PA + "Affinity and Anti Affinity: considered only preferredDuringSchedulingIgnoredDuringExecution in both pod "
        "affinity & anti affinity",
        incoming(S1, STAY_S1_AWAY_S2),
        [on("node1", S1), on("node2", S1)],
        nodes(CHINA, AZ1),
        want(100, 0),
        False,
    ),
    (
        PA + "Affinity and Anti Affinity: considering both affinity and anti-affinity, the pod to schedule and "
        "existing pods have the same labels",
        incoming(S1, STAY_S1_AWAY_S2),
        [on(n, S1) for n in ("node1", "node1", "node2", "node3", "node3", "node4", "node5")],
        nodes(CHINA | AZ1, INDIA, CHINA, CHINA, INDIA),
        want(100, 0, 100, 100, 0),
        False,
    ),
    (
        PA + "Affinity and Anti Affinity and symmetry: considered only preferredDuringSchedulingIgnoredDuringExecution "
        "in both pod affinity & anti affinity & symmetry",
        incoming(S1, STAY_S1_AWAY_S2),
        [on("node1", S1), on("node2", S2), on("node3", None, STAY_S1_AWAY_S2), on("node4", None, AWAY_S1_AZ)],
        nodes(CHINA, AZ1, INDIA, AZ2),
        want(100, 0, 100, 0),
        False,
    ),
    (
        PA + "Avoid panic when partial nodes in a topology don't have pods with affinity",
        incoming(S1),
        [on("node1", S1), on("node2", None, STAY_S1_AWAY_S2)],
        nodes(CHINA, CHINA),
        want(0, 0),
        False,
    ),
    (
        PA + "Affinity with pods matching NamespaceSelector",
        incoming(S1, AFFINITY_NS, ns="subteam1.team1"),
        [
            on("node1", S1, ns="subteam1.team1"),
            on("node1", S1, ns="subteam1.team1"),
            on("node1", S1, ns="subteam1.team2"),
            on("node2", S1, ns="subteam2.team1"),
        ],
        nodes(CHINA, INDIA),
        want(100, 0),
        False,
    ),
    (
        PA + "Affinity with pods matching both NamespaceSelector and Namespaces fields",
        incoming(S1, AFFINITY_NS, ns="subteam1.team1"),
        [
            on("node1", S1, ns="subteam1.team1"),
            on("node1", S1, ns="subteam1.team1"),
            on("node1", S1, ns="subteam2.team2"),
            on("node2", S1, ns="subteam2.team1"),
        ],
        nodes(CHINA, INDIA),
        want(100, 0),
        False,
    ),
    (
        PA + "Affinity with pods matching NamespaceSelector (the anti-affinity case of that name)",
        incoming(S1, ANTI_NS, ns="subteam1.team1"),
        [
            on("node1", S1, ns="subteam1.team1"),
            on("node1", S1, ns="subteam1.team1"),
            on("node1", S1, ns="subteam1.team2"),
            on("node2", S1, ns="subteam2.team1"),
        ],
        nodes(CHINA, INDIA),
        want(0, 100),
        False,
    ),
    (
        PA + "Affinity with pods matching both NamespaceSelector and Namespaces fields (the anti-affinity case)",
        incoming(S1, ANTI_NS, ns="subteam1.team1"),
        [
            on("node1", S1, ns="subteam1.team1"),
            on("node1", S1, ns="subteam1.team1"),
            on("node1", S1, ns="subteam2.team2"),
            on("node2", S1, ns="subteam2.team1"),
        ],
        nodes(CHINA, INDIA),
        want(0, 100),
        False,
    ),
    (
        PA + "Ignore preferred terms of existing pods",
        incoming(S2),
        [on("node1", S1, STAY_S1_AWAY_S2), on("node2", S2, STAY_S2_REGION)],
        nodes(CHINA, INDIA),
        None,
        True,
    ),
    (
        PA + "Do not ignore preferred terms of existing pods",
        incoming(S2),
        [on("node1", S1, STAY_S1_AWAY_S2), on("node2", S2, STAY_S2_REGION)],
        nodes(CHINA, INDIA),
        want(0, 100),
        False,
    ),
    (PA + "No nodes to score", incoming(S2), [], [], None, False),
]


@pytest.mark.parametrize(
    ("pod", "pods", "nodes_", "want_", "ignore"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_preferred_affinity_as_upstream(
    pod: Any, pods: list[Any], nodes_: list[Any], want_: dict[str, int] | None, ignore: bool
) -> None:
    args = Args(ignore_preferred_terms_of_existing_pods=ignore)
    assert scores(interpodaffinity, pod, [*NAMESPACES, *nodes_, *pods], args=args) == want_


HARD_SERVICE = affinity(
    required=[
        term(
            "region",
            req("service", "In", "S1"),
            namespaces=["default", "subteam2.team2"],
            namespaceSelector={"matchExpressions": [req("team", "In", "team1")]},
        )
    ]
)
SERVICE_S1 = {"service": "S1"}
SYM = "TestPreferredAffinityWithHardPodAffinitySymmetricWeight/"
# (upstream case, the incoming pod's namespace, hardPodAffinityWeight, want (None: PreScore Skip))
SYMMETRIC: list[tuple[str, str, int, dict[str, int] | None]] = [
    (SYM + "with default weight", "default", 1, want(100, 100, 0)),
    (SYM + "with zero weight", "default", 0, None),
    (SYM + "with no matching namespace", "subteam1.team2", 1, None),
    (SYM + "with matching NamespaceSelector", "subteam1.team1", 1, want(100, 100, 0)),
    (SYM + "with matching Namespaces", "subteam2.team2", 1, want(100, 100, 0)),
]


@pytest.mark.parametrize(("ns", "weight", "want_"), [s[1:] for s in SYMMETRIC], ids=[s[0] for s in SYMMETRIC])
def test_hard_pod_affinity_symmetric_weight_as_upstream(ns: str, weight: int, want_: dict[str, int] | None) -> None:
    pods = [on("node1", None, HARD_SERVICE), on("node2", None, HARD_SERVICE)]
    objs = [*NAMESPACES, *nodes(CHINA, INDIA, AZ1), *pods]
    got = scores(interpodaffinity, incoming(SERVICE_S1, ns=ns), objs, args=Args(hard_pod_affinity_weight=weight))
    assert got == want_
