"""PodTopologySpread against upstream's own unit tests (pkg/scheduler/framework/plugins/podtopologyspread):
each case names its upstream test and case; nodes, pods and expected codes are upstream's."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from berth.core.config.kubeschedulerconfig import parse_config
from berth.core.errors import ConfigError
from berth.core.plugins import podtopologyspread
from tests.plugins.interpod.builders import profile, spread
from tests.plugins.interpod.harness import filter_codes, knode, kpod, scores

OK = "SUCCESS"
SKEW = "UNSCHEDULABLE: node(s) didn't match pod topology spread constraints"
MISSING = "UNRESOLVABLE: node(s) didn't match pod topology spread constraints (missing required label)"
FOO = {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}
BAR = {"matchExpressions": [{"key": "bar", "operator": "Exists"}]}


def c(
    skew: int, key: str, selector: dict[str, Any] | None, when: str = "DoNotSchedule", **extra: Any
) -> dict[str, Any]:
    out = spread(key, None, skew, when, **extra)
    if selector is not None:
        out["labelSelector"] = selector
    return out


def incoming(*constraints: dict[str, Any], labels: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    return kpod(
        "p", labels={"foo": ""} if labels is None else labels, topologySpreadConstraints=list(constraints), **spec
    )


def four() -> list[dict[str, Any]]:
    return [
        knode("node-a", zone="zone1", node="node-a"),
        knode("node-b", zone="zone1", node="node-b"),
        knode("node-x", zone="zone2", node="node-x"),
        knode("node-y", zone="zone2", node="node-y"),
    ]


def foo(*where: str, **extra: Any) -> list[dict[str, Any]]:
    """Pods labelled foo on these nodes (a node named twice holds two)."""
    return [kpod(f"p-{n}-{i}", node=n, labels={"foo": ""}, **extra) for i, n in enumerate(where)]


SPREAD_2103 = foo("node-a", "node-a", "node-b", "node-y", "node-y", "node-y")

# (upstream test / case, pod, nodes, existing pods, want per node)
FILTER: list[tuple[str, dict[str, Any], list[dict[str, Any]], list[dict[str, Any]], dict[str, str]]] = [
    (
        "TestSingleConstraint/no existing pods",
        incoming(c(1, "zone", FOO)),
        four(),
        [],
        {"node-a": OK, "node-b": OK, "node-x": OK, "node-y": OK},
    ),
    (
        "TestSingleConstraint/no existing pods, incoming pod doesn't match itself",
        incoming(c(1, "zone", BAR)),
        four(),
        [],
        {"node-a": OK, "node-b": OK, "node-x": OK, "node-y": OK},
    ),
    (
        "TestSingleConstraint/existing pods in a different namespace do not count",
        incoming(c(1, "zone", FOO)),
        four(),
        [
            kpod("p-a1", "node-a", "ns1", {"foo": ""}),
            kpod("p-b1", "node-a", "ns2", {"foo": ""}),
            *foo("node-x", "node-y"),
        ],
        {"node-a": OK, "node-b": OK, "node-x": SKEW, "node-y": SKEW},
    ),
    (
        "TestSingleConstraint/existing pods do not match null selector",
        incoming(c(1, "zone", None)),
        four(),
        foo("node-x", "node-y"),
        {"node-a": OK, "node-b": OK, "node-x": OK, "node-y": OK},
    ),
    (
        "TestSingleConstraint/pods spread across zones as 3/3, all nodes fit",
        incoming(c(1, "zone", FOO)),
        four(),
        foo("node-a", "node-a", "node-b", "node-y", "node-y", "node-y"),
        {"node-a": OK, "node-b": OK, "node-x": OK, "node-y": OK},
    ),
    (
        "TestSingleConstraint/pods spread across zones as 1/2 due to absence of label 'zone' on node-b",
        incoming(c(1, "zone", FOO)),
        [
            knode("node-a", zone="zone1", node="node-a"),
            knode("node-b", zon="zone1", node="node-b"),
            knode("node-x", zone="zone2", node="node-x"),
            knode("node-y", zone="zone2", node="node-y"),
        ],
        foo("node-a", "node-b", "node-x", "node-y"),
        {"node-a": OK, "node-b": MISSING, "node-x": SKEW, "node-y": SKEW},
    ),
    (
        "TestSingleConstraint/pod cannot be scheduled as all nodes don't have label 'rack'",
        incoming(c(1, "rack", FOO)),
        [knode("node-a", zone="zone1", node="node-a"), knode("node-x", zone="zone2", node="node-x")],
        [],
        {"node-a": MISSING, "node-x": MISSING},
    ),
    (
        "TestSingleConstraint/pods spread across nodes as 2/1/0/3, only node-x fits",
        incoming(c(1, "node", FOO)),
        four(),
        SPREAD_2103,
        {"node-a": SKEW, "node-b": SKEW, "node-x": OK, "node-y": SKEW},
    ),
    (
        "TestSingleConstraint/pods spread across nodes as 2/1/0/3, maxSkew is 2, node-b and node-x fit",
        incoming(c(2, "node", FOO)),
        four(),
        SPREAD_2103,
        {"node-a": SKEW, "node-b": OK, "node-x": OK, "node-y": SKEW},
    ),
    (
        "TestSingleConstraint/pods spread across nodes as 2/1/0/3, but pod doesn't match itself",
        incoming(c(1, "node", FOO), labels={"bar": ""}),
        four(),
        SPREAD_2103,
        {"node-a": SKEW, "node-b": OK, "node-x": OK, "node-y": SKEW},
    ),
    (
        "TestSingleConstraint/incoming pod has nodeAffinity, pods spread as 2/~1~/~0~/3, hence node-a fits",
        incoming(
            c(1, "node", FOO),
            affinity={
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {"matchExpressions": [{"key": "node", "operator": "In", "values": ["node-a", "node-y"]}]}
                        ]
                    }
                }
            },
        ),
        four(),
        SPREAD_2103,
        {"node-a": OK, "node-b": OK, "node-x": OK, "node-y": SKEW},
    ),
    (
        "TestSingleConstraint/terminating Pods should be excluded",
        incoming(c(1, "node", FOO)),
        [knode("node-a", node="node-a"), knode("node-b", node="node-b")],
        [kpod("p-a", "node-a", labels={"foo": ""}, terminating=True), *foo("node-b")],
        {"node-a": OK, "node-b": SKEW},
    ),
    (
        "TestSingleConstraint/pods spread across nodes as 2/2/1, maxSkew is 2, and the number of domains < minDomains,"
        " then the third node fits",
        incoming(c(2, "node", FOO, minDomains=4)),
        [knode("node-a", node="node-a"), knode("node-b", node="node-b"), knode("node-c", node="node-c")],
        foo("node-a", "node-a", "node-b", "node-b", "node-c"),
        {"node-a": SKEW, "node-b": SKEW, "node-c": OK},
    ),
    (
        "TestSingleConstraint/pods spread across nodes as 2/2/1, maxSkew is 2, and the number of domains > minDomains,"
        " then the all nodes fit",
        incoming(c(2, "node", FOO, minDomains=2)),
        [knode("node-a", node="node-a"), knode("node-b", node="node-b"), knode("node-c", node="node-c")],
        foo("node-a", "node-a", "node-b", "node-b", "node-c"),
        {"node-a": OK, "node-b": OK, "node-c": OK},
    ),
    (
        "TestPreFilterState/soft spreadConstraints should be bypassed (the hard ones filter: zone 3/4, node 2/1/4)",
        incoming(
            c(1, "zone", FOO, "ScheduleAnyway"),
            c(1, "zone", FOO),
            c(1, "node", FOO, "ScheduleAnyway"),
            c(1, "node", FOO),
        ),
        [
            knode("node-a", zone="zone1", node="node-a"),
            knode("node-b", zone="zone1", node="node-b"),
            knode("node-y", zone="zone2", node="node-y"),
        ],
        foo("node-a", "node-a", "node-b", "node-y", "node-y", "node-y", "node-y"),
        {"node-a": SKEW, "node-b": OK, "node-y": SKEW},
    ),
]


@pytest.mark.parametrize(("pod", "nodes", "pods", "want"), [f[1:] for f in FILTER], ids=[f[0] for f in FILTER])
def test_filter_as_upstream(
    pod: dict[str, Any], nodes: list[dict[str, Any]], pods: list[dict[str, Any]], want: dict[str, str]
) -> None:
    assert filter_codes(podtopologyspread, pod, [*nodes, *pods]) == want


def labelled(*names: str, zones: bool = False, foo_on: str = "", taint: str = "") -> list[dict[str, Any]]:
    """Nodes labelled node=<name> (and zone: node-a/b in zone1, node-x/y in zone2); the nodes named in
    foo_on also carry foo=""; the node named in taint has TAINTS."""
    out = []
    for n in names:
        labels = {"node": n}
        if zones:
            labels["zone"] = "zone1" if n in ("node-a", "node-b") else "zone2"
        if n in foo_on.split():
            labels["foo"] = ""
        out.append(knode(n, taints=TAINTS if n == taint else None, **labels))
    return out


ABXY = ("node-a", "node-b", "node-x", "node-y")
TAINTS = [{"key": "node.kubernetes.io/unschedulable", "value": "", "effect": "NoSchedule"}]
FOO_NODE_SELECTOR = {"nodeSelector": {"foo": ""}}
FOO_NODE_AFFINITY = {
    "affinity": {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [{"key": "foo", "operator": "In", "values": [""]}]}]
            }
        }
    }
}
NOT_NODE_B = {
    "affinity": {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "node", "operator": "NotIn", "values": ["node-b"]}]}
                ]
            }
        }
    }
}
IGNORE, HONOR = {"nodeAffinityPolicy": "Ignore"}, {"nodeTaintsPolicy": "Honor"}


def want(*codes: str, names: tuple[str, ...] = ABXY) -> dict[str, str]:
    return dict(zip(names, codes, strict=True))


SINGLE = "TestSingleConstraint/"
MULTI = "TestMultipleConstraints/"
# Upstream's cases with the NodeInclusionPolicy feature on (GA, as berth has it). Each case runs only
# PodTopologySpread, so a node other filters would reject can pass here, as upstream's comments say.
MORE_FILTER: list[tuple[str, dict[str, Any], list[dict[str, Any]], list[dict[str, Any]], dict[str, str]]] = [
    (
        SINGLE + "incoming pod has nodeAffinity, pods spread as 0/~2~/0/1, hence node-a fits",
        incoming(c(1, "zone", FOO), **NOT_NODE_B),
        four(),
        foo("node-b", "node-b", "node-y"),
        want(OK, OK, SKEW, SKEW),
    ),
    (
        SINGLE + "pods spread across zone as 2/1, maxSkew is 2 and the number of domains < minDomains, then the"
        " third and fourth nodes fit",
        incoming(c(2, "zone", FOO, minDomains=3)),
        four(),
        foo("node-a", "node-b", "node-y"),
        want(SKEW, SKEW, OK, OK),
    ),
    (
        SINGLE + "pods spread across zone as 2/1, maxSkew is 2 and the number of domains > minDomains, then the all"
        " nodes fit",
        incoming(c(2, "zone", FOO, minDomains=1)),
        four(),
        foo("node-a", "node-b", "node-y"),
        want(OK, OK, OK, OK),
    ),
    (
        SINGLE + "NodeAffinityPolicy honored with labelSelectors",
        incoming(c(1, "node", FOO), **FOO_NODE_SELECTOR),
        labelled(*ABXY, foo_on="node-a node-b node-x"),
        foo("node-a", "node-b", "node-y"),
        want(SKEW, SKEW, OK, OK),
    ),
    (
        SINGLE + "NodeAffinityPolicy ignored with labelSelectors",
        incoming(c(1, "node", FOO, **IGNORE), **FOO_NODE_SELECTOR),
        labelled(*ABXY, foo_on="node-a node-b node-x"),
        foo("node-a", "node-b", "node-y"),
        want(SKEW, SKEW, OK, SKEW),
    ),
    (
        SINGLE + "NodeAffinityPolicy honored with nodeAffinity",
        incoming(c(1, "node", FOO), **FOO_NODE_AFFINITY),
        labelled(*ABXY, foo_on="node-a node-b node-x"),
        foo("node-a", "node-b", "node-y"),
        want(SKEW, SKEW, OK, OK),
    ),
    (
        # upstream's second case of this name; its pod has a node affinity, not a node selector
        SINGLE + "NodeAffinityPolicy ignored with labelSelectors (with nodeAffinity)",
        incoming(c(1, "node", FOO, **IGNORE), **FOO_NODE_AFFINITY),
        labelled(*ABXY, foo_on="node-a node-b node-x"),
        foo("node-a", "node-b", "node-y"),
        want(SKEW, SKEW, OK, SKEW),
    ),
    (
        SINGLE + "NodeTaintsPolicy honored",
        incoming(c(1, "node", FOO, **HONOR)),
        labelled(*ABXY, foo_on="node-a node-b node-x", taint="node-y"),
        foo("node-a", "node-b", "node-y"),
        want(SKEW, SKEW, OK, OK),
    ),
    (
        SINGLE + "NodeTaintsPolicy ignored",
        incoming(c(1, "node", FOO)),
        labelled(*ABXY, foo_on="node-a node-b node-x", taint="node-y"),
        foo("node-a", "node-b", "node-y"),
        want(SKEW, SKEW, OK, SKEW),
    ),
    (
        MULTI + "two Constraints on zone and node, spreads = [3/3, 2/1/0/3]",
        incoming(c(1, "zone", FOO), c(1, "node", FOO)),
        four(),
        SPREAD_2103,
        want(SKEW, SKEW, OK, SKEW),
    ),
    (
        MULTI + "two Constraints on zone and node, spreads = [3/4, 2/1/0/4]",
        incoming(c(1, "zone", FOO), c(1, "node", FOO)),
        four(),
        foo("node-a", "node-a", "node-b", "node-y", "node-y", "node-y", "node-y"),
        want(SKEW, SKEW, SKEW, SKEW),
    ),
    (
        MULTI + "Constraints hold different labelSelectors, spreads = [1/0, 1/0/0/1]",
        incoming(c(1, "zone", FOO), c(1, "node", BAR), labels={"foo": "", "bar": ""}),
        four(),
        [kpod("p-a1", "node-a", labels={"foo": ""}), kpod("p-y1", "node-y", labels={"bar": ""})],
        want(SKEW, SKEW, OK, SKEW),
    ),
    (
        MULTI + "Constraints hold different labelSelectors, spreads = [1/0, 0/0/1/1]",
        incoming(c(1, "zone", FOO), c(1, "node", BAR), labels={"foo": "", "bar": ""}),
        four(),
        [
            kpod("p-a1", "node-a", labels={"foo": ""}),
            kpod("p-x1", "node-x", labels={"bar": ""}),
            kpod("p-y1", "node-y", labels={"bar": ""}),
        ],
        want(SKEW, SKEW, SKEW, SKEW),
    ),
    (
        MULTI + "Constraints hold different labelSelectors, spreads = [2/3, 1/0/0/1]",
        incoming(c(1, "zone", FOO), c(1, "node", BAR), labels={"foo": "", "bar": ""}),
        four(),
        [
            kpod("p-a1", "node-a", labels={"foo": ""}),
            kpod("p-a2", "node-a", labels={"foo": "", "bar": ""}),
            kpod("p-y1", "node-y", labels={"foo": ""}),
            kpod("p-y2", "node-y", labels={"foo": "", "bar": ""}),
            kpod("p-y3", "node-y", labels={"foo": ""}),
        ],
        want(SKEW, OK, SKEW, SKEW),
    ),
    (
        MULTI + "Constraints hold different labelSelectors but pod doesn't match itself on 'zone' constraint",
        incoming(c(1, "zone", FOO), c(1, "node", BAR), labels={"bar": ""}),
        four(),
        [
            kpod("p-a1", "node-a", labels={"foo": ""}),
            kpod("p-x1", "node-x", labels={"bar": ""}),
            kpod("p-y1", "node-y", labels={"bar": ""}),
        ],
        want(OK, OK, SKEW, SKEW),
    ),
    (
        MULTI + "two Constraints on zone and node, absence of label 'node' on node-x, spreads = [1/1, 1/0/0/1]",
        incoming(c(1, "zone", FOO), c(1, "node", FOO)),
        [*four()[:2], knode("node-x", zone="zone2"), four()[3]],
        [kpod("p-a1", "node-a", labels={"foo": ""}), kpod("p-y3", "node-y", labels={"foo": ""})],
        want(SKEW, OK, MISSING, SKEW),
    ),
    (
        MULTI + "two node inclusion Constraints, zone: honor/ignore, node: ignore/ignore",
        incoming(c(1, "zone", FOO), c(1, "node", FOO, **IGNORE), **FOO_NODE_SELECTOR),
        labelled(*ABXY, zones=True, foo_on="node-a node-b node-x"),
        foo("node-a", "node-b", "node-y"),
        want(SKEW, SKEW, OK, SKEW),
    ),
    (
        MULTI + "two node inclusion Constraints, zone: honor/honor, node: honor/ignore",
        incoming(c(1, "zone", FOO, **HONOR), c(1, "node", FOO)),
        labelled(*ABXY, zones=True, foo_on="node-a node-b node-x", taint="node-y"),
        foo("node-a", "node-b", "node-y"),
        want(SKEW, SKEW, OK, SKEW),
    ),
    (
        MULTI + "two node inclusion Constraints, zone: honor/ignore, node: honor/ignore",
        incoming(c(1, "zone", FOO), c(1, "node", FOO), **FOO_NODE_SELECTOR),
        labelled(*ABXY, zones=True, foo_on="node-a node-x node-y", taint="node-y"),
        foo("node-a", "node-b", "node-y"),
        want(SKEW, OK, OK, SKEW),
    ),
    (
        MULTI + "two node inclusion Constraints, zone: honor/honor, node: ignore/ignore",
        incoming(c(1, "zone", FOO, **HONOR), c(1, "node", FOO, **IGNORE), **FOO_NODE_SELECTOR),
        labelled(*ABXY, zones=True, foo_on="node-a node-x node-y", taint="node-y"),
        foo("node-a", "node-b", "node-y"),
        want(SKEW, SKEW, OK, SKEW),
    ),
]


@pytest.mark.parametrize(
    ("pod", "nodes", "pods", "want"), [f[1:] for f in MORE_FILTER], ids=[f[0] for f in MORE_FILTER]
)
def test_more_filter_cases_as_upstream(
    pod: dict[str, Any], nodes: list[dict[str, Any]], pods: list[dict[str, Any]], want: dict[str, str]
) -> None:
    assert filter_codes(podtopologyspread, pod, [*nodes, *pods]) == want


def test_a_pod_without_constraints_is_skipped() -> None:
    """No Service or controller selects the pod: its default constraints' selector is empty, so it has none
    (TestPreFilterState/"default constraints and a service that doesn't match"; more in test_spread_defaults)."""
    assert filter_codes(podtopologyspread, kpod("p"), four()) == dict.fromkeys(
        ["node-a", "node-b", "node-x", "node-y"], OK
    )


def hosts(*counts: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    names = [f"node-{n}" for n in "abcd"[: len(counts)]]
    nodes = [knode(n, **{"kubernetes.io/hostname": n}) for n in names]
    pods = [p for n, k in zip(names, counts, strict=True) for p in foo(*[n] * k)]
    return nodes, pods


# (upstream case (TestPodTopologySpreadScore), pod constraint, pods per node, want)
SCORE = [
    ("one constraint on node, all 4 nodes are candidates", 1, (2, 1, 0, 3), (20, 60, 100, 0)),
    ("one constraint on node, maxSkew 2", 2, (2, 1, 0, 3), (33, 66, 100, 16)),
    ("one constraint on node, maxSkew 3", 3, (4, 3, 2, 1), (44, 66, 77, 100)),
]


@pytest.mark.parametrize(("skew", "counts", "want"), [s[1:] for s in SCORE], ids=[s[0] for s in SCORE])
def test_score_as_upstream(skew: int, counts: tuple[int, ...], want: tuple[int, ...]) -> None:
    nodes, pods = hosts(*counts)
    pod = incoming(c(skew, "kubernetes.io/hostname", FOO, "ScheduleAnyway"))
    got = scores(podtopologyspread, pod, [*nodes, *pods])
    assert got == dict(zip(["node-a", "node-b", "node-c", "node-d"], want, strict=True))


def test_score_counts_pods_on_a_node_that_failed_filtering_in_its_zone() -> None:
    """Shaped as TestPodTopologySpreadScore's "3 candidates and 1 node that failed filtering" case: node-y is
    not a candidate, yet its two pods count for zone2. zone1: 2 pods, raw 2·ln 4 -> 3; zone2: 3 pods, raw
    3·ln 4 -> 4; normalised 100·(4+3-raw)/4."""
    nodes = [
        knode("node-a", zone="zone1"),
        knode("node-b", zone="zone1"),
        knode("node-x", zone="zone2"),
        knode("node-y", zone="zone2"),
    ]
    pods = foo("node-a", "node-b", "node-x", "node-y", "node-y")
    pod = incoming(c(1, "zone", FOO, "ScheduleAnyway"))
    got = scores(podtopologyspread, pod, [*nodes, *pods], feasible=["node-a", "node-b", "node-x"])
    assert got == {"node-a": 100, "node-b": 100, "node-x": 75}


def test_no_soft_constraints_skip_the_score() -> None:
    assert scores(podtopologyspread, incoming(c(1, "zone", FOO)), four()) is None


# (upstream TestValidatePodTopologySpreadArgs case, args, problems)
def listed(*constraints: dict[str, Any], kind: str = "List") -> dict[str, Any]:
    return {"defaultingType": kind, "defaultConstraints": list(constraints)}


def dc(skew: Any, key: str, when: str, **extra: Any) -> dict[str, Any]:
    return {"maxSkew": skew, "topologyKey": key, "whenUnsatisfiable": when, **extra}


AT0 = "defaultConstraints[0]"
VALIDATION: list[tuple[str, dict[str, Any], list[str]]] = [
    ("valid config", listed(dc(1, "node", "DoNotSchedule"), dc(2, "zone", "ScheduleAnyway")), []),
    (
        "maxSkew less than zero",
        listed(dc(-1, "node", "DoNotSchedule")),
        [f"{AT0}.maxSkew: Invalid value: -1: not in valid range (0, inf)"],
    ),
    (
        "empty topology key",
        listed(dc(1, "", "DoNotSchedule")),
        [f"{AT0}.topologyKey: Required value: can not be empty"],
    ),
    (
        "whenUnsatisfiable is empty",
        listed(dc(1, "node", "")),
        [f"{AT0}.whenUnsatisfiable: Required value: can not be empty"],
    ),
    (
        "whenUnsatisfiable contains unsupported action",
        listed(dc(1, "node", "unknown action")),
        [
            f'{AT0}.whenUnsatisfiable: Unsupported value: "unknown action": supported values: '
            '"DoNotSchedule", "ScheduleAnyway"'
        ],
    ),
    (
        "duplicated constraints",
        listed(dc(1, "node", "DoNotSchedule"), dc(2, "node", "DoNotSchedule")),
        ['defaultConstraints[1]: Duplicate value: "{node, DoNotSchedule}"'],
    ),
    (
        "label selector present",
        listed(dc(1, "key", "DoNotSchedule", labelSelector={"matchLabels": {"a": "b"}})),
        [f"{AT0}.labelSelector: Forbidden: constraint must not define a selector, as they deduced for each pod"],
    ),
    ("list default constraints, no constraints", {"defaultingType": "List"}, []),
    ("system default constraints", {"defaultingType": "System"}, []),
    (
        "wrong constraints",
        {"defaultingType": "unknown"},
        ['defaultingType: Unsupported value: "unknown": supported values: "System", "List"'],
    ),
    (
        "system default constraints, but has constraints",
        listed(dc(1, "key", "DoNotSchedule"), kind="System"),
        ['defaultingType: Invalid value: "System": when .defaultConstraints are not empty'],
    ),
]


@pytest.mark.parametrize(("args", "problems"), [v[1:] for v in VALIDATION], ids=[v[0] for v in VALIDATION])
def test_args_validation_as_upstream(args: dict[str, Any], problems: list[str]) -> None:
    at = "profiles[0].pluginConfig[0].args."
    if not problems:
        cfg = profile(("PodTopologySpread",), {"PodTopologySpread": args})
        assert cfg.args["PodTopologySpread"].defaulting_type == args["defaultingType"]
        return
    with pytest.raises(ConfigError) as e:
        profile(("PodTopologySpread",), {"PodTopologySpread": args})
    assert e.value.problems == [at + p for p in problems]


def test_match_label_keys_narrow_the_selector_to_the_pods_revision() -> None:
    """matchLabelKeys: pods of another revision (pod-template-hash) do not count."""
    nodes = [knode("node-a", zone="zone1"), knode("node-b", zone="zone2")]
    old = [kpod(f"old-{i}", node="node-a", labels={"foo": "", "hash": "v1"}) for i in range(3)]
    pod = incoming(c(1, "zone", FOO, matchLabelKeys=["hash"]), labels={"foo": "", "hash": "v2"})
    assert filter_codes(podtopologyspread, pod, [*nodes, *old]) == {"node-a": OK, "node-b": OK}
    plain = incoming(c(1, "zone", FOO), labels={"foo": "", "hash": "v2"})
    assert filter_codes(podtopologyspread, plain, [*nodes, *old]) == {"node-a": SKEW, "node-b": OK}


def test_node_taints_policy_honor_leaves_untolerated_nodes_out_of_the_count() -> None:
    """nodeTaintsPolicy: Honor: zone2's only node is tainted, so zone2 is no domain and zone1's minimum holds."""
    taint = [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]
    nodes = [knode("node-a", zone="zone1"), knode("node-b", zone="zone2", taints=taint)]
    pods = foo("node-a")
    honor = incoming(c(1, "zone", FOO, nodeTaintsPolicy="Honor"))
    assert filter_codes(podtopologyspread, honor, [*nodes, *pods]) == {"node-a": OK, "node-b": OK}
    ignore = incoming(c(1, "zone", FOO))
    assert filter_codes(podtopologyspread, ignore, [*nodes, *pods]) == {"node-a": SKEW, "node-b": OK}


def test_both_plugins_are_in_the_default_profile_at_kubes_place() -> None:
    cfg = parse_config(None)
    assert cfg.filters[-3:] == ("PodTopologySpread", "InterPodAffinity", "LoadAwareScheduling")
    assert dict(cfg.scores)["PodTopologySpread"] == 2 and dict(cfg.scores)["InterPodAffinity"] == 2
    off = profile(())
    assert "PodTopologySpread" not in off.filters and "InterPodAffinity" not in off.filters


HOST = "kubernetes.io/hostname"


_SERIAL = itertools.count()


def on(node: str, *labels: str, ns: str = "default", **extra: Any) -> dict[str, Any]:
    """A pod on `node` carrying these labels (each with value ""); named after its node and a serial."""
    return kpod(f"p-{node}-{next(_SERIAL)}", node, ns, dict.fromkeys(labels, ""), **extra)


def spread_pods(**counts: int) -> list[dict[str, Any]]:
    """`a=4, b=2` -> four foo pods on node-a and two on node-b."""
    return [on(f"node-{n}", "foo") for n, k in counts.items() for _ in range(k)]


def hostnamed(*names: str, **labels: str) -> list[dict[str, Any]]:
    return [knode(f"node-{n}", **{HOST: f"node-{n}"}, **labels) for n in names]


def zoned(**zones: str) -> list[dict[str, Any]]:
    return [knode(f"node-{n}", zone=z, **{HOST: f"node-{n}"}) for n, z in zones.items()]


def by_node(names: str, labels: dict[str, dict[str, str]] | None = None, taint: str = "") -> list[dict[str, Any]]:
    """Nodes labelled node=node-<x> for each letter, plus `labels` on those named in it."""
    return [
        knode(f"node-{n}", TAINTS if n == taint else None, node=f"node-{n}", **(labels or {}).get(n, {})) for n in names
    ]


FOO_ON_AB = {"a": {"foo": ""}, "b": {"foo": ""}}
SC = "TestPodTopologySpreadScore/"
# (upstream case, incoming pod, candidate nodes, nodes that failed filtering, existing pods, want per candidate)
MORE_SCORE: list[tuple[str, dict[str, Any], list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]], list[int]]] = [
    (SC + "one constraint on node, no existing pods", incoming(c(1, HOST, FOO, "ScheduleAnyway")),
     hostnamed("a", "b"), [], [], [100, 100]),
    (SC + "one constraint on node, only one node is candidate", incoming(c(1, HOST, FOO, "ScheduleAnyway")),
     hostnamed("a"), hostnamed("b"), spread_pods(a=2, b=1), [100]),
    (SC + "one constraint on node, all nodes have the same number of matching pods",
     incoming(c(1, HOST, FOO, "ScheduleAnyway")), hostnamed("a", "b"), [], spread_pods(a=1, b=1), [100, 100]),
    (SC + "one constraint on node, null selector", incoming(c(1, HOST, None, "ScheduleAnyway")),
     hostnamed("a", "b", "c", "d"), [], spread_pods(a=2, b=1, d=3), [100, 100, 100, 100]),
    (SC + "one constraint on node, 3 out of 4 nodes are candidates", incoming(c(1, HOST, FOO, "ScheduleAnyway")),
     hostnamed("a", "b", "x"), hostnamed("y"), spread_pods(a=4, b=2, x=1, y=3), [33, 83, 100]),
    (SC + "one constraint on node, 3 out of 4 nodes are candidates, one node doesn't match topology key",
     incoming(c(1, HOST, FOO, "ScheduleAnyway")),
     [*hostnamed("a"), knode("node-b", n="node-b"), *hostnamed("x")], hostnamed("y"),
     spread_pods(a=4, b=2, x=1, y=3), [16, 0, 100]),
    (SC + "one constraint on zone, 3 out of 4 nodes are candidates", incoming(c(1, "zone", FOO, "ScheduleAnyway")),
     zoned(a="zone1", b="zone1", x="zone2"), zoned(y="zone2"), spread_pods(a=4, b=2, x=1, y=3), [75, 75, 100]),
    (SC + "two Constraints on zone and node, 2 out of 4 nodes are candidates",
     incoming(c(1, "zone", FOO, "ScheduleAnyway"), c(1, HOST, FOO, "ScheduleAnyway")),
     zoned(a="zone1", x="zone2"), zoned(b="zone1", y="zone2"), spread_pods(a=2, b=1, x=2, y=4), [100, 63]),
    (SC + "two Constraints on zone and node, with different labelSelectors",
     incoming(c(1, "zone", FOO, "ScheduleAnyway"), c(1, HOST, BAR, "ScheduleAnyway"), labels={"foo": "", "bar": ""}),
     zoned(a="zone1", b="zone1", x="zone2", y="zone2"), [],
     [on("node-a", "foo"), on("node-b", "foo", "bar"), on("node-y", "foo"), on("node-y", "bar")], [60, 20, 100, 60]),
    (SC + "two Constraints on zone and node, with different labelSelectors, some nodes have 0 pods",
     incoming(c(1, "zone", FOO, "ScheduleAnyway"), c(1, HOST, BAR, "ScheduleAnyway"), labels={"foo": "", "bar": ""}),
     zoned(a="zone1", b="zone1", x="zone2", y="zone2"), [],
     [on("node-b", "bar"), on("node-x", "foo"), on("node-y", "foo", "bar")], [100, 60, 40, 0]),
    (SC + "two Constraints on zone and node, with different labelSelectors, 3 out of 4 nodes are candidates",
     incoming(c(1, "zone", FOO, "ScheduleAnyway"), c(1, HOST, BAR, "ScheduleAnyway"), labels={"foo": "", "bar": ""}),
     zoned(a="zone1", b="zone1", x="zone2"), zoned(y="zone2"),
     [on("node-a", "foo"), on("node-b", "foo", "bar"), on("node-y", "foo"), on("node-y", "bar")], [50, 25, 100]),
    (SC + "existing pods in a different namespace do not count", incoming(c(1, HOST, FOO, "ScheduleAnyway")),
     hostnamed("a", "b"), [], [on("node-a", "foo", ns="ns1"), *spread_pods(a=1, b=2)], [100, 33]),
    (SC + "terminating Pods should be excluded", incoming(c(1, HOST, FOO, "ScheduleAnyway")),
     hostnamed("a", "b"), [], [on("node-a", "foo", terminating=True), on("node-b", "foo")], [100, 0]),
    (SC + "minDomains has no effect when ScheduleAnyway", incoming(c(2, "node", FOO, "ScheduleAnyway", minDomains=10)),
     by_node("abc"), [], spread_pods(a=2, b=2, c=1), [75, 75, 100]),
    (SC + "NodeAffinityPolicy honoed with labelSelectors",
     incoming(c(1, "node", FOO, "ScheduleAnyway"), **FOO_NODE_SELECTOR), by_node("abc", FOO_ON_AB), [],
     spread_pods(a=2, b=1, c=1), [0, 33, 100]),
    (SC + "NodeAffinityPolicy ignored with labelSelectors",
     incoming(c(1, "node", FOO, "ScheduleAnyway", **IGNORE), **FOO_NODE_SELECTOR), by_node("abc", FOO_ON_AB), [],
     spread_pods(a=2, b=1, c=1), [66, 100, 100]),
    (SC + "NodeAffinityPolicy honoed with nodeAffinity",
     incoming(c(1, "node", FOO, "ScheduleAnyway"), **FOO_NODE_AFFINITY), by_node("abc", FOO_ON_AB), [],
     spread_pods(a=2, b=1, c=1), [0, 33, 100]),
    (SC + "NodeAffinityPolicy ignored with nodeAffinity",
     incoming(c(1, "node", FOO, "ScheduleAnyway", **IGNORE), **FOO_NODE_AFFINITY), by_node("abc", FOO_ON_AB), [],
     spread_pods(a=2, b=1, c=1), [66, 100, 100]),
    (SC + "NodeTaintsPolicy honored", incoming(c(1, "node", FOO, "ScheduleAnyway", **HONOR)),
     by_node("abc", taint="c"), [], spread_pods(a=2, b=1, c=1), [0, 33, 100]),
    (SC + "NodeTaintsPolicy ignored", incoming(c(1, "node", FOO, "ScheduleAnyway")),
     by_node("abc", taint="c"), [], spread_pods(a=2, b=1, c=1), [66, 100, 100]),
    # Not carried over: "matchLabelKeys ignored when feature gate disabled" (berth has no such gate: the
    # keys are always merged, as with kube's gate on by default).
    (SC + "matchLabelKeys ANDed with LabelSelector when LabelSelector is empty",
     incoming(c(1, "zone", {}, "ScheduleAnyway", matchLabelKeys=["foo"]),
              c(1, HOST, {}, "ScheduleAnyway", matchLabelKeys=["bar"]), labels={"foo": "", "bar": ""}),
     zoned(a="zone1", b="zone1", c="zone2", d="zone2"), [],
     [on("node-a", "foo"), on("node-b", "foo", "bar"), on("node-c", "foo"), on("node-c", "bar")],
     [60, 20, 60, 100]),
    (SC + "matchLabelKeys ANDed with LabelSelector when LabelSelector isn't empty",
     incoming(c(1, "zone", FOO, "ScheduleAnyway"), c(1, HOST, BAR, "ScheduleAnyway", matchLabelKeys=["baz"]),
              labels={"foo": "", "bar": "", "baz": ""}),
     zoned(a="zone1", b="zone1", c="zone2", d="zone2"), [],
     [on("node-a", "foo"), on("node-b", "foo", "bar", "baz"), on("node-c", "foo"), on("node-c", "bar"),
      on("node-c", "bar", "baz")],
     [60, 20, 60, 100]),
]  # fmt: skip


@pytest.mark.parametrize(
    ("pod", "nodes", "failed", "pods", "want"), [s[1:] for s in MORE_SCORE], ids=[s[0] for s in MORE_SCORE]
)
def test_more_scores_as_upstream(
    pod: dict[str, Any],
    nodes: list[dict[str, Any]],
    failed: list[dict[str, Any]],
    pods: list[dict[str, Any]],
    want: list[int],
) -> None:
    names = [n["metadata"]["name"] for n in nodes]
    got = scores(podtopologyspread, pod, [*nodes, *failed, *pods], feasible=names)
    assert got == dict(zip(names, want, strict=True))
