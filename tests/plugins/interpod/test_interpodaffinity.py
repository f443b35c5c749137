"""InterPodAffinity against upstream's own unit tests (pkg/scheduler/framework/plugins/interpodaffinity):
each case names its upstream test and case; nodes, pods and expected statuses are upstream's."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from berth.core.api.kinds import convert
from berth.core.cache.state import ClusterState, Reservation
from berth.core.config.kubeschedulerconfig import parse_config
from berth.core.errors import ConfigError
from berth.core.framework.cycle import Cycle
from berth.core.plugins import interpodaffinity
from berth.core.plugins.interpodaffinity import Args
from berth.core.scheduler.schedule_one import Scheduler
from tests.builders import NOW
from tests.plugins.interpod.builders import affinity, namespace, profile
from tests.plugins.interpod.harness import filter_codes, knode, kpod, scores, setup

OK = "SUCCESS"
AFF = "UNRESOLVABLE: node(s) didn't match pod affinity rules"
ANTI = "UNSCHEDULABLE: node(s) didn't match pod anti-affinity rules"
EXISTING = "UNSCHEDULABLE: node(s) didn't satisfy existing pods anti-affinity rules"
SCAN = {"service": "securityscan"}
S1 = {"security": "S1"}
MACHINE1 = knode("machine1", region="r1", zone="z11")


def expr(key: str, op: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": op, **({"values": list(values)} if values else {})}


def t(key: str, *exprs: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """A term over matchExpressions; key "" leaves topologyKey out, as some upstream cases do."""
    out: dict[str, Any] = {"labelSelector": {"matchExpressions": list(exprs)}, **extra}
    if key:
        out["topologyKey"] = key
    return out


IN_SCAN = expr("service", "In", "securityscan", "value2")
IN_ANTIVIRUS = expr("service", "In", "antivirusscan", "value2")
TEAM1 = {"matchExpressions": [expr("team", "In", "team1")]}
# scoring_test.go's namespaces, which upstream's filter tables also load
NAMESPACES = [
    namespace("subteam1.team1", team="team1"),
    namespace("subteam2.team1", team="team1"),
    namespace("subteam1.team2", team="team2"),
    namespace("subteam2.team2", team="team2"),
]


def incoming(labels: dict[str, str], **aff: Any) -> dict[str, Any]:
    return kpod("p", labels=labels, affinity=affinity(**aff)) if aff else kpod("p", labels=labels)


_SERIAL = itertools.count()


def existing(labels: dict[str, str], node: str = "machine1", ns: str = "default", **aff: Any) -> dict[str, Any]:
    """An existing pod; upstream leaves most unnamed, so each gets a serial name."""
    name = f"e{next(_SERIAL)}-{node.lower()}"
    spec = {"affinity": affinity(**aff)} if aff else {}
    return kpod(name, node=node, ns=ns, labels=labels, **spec)


SINGLE = "TestRequiredAffinitySingleNode/"
BAD = "{{.bad-value.}}"
PARSING = (
    "UNRESOLVABLE: parsing pod: requiredAffinityTerms: values[0][service]: Invalid value: "
    '"{{.bad-value.}}": a valid label must be an empty string or consist of alphanumeric characters, '
    "'-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value', "
    " or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)
# (upstream test/case, incoming pod, existing pods, want on machine1)
FILTER: list[tuple[str, dict[str, Any], list[dict[str, Any]], str]] = [
    (
        SINGLE + "A pod that has no required pod affinity scheduling rules can schedule onto a node with no existing"
        " pods",
        kpod("p"),
        [],
        OK,
    ),
    (
        SINGLE + "satisfies with requiredDuringSchedulingIgnoredDuringExecution in PodAffinity using In operator that"
        " matches the existing pod",
        incoming(S1, required=[t("region", IN_SCAN)]),
        [existing(SCAN)],
        OK,
    ),
    (
        SINGLE + "satisfies the pod with requiredDuringSchedulingIgnoredDuringExecution in PodAffinity using not in"
        " operator in labelSelector that matches the existing pod",
        incoming(S1, required=[t("region", expr("service", "NotIn", "securityscan3", "value3"))]),
        [existing(SCAN)],
        OK,
    ),
    (
        SINGLE + "Does not satisfy the PodAffinity with labelSelector because of diff Namespace",
        incoming(S1, required=[t("", IN_SCAN, namespaces=["DiffNameSpace"])]),
        [existing(SCAN, ns="ns")],
        AFF,
    ),
    (
        SINGLE + "Doesn't satisfy the PodAffinity because of unmatching labelSelector with the existing pod",
        incoming(SCAN, required=[t("", expr("service", "In", "antivirusscan", "value2"))]),
        [existing(SCAN)],
        AFF,
    ),
    (
        SINGLE + "satisfies the PodAffinity with different label Operators in multiple"
        " RequiredDuringSchedulingIgnoredDuringExecution ",
        incoming(
            S1,
            required=[
                t("region", expr("service", "Exists"), expr("wrongkey", "DoesNotExist")),
                t("region", expr("service", "In", "securityscan"), expr("service", "NotIn", "WrongValue")),
            ],
        ),
        [existing(SCAN)],
        OK,
    ),
    (
        SINGLE + "The labelSelector requirements(items of matchExpressions) are ANDed, the pod cannot schedule onto"
        " the node because one of the matchExpression item don't match.",
        incoming(
            S1,
            required=[
                t("region", expr("service", "Exists"), expr("wrongkey", "DoesNotExist")),
                t("region", expr("service", "In", "securityscan2"), expr("service", "NotIn", "WrongValue")),
            ],
        ),
        [existing(SCAN)],
        AFF,
    ),
    (
        SINGLE + "satisfies the PodAffinity and PodAntiAffinity with the existing pod",
        incoming(S1, required=[t("region", IN_SCAN)], anti=[t("node", IN_ANTIVIRUS)]),
        [existing(SCAN)],
        OK,
    ),
    (
        SINGLE + "satisfies the PodAffinity and PodAntiAffinity and PodAntiAffinity symmetry with the existing pod",
        incoming(S1, required=[t("region", IN_SCAN)], anti=[t("node", IN_ANTIVIRUS)]),
        [existing(SCAN, anti=[t("node", IN_ANTIVIRUS)])],
        OK,
    ),
    (
        SINGLE + "satisfies the PodAffinity but doesn't satisfy the PodAntiAffinity with the existing pod",
        incoming(S1, required=[t("region", IN_SCAN)], anti=[t("zone", IN_SCAN)]),
        [existing(SCAN)],
        ANTI,
    ),
    (
        SINGLE + "satisfies the PodAffinity and PodAntiAffinity but doesn't satisfy PodAntiAffinity symmetry with the"
        " existing pod",
        incoming(SCAN, required=[t("region", IN_SCAN)], anti=[t("node", IN_ANTIVIRUS)]),
        [existing(SCAN, anti=[t("zone", IN_SCAN)])],
        EXISTING,
    ),
    (
        SINGLE + "pod matches its own Label in PodAffinity and that matches the existing pod Labels",
        incoming(SCAN, required=[t("region", expr("service", "NotIn", "securityscan", "value2"))]),
        [existing(SCAN, node="machine2")],
        AFF,
    ),
    (
        SINGLE + "verify that PodAntiAffinity from existing pod is respected when pod has no AntiAffinity"
        " constraints. doesn't satisfy PodAntiAffinity symmetry with the existing pod",
        kpod("p", labels=SCAN),
        [existing(SCAN, anti=[t("zone", IN_SCAN)])],
        EXISTING,
    ),
    (
        SINGLE + "verify that PodAntiAffinity from existing pod is respected when pod has no AntiAffinity"
        " constraints. satisfy PodAntiAffinity symmetry with the existing pod",
        kpod("p", labels=SCAN),
        [existing(SCAN, anti=[t("zone", expr("service", "NotIn", "securityscan", "value2"))])],
        OK,
    ),
    (
        SINGLE + "satisfies the PodAntiAffinity with existing pod but doesn't satisfy PodAntiAffinity symmetry with"
        " incoming pod",
        incoming(SCAN, anti=[t("region", expr("service", "Exists")), t("region", expr("security", "Exists"))]),
        [existing(S1, anti=[t("zone", expr("security", "Exists"))])],
        ANTI,
    ),
    (
        SINGLE + "PodAntiAffinity symmetry check a1: incoming pod and existing pod partially match each other on"
        " AffinityTerms",
        incoming(SCAN, anti=[t("zone", expr("service", "Exists")), t("zone", expr("security", "Exists"))]),
        [existing(S1, anti=[t("zone", expr("security", "Exists"))])],
        ANTI,
    ),
    (
        SINGLE + "PodAntiAffinity symmetry check a2: incoming pod and existing pod partially match each other on"
        " AffinityTerms",
        incoming(S1, anti=[t("zone", expr("security", "Exists"))]),
        [existing(SCAN, anti=[t("zone", expr("service", "Exists")), t("zone", expr("security", "Exists"))])],
        EXISTING,
    ),
    (
        SINGLE + "PodAntiAffinity symmetry check b1: incoming pod and existing pod partially match each other on"
        " AffinityTerms",
        incoming({"abc": "", "xyz": ""}, anti=[t("zone", expr("abc", "Exists")), t("zone", expr("def", "Exists"))]),
        [existing({"def": "", "xyz": ""}, anti=[t("zone", expr("abc", "Exists")), t("zone", expr("def", "Exists"))])],
        ANTI,
    ),
    (
        SINGLE + "PodAntiAffinity symmetry check b2: incoming pod and existing pod partially match each other on"
        " AffinityTerms",
        incoming({"def": "", "xyz": ""}, anti=[t("zone", expr("abc", "Exists")), t("zone", expr("def", "Exists"))]),
        [existing({"abc": "", "xyz": ""}, anti=[t("zone", expr("abc", "Exists")), t("zone", expr("def", "Exists"))])],
        ANTI,
    ),
    (
        SINGLE + "PodAffinity fails PreFilter with an invalid affinity label syntax",
        incoming(S1, required=[t("region", expr("service", "In", BAD)), t("node", IN_ANTIVIRUS)]),
        [],
        PARSING,
    ),
    (
        SINGLE + "PodAntiAffinity fails PreFilter with an invalid antiaffinity label syntax",
        incoming(S1, required=[t("region", expr("service", "In", "foo")), t("node", expr("service", "In", BAD))]),
        [],
        PARSING,
    ),
    (
        SINGLE + "affinity with NamespaceSelector",
        incoming(S1, required=[t("region", IN_SCAN, namespaceSelector=TEAM1)]),
        [existing(SCAN, ns="subteam1.team1")],
        OK,
    ),
    (
        SINGLE + "affinity with non-matching NamespaceSelector",
        incoming(S1, required=[t("region", IN_SCAN, namespaceSelector=TEAM1)]),
        [existing(SCAN, ns="subteam1.team2")],
        AFF,
    ),
    (
        SINGLE + "anti-affinity with matching NamespaceSelector",
        kpod(
            "p", ns="subteam1.team1", labels=S1, affinity=affinity(anti=[t("zone", IN_SCAN, namespaceSelector=TEAM1)])
        ),
        [existing(SCAN, ns="subteam2.team1")],
        ANTI,
    ),
    (
        SINGLE + "anti-affinity with matching all NamespaceSelector",
        kpod("p", ns="subteam1.team1", labels=S1, affinity=affinity(anti=[t("zone", IN_SCAN, namespaceSelector={})])),
        [existing(SCAN, ns="subteam2.team1")],
        ANTI,
    ),
    (
        SINGLE + "anti-affinity with non-matching NamespaceSelector",
        kpod(
            "p", ns="subteam1.team1", labels=S1, affinity=affinity(anti=[t("zone", IN_SCAN, namespaceSelector=TEAM1)])
        ),
        [existing(SCAN, ns="subteam1.team2")],
        OK,
    ),
]


@pytest.mark.parametrize(("pod", "pods", "want"), [f[1:] for f in FILTER], ids=[f[0] for f in FILTER])
def test_filter_on_one_node_as_upstream(pod: dict[str, Any], pods: list[dict[str, Any]], want: str) -> None:
    assert filter_codes(interpodaffinity, pod, [*NAMESPACES, MACHINE1, *pods]) == {"machine1": want}


def test_the_first_pod_of_a_self_affine_group_fits_where_no_peer_exists() -> None:
    """kube's self-affinity exception: no pod anywhere matches, and the pod matches its own terms; once a
    peer exists, other zones are rejected."""
    nodes = [knode("a", zone="z1"), knode("b", zone="z2")]
    pod = incoming({"app": "web"}, required=[t("zone", expr("app", "In", "web"))])
    assert filter_codes(interpodaffinity, pod, nodes) == {"a": OK, "b": OK}
    peer = kpod("web-0", node="a", labels={"app": "web"})
    assert filter_codes(interpodaffinity, pod, [*nodes, peer]) == {"a": OK, "b": AFF}


def test_a_namespace_selector_selects_namespace_objects() -> None:
    """The incoming pod's namespaceSelector is unrolled into the namespaces that exist (kube's merge)."""
    nodes = [knode("a", zone="z1"), knode("b", zone="z2")]
    other = kpod("x", node="a", ns="team-a", labels={"app": "db"})
    anti = [t("zone", expr("app", "In", "db"), namespaceSelector={"matchLabels": {"team": "a"}})]
    pod = incoming({}, anti=anti)
    assert filter_codes(interpodaffinity, pod, [*nodes, other]) == {"a": OK, "b": OK}  # no Namespace object
    assert filter_codes(interpodaffinity, pod, [*nodes, other, namespace("team-a", team="a")]) == {"a": ANTI, "b": OK}


# Scores: upstream's NormalizeScore rule (TestPreferredAffinity): min/max over the nodes, 100·(s-min)/(max-min).
def test_preferred_affinity_scores_domains_by_weight() -> None:
    nodes = [knode("a", region="r1"), knode("b", region="r2"), knode("c", region="r3")]
    pods = [kpod("s1", node="a", labels=SCAN), kpod("s2", node="b", labels=SCAN), kpod("s3", node="b", labels=SCAN)]
    pod = incoming(S1, preferred=[(5, t("region", IN_SCAN))])
    assert scores(interpodaffinity, pod, [*nodes, *pods]) == {"a": 50, "b": 100, "c": 0}


def test_preferred_anti_affinity_prefers_the_emptiest_domain() -> None:
    nodes = [knode("a", region="r1"), knode("b", region="r2"), knode("c", region="r3")]
    pods = [kpod("s1", node="a", labels=SCAN), kpod("s2", node="b", labels=SCAN), kpod("s3", node="b", labels=SCAN)]
    pod = incoming(S1, preferred_anti=[(5, t("region", IN_SCAN))])
    assert scores(interpodaffinity, pod, [*nodes, *pods]) == {"a": 50, "b": 0, "c": 100}


def test_existing_pods_required_affinity_counts_with_hard_pod_affinity_weight() -> None:
    nodes = [knode("a", region="r1"), knode("b", region="r2")]
    pods = [kpod("e", node="a", labels={}, affinity=affinity(required=[t("region", IN_SCAN)]))]
    pod = kpod("p", labels=SCAN)
    assert scores(interpodaffinity, pod, [*nodes, *pods]) == {"a": 100, "b": 0}
    # TestPreferredAffinityWithHardPodAffinitySymmetricWeight/"with zero weight": nothing to score, PreScore skips
    assert scores(interpodaffinity, pod, [*nodes, *pods], args=Args(hard_pod_affinity_weight=0)) is None
    ignore = Args(ignore_preferred_terms_of_existing_pods=True)
    assert scores(interpodaffinity, pod, [*nodes, *pods], args=ignore) is None


# upstream TestValidateInterPodAffinityArgs
VALIDATION = [
    ("valid args", {"hardPodAffinityWeight": 10}, []),
    ("hardPodAffinityWeight less than min", {"hardPodAffinityWeight": -1},
     ["hardPodAffinityWeight: Invalid value: -1: not in valid range [0, 100]"]),
    ("hardPodAffinityWeight more than max", {"hardPodAffinityWeight": 101},
     ["hardPodAffinityWeight: Invalid value: 101: not in valid range [0, 100]"]),
]  # fmt: skip


@pytest.mark.parametrize(("args", "problems"), [v[1:] for v in VALIDATION], ids=[v[0] for v in VALIDATION])
def test_args_validation_as_upstream(args: dict[str, Any], problems: list[str]) -> None:
    if not problems:
        assert profile(("InterPodAffinity",), {"InterPodAffinity": args}).args["InterPodAffinity"] == Args(10)
        return
    with pytest.raises(ConfigError) as e:
        profile(("InterPodAffinity",), {"InterPodAffinity": args})
    assert e.value.problems == ["profiles[0].pluginConfig[0].args." + p for p in problems]


def test_args_defaults() -> None:
    """SetDefaults_InterPodAffinityArgs: hardPodAffinityWeight 1 when omitted or null; 0 stays 0."""
    assert profile(("InterPodAffinity",), {"InterPodAffinity": {}}).args["InterPodAffinity"] == Args(1, False)
    got = profile(("InterPodAffinity",), {"InterPodAffinity": {"hardPodAffinityWeight": None}})
    assert got.args["InterPodAffinity"] == Args(1)
    got = profile(("InterPodAffinity",), {"InterPodAffinity": {"hardPodAffinityWeight": 0}})
    assert got.args["InterPodAffinity"] == Args(0)


def test_a_reserved_pod_counts_until_it_is_released() -> None:
    """The pod index follows berth's assumed pods: reserved, it blocks its zone; released, it no longer does."""
    state, plugin = setup(interpodaffinity, [knode("a", zone="z1"), knode("b", zone="z2"), kpod("db-0", labels=SCAN)])
    pod = convert(incoming(SCAN, anti=[t("zone", IN_SCAN)]))

    def verdict() -> list[bool]:
        failures = plugin.filter(Cycle(pod, state, NOW))
        return [bool(any(f.mask[state.nodes.slot[n]] for f in failures)) for n in ("a", "b")]

    assert verdict() == [False, False]
    state.reserve(Reservation(pod=state.pods["default/db-0"], node="a"))
    assert verdict() == [True, False]
    state.release("default/db-0")
    assert verdict() == [False, False]


MULTI = "TestRequiredAffinityMultipleNodes/"
CHINA, CHINA_AZ1, INDIA = {"region": "China"}, {"region": "China", "az": "az1"}, {"region": "India"}
RZH = [{"region": "r1", "zone": "z1", "hostname": "nodeA"}, {"region": "r1", "zone": "z2", "hostname": "nodeB"}]
SAME_ZONE = [{"region": "r1", "zone": "z1", "hostname": "nodeA"}, {"region": "r1", "zone": "z1", "hostname": "nodeB"}]


def on(node: str, labels: dict[str, str] | None = None, ns: str = "default", **aff: Any) -> dict[str, Any]:
    return existing(labels or {}, node=node, ns=ns, **aff)


def ex(key: str) -> dict[str, Any]:
    return expr(key, "Exists")


# (upstream test/case, incoming pod, node labels by name, existing pods, want per node)
MULTI_FILTER: list[tuple[str, dict[str, Any], dict[str, dict[str, str]], list[dict[str, Any]], list[str]]] = [
    (
        MULTI + "A pod can be scheduled onto all the nodes that have the same topology key & label value with one of"
        " them has an existing pod that matches the affinity rules",
        incoming({}, required=[t("region", expr("foo", "In", "bar"))]),
        {"node1": CHINA, "node2": CHINA_AZ1, "node3": INDIA},
        [on("node1", {"foo": "bar"})],
        [OK, OK, AFF],
    ),
    (
        MULTI + "The affinity rule is to schedule all of the pods of this collection to the same zone. The first pod"
        " of the collection should not be blocked from being scheduled onto any node, even there's no existing pod"
        " that matches the rule anywhere.",
        incoming(
            {"foo": "bar", "service": "securityscan"},
            required=[t("zone", expr("foo", "In", "bar")), t("zone", expr("service", "In", "securityscan"))],
        ),
        {"nodeA": {"zone": "az1", "hostname": "h1"}, "nodeB": {"zone": "az2", "hostname": "h2"}},
        [on("nodeA", {"foo": "bar"})],
        [OK, OK],
    ),
    (
        MULTI + "The first pod of the collection can only be scheduled on nodes labelled with the requested topology"
        " keys",
        incoming(
            {"foo": "bar", "service": "securityscan"},
            required=[t("zone", expr("foo", "In", "bar")), t("zone", expr("service", "In", "securityscan"))],
        ),
        {"nodeA": {"zoneLabel": "az1", "hostname": "h1"}, "nodeB": {"zoneLabel": "az2", "hostname": "h2"}},
        [on("nodeA", {"foo": "bar"})],
        [AFF, AFF],
    ),
    (
        MULTI + "NodeA and nodeB have same topologyKey and label value. NodeA has an existing pod that matches the"
        " inter pod affinity rule. The pod can not be scheduled onto nodeA and nodeB.",
        incoming({}, anti=[t("region", expr("foo", "In", "abc"))]),
        {"nodeA": {"region": "r1", "hostname": "nodeA"}, "nodeB": {"region": "r1", "hostname": "nodeB"}},
        [on("nodeA", {"foo": "abc"})],
        [ANTI, ANTI],
    ),
    (
        MULTI + "This test ensures that anti-affinity matches a pod when any term of the anti-affinity rule matches a"
        " pod.",
        incoming({}, anti=[t("region", expr("foo", "In", "abc")), t("zone", expr("service", "In", "securityscan"))]),
        {"nodeA": RZH[0], "nodeB": {**RZH[1], "hostname": "nodeB"}},
        [on("nodeA", {"foo": "abc", "service": "securityscan"})],
        [ANTI, ANTI],
    ),
    (
        MULTI + "NodeA and nodeB have same topologyKey and label value. NodeA has an existing pod that matches the"
        " inter pod affinity rule. The pod can not be scheduled onto nodeA and nodeB but can be scheduled onto nodeC",
        incoming({}, anti=[t("region", expr("foo", "In", "abc"))]),
        {"nodeA": CHINA, "nodeB": CHINA_AZ1, "nodeC": INDIA},
        [on("nodeA", {"foo": "abc"})],
        [ANTI, ANTI, OK],
    ),
    (
        MULTI + "NodeA and nodeB have same topologyKey and label value. NodeA has an existing pod that matches the"
        " inter pod affinity rule. The pod can not be scheduled onto nodeA, nodeB, but can be scheduled onto nodeC"
        " (NodeC has an existing pod that match the inter pod affinity rule but in different namespace)",
        kpod("p", ns="NS1", labels={"foo": "123"}, affinity=affinity(anti=[t("region", expr("foo", "In", "bar"))])),
        {"nodeA": CHINA, "nodeB": CHINA_AZ1, "nodeC": INDIA},
        [
            on("nodeA", {"foo": "bar"}, ns="NS1"),
            on("nodeC", ns="NS2", anti=[t("region", expr("foo", "In", "123"))]),
        ],
        [ANTI, ANTI, OK],
    ),
    (
        MULTI + "Test existing pod's anti-affinity: if an existing pod has a term with invalid topologyKey,"
        " labelSelector of the term is firstly checked, and then topologyKey of the term is also checked",
        kpod("p", labels={"foo": ""}),
        {"nodeA": SAME_ZONE[0], "nodeB": SAME_ZONE[1]},
        [on("nodeA", anti=[t("invalid-node-label", ex("foo"))])],
        [OK, OK],
    ),
    (
        # upstream's incoming pod also names nodeA as its node; berth decides pods without one
        MULTI + "Test incoming pod's anti-affinity: even if labelSelector matches, we still check if topologyKey"
        " matches",
        incoming({}, anti=[t("invalid-node-label", ex("foo"))]),
        {"nodeA": SAME_ZONE[0], "nodeB": SAME_ZONE[1]},
        [on("nodeA", {"foo": ""})],
        [OK, OK],
    ),
    (
        MULTI + "Test existing pod's anti-affinity: incoming pod wouldn't considered as a fit as it violates each"
        " existingPod's terms on all nodes",
        kpod("p", labels={"foo": "", "bar": ""}),
        {"nodeA": RZH[0], "nodeB": RZH[1]},
        [on("nodeA", anti=[t("zone", ex("foo"))]), on("nodeA", anti=[t("region", ex("bar"))])],
        [EXISTING, EXISTING],
    ),
    (
        MULTI + "Test incoming pod's anti-affinity: incoming pod wouldn't considered as a fit as it at least violates"
        " one anti-affinity rule of existingPod",
        incoming({}, anti=[t("zone", ex("foo")), t("region", ex("bar"))]),
        {"nodeA": RZH[0], "nodeB": RZH[1]},
        [on("nodeA", {"foo": ""}), on("nodeB", {"bar": ""})],
        [ANTI, ANTI],
    ),
    (
        MULTI + "Test existing pod's anti-affinity: only when labelSelector and topologyKey both match, it's counted"
        " as a single term match - case when one term has invalid topologyKey",
        kpod("p", labels={"foo": "", "bar": ""}),
        {"nodeA": RZH[0], "nodeB": RZH[1]},
        [on("nodeA", anti=[t("invalid-node-label", ex("foo")), t("zone", ex("bar"))])],
        [EXISTING, OK],
    ),
    (
        MULTI + "Test incoming pod's anti-affinity: only when labelSelector and topologyKey both match, it's counted"
        " as a single term match - case when one term has invalid topologyKey",
        incoming({}, anti=[t("invalid-node-label", ex("foo")), t("zone", ex("bar"))]),
        {"nodeA": RZH[0], "nodeB": RZH[1]},
        [on("nodeA", {"foo": "", "bar": ""})],
        [ANTI, OK],
    ),
    (
        MULTI + "Test existing pod's anti-affinity: only when labelSelector and topologyKey both match, it's counted"
        " as a single term match - case when all terms have valid topologyKey",
        kpod("p", labels={"foo": "", "bar": ""}),
        {"nodeA": RZH[0], "nodeB": RZH[1]},
        [on("nodeA", anti=[t("region", ex("foo")), t("zone", ex("bar"))])],
        [EXISTING, EXISTING],
    ),
    (
        MULTI + "Test incoming pod's anti-affinity: only when labelSelector and topologyKey both match, it's counted"
        " as a single term match - case when all terms have valid topologyKey",
        incoming({}, anti=[t("region", ex("foo")), t("zone", ex("bar"))]),
        {"nodeA": RZH[0], "nodeB": RZH[1]},
        [on("nodeA", {"foo": "", "bar": ""})],
        [ANTI, ANTI],
    ),
    (
        MULTI + "Test existing pod's anti-affinity: existingPod on nodeA and nodeB has at least one anti-affinity"
        " term matches incoming pod, so incoming pod can only be scheduled to nodeC",
        kpod("p", labels={"foo": "", "bar": ""}),
        {"nodeA": RZH[0], "nodeB": RZH[1], "nodeC": {"region": "r1", "zone": "z3", "hostname": "nodeC"}},
        [
            on("nodeA", anti=[t("zone", ex("foo")), t("zone", ex("labelA"))]),
            on("nodeB", anti=[t("zone", ex("bar")), t("zone", ex("labelB"))]),
        ],
        [EXISTING, EXISTING, OK],
    ),
    (
        MULTI + "Test incoming pod's affinity: firstly check if all affinityTerms match, and then check if all"
        " topologyKeys match",
        incoming({}, required=[t("region", ex("foo")), t("zone", ex("bar"))]),
        {"nodeA": SAME_ZONE[0], "nodeB": SAME_ZONE[1]},
        [on("nodeA", {"foo": "", "bar": ""})],
        [OK, OK],
    ),
    (
        MULTI + "Test incoming pod's affinity: firstly check if all affinityTerms match, and then check if all"
        " topologyKeys match, and the match logic should be satisfied on the same pod",
        incoming({}, required=[t("region", ex("foo")), t("zone", ex("bar"))]),
        {"nodeA": RZH[0], "nodeB": RZH[1]},
        [on("nodeA", {"foo": ""}), on("nodeB", {"bar": ""})],
        [AFF, AFF],
    ),
]


@pytest.mark.parametrize(
    ("pod", "nodes", "pods", "want"), [f[1:] for f in MULTI_FILTER], ids=[f[0] for f in MULTI_FILTER]
)
def test_filter_on_several_nodes_as_upstream(
    pod: dict[str, Any], nodes: dict[str, dict[str, str]], pods: list[dict[str, Any]], want: list[str]
) -> None:
    objs = [namespace("NS1"), *(knode(n, **labels) for n, labels in nodes.items()), *pods]
    assert filter_codes(interpodaffinity, pod, objs) == dict(zip(nodes, want, strict=True))


def test_parse_errors_of_several_groups_are_aggregated_as_kube_does() -> None:
    """PodInfo.Update: per group the first term that does not parse, groups joined as `[e1, e2]`."""
    bad_key = expr("-x", "Exists")
    pod = incoming(
        S1,
        required=[t("zone", IN_SCAN), t("zone", expr("service", "In", BAD))],
        preferred_anti=[(1, t("zone", bad_key))],
    )
    got = filter_codes(interpodaffinity, pod, [*NAMESPACES, MACHINE1])["machine1"]
    assert got.startswith("UNRESOLVABLE: parsing pod: [requiredAffinityTerms: values[0][service]: Invalid value: ")
    assert ', preferredAntiAffinityTerms: key: Invalid value: "-x": name part must consist of' in got
    assert got.endswith("]")


def test_a_pod_that_does_not_parse_is_turned_away_before_any_node() -> None:
    state = ClusterState()
    for raw in (MACHINE1, incoming(S1, required=[t("zone", expr("service", "In", BAD))])):
        state.apply(convert(raw))
    d = Scheduler(parse_config(None).build(state)).decide(state.pods["default/p"], NOW).decision
    assert d.status == "Unschedulable"
    assert d.message.startswith("0/1 nodes are available: parsing pod: requiredAffinityTerms: values[0][service]:")
