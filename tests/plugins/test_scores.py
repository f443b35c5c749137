"""TaintToleration's and NodeAffinity's scores, normalised, as upstream's TestTaintTolerationScore
(tainttoleration/taint_toleration_test.go) and TestNodeAffinityPriority / TestNodeAffinity
(nodeaffinity/node_affinity_test.go) say."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from berth.core.api.kinds import convert
from berth.core.cache.state import ClusterState
from berth.core.config.kubeschedulerconfig import parse_config
from berth.core.framework.cycle import Cycle
from berth.core.framework.interface import KeepsState
from berth.core.framework.status import Code
from berth.core.plugins.helper.normalize_score import default_normalize
from tests.builders import NOW
from tests.plugins.helpers import config_problems


def tnode(name: str, *taints: tuple[str, str, str], labels: dict[str, str] | None = None) -> dict[str, Any]:
    spec = {"taints": [{"key": k, "value": v, "effect": e} for k, v, e in taints]}
    return {"kind": "Node", "apiVersion": "v1", "metadata": {"name": name, "labels": labels or {}}, "spec": spec}


def tpod(tolerations: list[tuple[str, str, str]] = (), affinity: dict[str, Any] | None = None) -> dict[str, Any]:  # type: ignore[assignment]
    spec: dict[str, Any] = {
        "containers": [{"name": "c"}],
        "tolerations": [{"key": k, "operator": "Equal", "value": v, "effect": e} for k, v, e in tolerations],
    }
    if affinity is not None:
        spec["affinity"] = {"nodeAffinity": affinity}
    return {"kind": "Pod", "apiVersion": "v1", "metadata": {"name": "p", "namespace": "default"}, "spec": spec}


def normalised(
    plugin: str, args: dict[str, Any] | None, pod: dict[str, Any], nodes: list[dict[str, Any]]
) -> list[int] | None:
    doc = {"profiles": [{"pluginConfig": [{"name": plugin, "args": args}]}]} if args else None
    cfg = parse_config(doc)
    state = ClusterState()
    p = cfg.plugins.modules[plugin].new(cfg.args.get(plugin), state)
    if isinstance(p, KeepsState):
        state.attach(p.extension())
    for raw in nodes:
        state.apply(convert(raw))
    cycle = Cycle(convert(pod), state, NOW)
    feasible = state.nodes.valid.copy()
    if p.pre_score(cycle, feasible).code is Code.SKIP:  # type: ignore[attr-defined]
        return None
    scores = p.score(cycle, feasible)  # type: ignore[attr-defined]
    p.normalize_score(cycle, scores, feasible)  # type: ignore[attr-defined]
    return [int(scores[state.nodes.slot[n["metadata"]["name"]]]) for n in nodes]


P = "PreferNoSchedule"

TAINT_CASES = [
    (
        "node with taints tolerated by the pod, gets a higher score than those node with intolerable taints",
        [("foo", "bar", P)],
        [tnode("nodeA", ("foo", "bar", P)), tnode("nodeB", ("foo", "blah", P))],
        [100, 0],
    ),
    (
        "the nodes that all of their taints are tolerated by the pod, get the same score, no matter how many tolerable "
        "taints a node has",
        [("cpu-type", "arm64", P), ("disk-type", "ssd", P)],
        [
            tnode("nodeA"),
            tnode("nodeB", ("cpu-type", "arm64", P)),
            tnode("nodeC", ("cpu-type", "arm64", P), ("disk-type", "ssd", P)),
        ],
        [100, 100, 100],
    ),
    (
        "the more intolerable taints a node has, the lower score it gets.",
        [("foo", "bar", P)],
        [
            tnode("nodeA"),
            tnode("nodeB", ("cpu-type", "arm64", P)),
            tnode("nodeC", ("cpu-type", "arm64", P), ("disk-type", "ssd", P)),
        ],
        [100, 50, 0],
    ),
    (
        "only taints and tolerations that have effect PreferNoSchedule are checked by prioritize function",
        [("cpu-type", "arm64", "NoSchedule"), ("disk-type", "ssd", "NoSchedule")],
        [
            tnode("nodeA"),
            tnode("nodeB", ("cpu-type", "arm64", "NoSchedule")),
            tnode("nodeC", ("cpu-type", "arm64", P), ("disk-type", "ssd", P)),
        ],
        [100, 100, 0],
    ),
    (
        "Default behaviour No taints and tolerations",
        [],
        [tnode("nodeA"), tnode("nodeB", ("cpu-type", "arm64", P))],
        [100, 0],
    ),
]


@pytest.mark.parametrize(("name", "tolerations", "nodes", "want"), TAINT_CASES, ids=[c[0] for c in TAINT_CASES])
def test_taint_toleration_score(
    name: str, tolerations: list[tuple[str, str, str]], nodes: list[dict[str, Any]], want: list[int]
) -> None:
    assert normalised("TaintToleration", None, tpod(tolerations), nodes) == want


def pref(weight: int, **labels: str) -> dict[str, Any]:
    exprs = [{"key": k, "operator": "In", "values": [v]} for k, v in labels.items()]
    return {"weight": weight, "preference": {"matchExpressions": exprs}}


L1, L2, L3 = {"foo": "bar"}, {"key": "value"}, {"az": "az1"}
L4, L5 = {"abc": "az11", "def": "az22"}, {"foo": "bar", "key": "value", "az": "az1"}
AFFINITY1 = {"preferredDuringSchedulingIgnoredDuringExecution": [pref(2, foo="bar")]}
AFFINITY2 = {
    "preferredDuringSchedulingIgnoredDuringExecution": [
        pref(2, foo="bar"),
        pref(4, key="value"),
        pref(5, foo="bar", key="value", az="az1"),
    ]
}
ADDED = {"addedAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [pref(3, key="value")]}}


def n(name: str, labels: dict[str, str]) -> dict[str, Any]:
    return tnode(name, labels=labels)


AFFINITY_CASES = [
    (
        "all nodes are same priority as NodeAffinity is nil",
        None,
        None,
        [n("node1", L1), n("node2", L2), n("node3", L3)],
        None,
    ),
    (
        "no node matches preferred scheduling requirements in NodeAffinity of pod so all nodes' priority is zero",
        None,
        AFFINITY1,
        [n("node1", L4), n("node2", L2), n("node3", L3)],
        [0, 0, 0],
    ),
    (
        "only node1 matches the preferred scheduling requirements of pod",
        None,
        AFFINITY1,
        [n("node1", L1), n("node2", L2), n("node3", L3)],
        [100, 0, 0],
    ),
    (
        "all nodes matches the preferred scheduling requirements of pod but with different priorities ",
        None,
        AFFINITY2,
        [n("node1", L1), n("node5", L5), n("node2", L2)],
        [18, 100, 36],
    ),
    ("added affinity", ADDED, None, [n("node1", L1), n("node2", L2)], [0, 100]),
    (
        "added affinity and pod has default affinity",
        ADDED,
        AFFINITY1,
        [n("node1", L1), n("node2", L2), n("node3", L5)],
        [40, 60, 100],
    ),
]


@pytest.mark.parametrize(
    ("name", "args", "affinity", "nodes", "want"), AFFINITY_CASES, ids=[c[0] for c in AFFINITY_CASES]
)
def test_node_affinity_priority(
    name: str,
    args: dict[str, Any] | None,
    affinity: dict[str, Any] | None,
    nodes: list[dict[str, Any]],
    want: list[int] | None,
) -> None:
    assert normalised("NodeAffinity", args, tpod(affinity=affinity), nodes) == want


def test_added_required_affinity_is_checked_first() -> None:
    # TestNodeAffinity "Pod with addedAffinity ...": the scheduler-enforced reason, before the pod's own
    args = {
        "addedAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["foo"]}]}]
            }
        }
    }
    cfg = parse_config({"profiles": [{"pluginConfig": [{"name": "NodeAffinity", "args": args}]}]})
    state = ClusterState()
    p = cfg.plugins.modules["NodeAffinity"].new(cfg.args["NodeAffinity"], state)
    for raw in (n("a", {"zone": "foo"}), n("b", {"zone": "bar"}), n("c", {"zone": "foo", "x": "y"})):
        state.apply(convert(raw))
    pod = tpod()
    pod["spec"]["nodeSelector"] = {"x": "y"}
    failures = p.filter(Cycle(convert(pod), state, NOW))  # type: ignore[attr-defined]
    got = {name: [f.reason for f in failures if f.mask[slot]] for name, slot in state.nodes.slot.items()}
    assert got == {
        "a": ["node(s) didn't match Pod's node affinity/selector"],
        "b": ["node(s) didn't match scheduler-enforced node affinity"],
        "c": [],
    }


def test_node_affinity_args_validation() -> None:
    # TestValidateNodeAffinityArgs "invalid added affinity": matchFields needs exactly one value
    args = {
        "addedAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 1,
                    "preference": {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["a", "b"]}]},
                }
            ]
        }
    }
    assert config_problems("NodeAffinity", args) == [
        "addedAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].matchFields[0].values: Invalid value: "
        "['a', 'b']: must have one element"
    ]


def test_default_normalize() -> None:
    s = np.array([2, 11, 4, 7], dtype=np.int64)
    feasible = np.array([True, True, True, False])
    default_normalize(s, feasible, reverse=False)
    assert s.tolist() == [18, 100, 36, 7]


def test_prefer_taints_follow_node_updates() -> None:
    a, b = tnode("nodeA"), tnode("nodeB", ("cpu-type", "arm64", P))
    assert normalised("TaintToleration", None, tpod(), [a, b]) == [100, 0]
    cfg = parse_config(None)
    state = ClusterState()
    p = cfg.plugins.modules["TaintToleration"].new(None, state)
    state.attach(p.extension())  # type: ignore[attr-defined]
    for raw in (a, b, tnode("nodeA", ("k", "v", P), ("k2", "v", P))):  # nodeA gains two taints
        state.apply(convert(raw))
    cycle = Cycle(convert(tpod()), state, NOW)
    feasible = state.nodes.valid.copy()
    p.pre_score(cycle, feasible)  # type: ignore[attr-defined]
    got = p.score(cycle, feasible)  # type: ignore[attr-defined]
    assert [int(got[state.nodes.slot[x]]) for x in ("nodeA", "nodeB")] == [2, 1]
