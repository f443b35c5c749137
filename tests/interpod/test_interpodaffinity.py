"""InterPodAffinity against upstream's own unit tests (pkg/scheduler/framework/plugins/interpodaffinity):
each case names its upstream test and case; nodes, pods and expected statuses are upstream's."""

from __future__ import annotations

from typing import Any

import pytest

from berth.core.errors import ConfigError
from berth.core.framework import Cycle
from berth.core.kinds import convert
from berth.core.plugins import interpodaffinity
from berth.core.plugins.interpodaffinity import Args
from berth.core.state import Reservation
from tests.builders import NOW
from tests.interpod.builders import affinity, namespace, profile
from tests.interpod.harness import filter_codes, knode, kpod, scores, setup

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


def incoming(labels: dict[str, str], **aff: Any) -> dict[str, Any]:
    return kpod("p", labels=labels, affinity=affinity(**aff)) if aff else kpod("p", labels=labels)


def existing(labels: dict[str, str], node: str = "machine1", ns: str = "default", **aff: Any) -> dict[str, Any]:
    name = f"e{len(str(aff))}-{node}-{sorted(labels.items())}".replace(" ", "").replace("'", "")
    name = "".join(ch if ch.isalnum() or ch == "-" else "-" for ch in name).lower()[:60].strip("-")
    spec = {"affinity": affinity(**aff)} if aff else {}
    return kpod(name, node=node, ns=ns, labels=labels, **spec)


SINGLE = "TestRequiredAffinitySingleNode/"
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
]


@pytest.mark.parametrize(("pod", "pods", "want"), [f[1:] for f in FILTER], ids=[f[0] for f in FILTER])
def test_filter_on_one_node_as_upstream(pod: dict[str, Any], pods: list[dict[str, Any]], want: str) -> None:
    assert filter_codes(interpodaffinity, pod, [MACHINE1, *pods]) == {"machine1": want}


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
