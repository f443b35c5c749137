"""TaintToleration's, NodeUnschedulable's and NodeAffinity's Filter against upstream's own tables
(tainttoleration TestTaintTolerationFilter, nodeunschedulable TestNodeUnschedulable, nodeaffinity
TestNodeAffinity): one node, the plugin alone, each case naming its upstream test and case."""

from __future__ import annotations

from typing import Any

import pytest

from berth.core.api.kinds import convert
from berth.core.cache.state import ClusterState
from berth.core.config.kubeschedulerconfig import parse_config
from berth.core.framework.cycle import Cycle
from berth.core.framework.status import PreFilterResult
from tests.builders import NOW

OK = "SUCCESS"
POD_AFFINITY = "UNRESOLVABLE: node(s) didn't match Pod's node affinity/selector"
ENFORCED = "UNRESOLVABLE: node(s) didn't match scheduler-enforced node affinity"
UNSCHEDULABLE = "UNRESOLVABLE: node(s) were unschedulable"


def node(name: str = "node", labels: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    meta = {"name": name, "labels": labels or {}}
    return {"apiVersion": "v1", "kind": "Node", "metadata": meta, "spec": spec, "status": {"allocatable": {}}}


def pod(**spec: Any) -> dict[str, Any]:
    meta = {"name": "p", "namespace": "default", "uid": "uid-p"}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": {"containers": [{"name": "c"}], **spec}}


def verdict(plugin: str, pod: dict[str, Any], node: dict[str, Any], args: dict[str, Any] | None = None) -> str:
    """The plugin's Filter on the one node: SUCCESS, or its failures as "CODE: reason"."""
    doc = {"profiles": [{"pluginConfig": [{"name": plugin, "args": args}]}]} if args is not None else None
    cfg = parse_config(doc)
    state = ClusterState()
    p = cfg.plugins.modules[plugin].new(cfg.args.get(plugin), state)
    state.apply(convert(node))
    slot = state.nodes.slot[node["metadata"]["name"]]
    failures = [f for f in p.filter(Cycle(convert(pod), state, NOW)) if f.mask[slot]]  # type: ignore[attr-defined]
    return "; ".join(f"{f.code.name}: {f.reason}" for f in failures) or OK


# ---- TaintToleration -----------------------------------------------------------------------------
def taint(key: str, value: str, effect: str = "NoSchedule") -> dict[str, str]:
    return {"key": key, "value": value, "effect": effect}


def tol(key: str, op: str = "", value: str = "", effect: str = "") -> dict[str, str]:
    out = {"key": key}
    for field, v in (("operator", op), ("value", value), ("effect", effect)):
        if v:
            out[field] = v
    return out


def untolerated(key: str, value: str) -> str:
    return "UNRESOLVABLE: node(s) had untolerated taint(s)"  # kube 1.36 names no taint


TT = "TestTaintTolerationFilter/"
TAINTS = [
    (TT + "A pod having no tolerations can't be scheduled onto a node with nonempty taints",
     [], [taint("dedicated", "user1")], untolerated("dedicated", "user1")),
    (TT + "A pod which can be scheduled on a dedicated node assigned to user1 with effect NoSchedule",
     [tol("dedicated", value="user1", effect="NoSchedule")], [taint("dedicated", "user1")], OK),
    (TT + "A pod which can't be scheduled on a dedicated node assigned to user2 with effect NoSchedule",
     [tol("dedicated", "Equal", "user2", "NoSchedule")], [taint("dedicated", "user1")],
     untolerated("dedicated", "user1")),
    (TT + "A pod can be scheduled onto the node, with a toleration uses operator Exists that tolerates the taints on"
     " the node", [tol("foo", "Exists", effect="NoSchedule")], [taint("foo", "bar")], OK),
    (TT + "A pod has multiple tolerations, node has multiple taints, all the taints are tolerated, pod can be"
     " scheduled onto the node",
     [tol("dedicated", "Equal", "user2", "NoSchedule"), tol("foo", "Exists", effect="NoSchedule")],
     [taint("dedicated", "user2"), taint("foo", "bar")], OK),
    (TT + "A pod has a toleration that keys and values match the taint on the node, but (non-empty) effect doesn't"
     " match, can't be scheduled onto the node",
     [tol("foo", "Equal", "bar", "PreferNoSchedule")], [taint("foo", "bar")], untolerated("foo", "bar")),
    (TT + "The pod has a toleration that keys and values match the taint on the node, the effect of toleration is"
     " empty, and the effect of taint is NoSchedule. Pod can be scheduled onto the node",
     [tol("foo", "Equal", "bar")], [taint("foo", "bar")], OK),
    (TT + "The pod has a toleration that key and value don't match the taint on the node, but the effect of taint"
     " on node is PreferNoSchedule. Pod can be scheduled onto the node",
     [tol("dedicated", "Equal", "user2", "NoSchedule")], [taint("dedicated", "user1", "PreferNoSchedule")], OK),
    (TT + "The pod has no toleration, but the effect of taint on node is PreferNoSchedule. Pod can be scheduled onto"
     " the node", [], [taint("dedicated", "user1", "PreferNoSchedule")], OK),
]  # fmt: skip


@pytest.mark.parametrize(("tolerations", "taints", "want"), [c[1:] for c in TAINTS], ids=[c[0] for c in TAINTS])
def test_taint_toleration_filter_as_upstream(
    tolerations: list[dict[str, str]], taints: list[dict[str, str]], want: str
) -> None:
    assert verdict("TaintToleration", pod(tolerations=tolerations), node("nodeA", taints=taints)) == want


# ---- NodeUnschedulable ---------------------------------------------------------------------------
NU = "TestNodeUnschedulable/"
UNSCHED = [
    (NU + "Does not schedule pod to unschedulable node (node.Spec.Unschedulable==true)", [], True, UNSCHEDULABLE),
    (NU + "Schedule pod to normal node", [], False, OK),
    (NU + "Schedule pod with toleration to unschedulable node (node.Spec.Unschedulable==true)",
     [tol("node.kubernetes.io/unschedulable", effect="NoSchedule")], True, OK),
]  # fmt: skip


@pytest.mark.parametrize(("tolerations", "cordoned", "want"), [c[1:] for c in UNSCHED], ids=[c[0] for c in UNSCHED])
def test_node_unschedulable_as_upstream(tolerations: list[dict[str, str]], cordoned: bool, want: str) -> None:
    assert verdict("NodeUnschedulable", pod(tolerations=tolerations), node(unschedulable=cordoned)) == want


# ---- NodeAffinity --------------------------------------------------------------------------------
def r(key: str, op: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": op, **({"values": list(values)} if values else {})}


def term(*exprs: dict[str, Any], fields: tuple[dict[str, Any], ...] = ()) -> dict[str, Any]:
    out: dict[str, Any] = {"matchExpressions": list(exprs)}
    if fields:
        out["matchFields"] = list(fields)
    return out


def name_in(n: str) -> dict[str, Any]:
    return r("metadata.name", "In", n)


def required(*terms: dict[str, Any]) -> dict[str, Any]:
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}}}


def added(*terms: dict[str, Any]) -> dict[str, Any]:
    return {"addedAffinity": required(*terms)["nodeAffinity"]}


NA = "TestNodeAffinity/"
FOO_BAR = {"foo": "bar"}
GPU = {"GPU": "NVIDIA-GRID-K1"}
# (upstream case, pod spec, node name, node labels, NodeAffinityArgs or None, want)
# Upstream's PreFilter results for the same cases are in PRE_AFFINITY below.
AFFINITY: list[tuple[str, dict[str, Any], str, dict[str, str], dict[str, Any] | None, str]] = [
    (NA + "missing labels", {"nodeSelector": FOO_BAR}, "node", {}, None, POD_AFFINITY),
    (NA + "same labels", {"nodeSelector": FOO_BAR}, "node", FOO_BAR, None, OK),
    (NA + "node labels are superset", {"nodeSelector": FOO_BAR}, "node", {"foo": "bar", "baz": "blah"}, None, OK),
    (NA + "node labels are subset", {"nodeSelector": {"foo": "bar", "baz": "blah"}}, "node", FOO_BAR, None,
     POD_AFFINITY),
    (NA + "Pod with matchExpressions using In operator that matches the existing node",
     {"affinity": required(term(r("foo", "In", "bar", "value2")))}, "node", FOO_BAR, None, OK),
    (NA + "Pod with matchExpressions using Gt operator that matches the existing node",
     {"affinity": required(term(r("kernel-version", "Gt", "0204")))}, "node", {"kernel-version": "0206"}, None, OK),
    (NA + "Pod with matchExpressions using NotIn operator that matches the existing node",
     {"affinity": required(term(r("mem-type", "NotIn", "DDR", "DDR2")))}, "node", {"mem-type": "DDR3"}, None, OK),
    (NA + "Pod with matchExpressions using Exists operator that matches the existing node",
     {"affinity": required(term(r("GPU", "Exists")))}, "node", GPU, None, OK),
    (NA + "Pod with affinity that don't match node's labels won't schedule onto the node",
     {"affinity": required(term(r("foo", "In", "value1", "value2")))}, "node", FOO_BAR, None, POD_AFFINITY),
    (NA + "Pod with empty MatchExpressions is not a valid value will match no objects and won't schedule onto the"
     " node", {"affinity": required(term())}, "node", FOO_BAR, None, POD_AFFINITY),
    (NA + "Pod with no Affinity will schedule onto a node", {}, "node", FOO_BAR, None, OK),
    (NA + "Pod with Affinity but nil NodeSelector will schedule onto a node", {"affinity": {"nodeAffinity": {}}},
     "node", FOO_BAR, None, OK),
    (NA + "Pod with multiple matchExpressions ANDed that matches the existing node",
     {"affinity": required(term(r("GPU", "Exists"), r("GPU", "NotIn", "AMD", "INTER")))}, "node", GPU, None, OK),
    (NA + "Pod with multiple matchExpressions ANDed that doesn't match the existing node",
     {"affinity": required(term(r("GPU", "Exists"), r("GPU", "In", "AMD", "INTER")))}, "node", GPU, None,
     POD_AFFINITY),
    (NA + "Pod with multiple NodeSelectorTerms ORed in affinity, matches the node's labels and will schedule onto"
     " the node",
     {"affinity": required(term(r("foo", "In", "bar", "value2")), term(r("diffkey", "In", "wrong", "value2")))},
     "node", FOO_BAR, None, OK),
    (NA + "Pod with an Affinity and a PodSpec.NodeSelector(the old thing that we are deprecating) both are"
     " satisfied, will schedule onto the node",
     {"nodeSelector": FOO_BAR, "affinity": required(term(r("foo", "Exists")))}, "node", FOO_BAR, None, OK),
    (NA + "Pod with an Affinity matches node's labels but the PodSpec.NodeSelector(the old thing that we are"
     " deprecating) is not satisfied, won't schedule onto the node",
     {"nodeSelector": FOO_BAR, "affinity": required(term(r("foo", "Exists")))}, "node", {"foo": "barrrrrr"}, None,
     POD_AFFINITY),
    (NA + "Pod with an invalid value in Affinity term won't be scheduled onto the node",
     {"affinity": required(term(r("foo", "NotIn", "invalid value: ___@#$%^")))}, "node", FOO_BAR, None,
     POD_AFFINITY),
    (NA + "Pod with matchFields using In operator that matches the existing node",
     {"affinity": required(term(fields=(name_in("node1"),)))}, "node1", {}, None, OK),
    (NA + "Pod with matchFields using In operator that does not match the existing node",
     {"affinity": required(term(fields=(name_in("node1"),)))}, "node2", {}, None, POD_AFFINITY),
    (NA + "Pod with two terms: matchFields does not match, but matchExpressions matches",
     {"affinity": required(term(fields=(name_in("node1"), name_in("node2"))), term(r("foo", "In", "bar")))},
     "node2", FOO_BAR, None, OK),
    (NA + "Pod with one term: matchFields does not match, but matchExpressions matches",
     {"affinity": required(term(r("foo", "In", "bar"), fields=(name_in("node1"),)))}, "node2", FOO_BAR, None,
     POD_AFFINITY),
    (NA + "Pod with one term: both matchFields and matchExpressions match",
     {"affinity": required(term(r("foo", "In", "bar"), fields=(name_in("node1"),)))}, "node1", FOO_BAR, None, OK),
    (NA + "Pod with two terms: both matchFields and matchExpressions do not match",
     {"affinity": required(term(fields=(name_in("node1"),)), term(r("foo", "In", "not-match-to-bar")))},
     "node2", FOO_BAR, None, POD_AFFINITY),
    (NA + "Pod with two terms of node.Name affinity",
     {"affinity": required(term(fields=(name_in("node1"),)), term(fields=(name_in("node2"),)))}, "node2", {}, None,
     OK),
    (NA + "Pod with two conflicting mach field requirements",
     {"affinity": required(term(fields=(name_in("node1"), name_in("node2"))))}, "node2", FOO_BAR, None,
     POD_AFFINITY),
    (NA + "Matches added affinity and Pod's node affinity",
     {"affinity": required(term(r("zone", "In", "foo")))}, "node2", {"zone": "foo"},
     added(term(fields=(name_in("node2"),))), OK),
    (NA + "Matches added affinity but not Pod's node affinity",
     {"affinity": required(term(r("zone", "In", "bar")))}, "node2", {"zone": "foo"},
     added(term(fields=(name_in("node2"),))), POD_AFFINITY),
    (NA + "Doesn't match added affinity", {}, "node2", {"zone": "foo"}, added(term(r("zone", "In", "bar"))),
     ENFORCED),
    (NA + "Matches node selector correctly even if PreFilter is not called", {"nodeSelector": FOO_BAR}, "node",
     {"foo": "bar", "baz": "blah"}, None, OK),
    (NA + "Matches node affinity correctly even if PreFilter is not called",
     {"affinity": required(term(r("GPU", "Exists"), r("GPU", "NotIn", "AMD", "INTER")))}, "node", GPU, None, OK),
]  # fmt: skip


@pytest.mark.parametrize(
    ("spec", "name", "labels", "args", "want"), [c[1:] for c in AFFINITY], ids=[c[0] for c in AFFINITY]
)
def test_node_affinity_filter_as_upstream(
    spec: dict[str, Any], name: str, labels: dict[str, str], args: dict[str, Any] | None, want: str
) -> None:
    assert verdict("NodeAffinity", pod(**spec), node(name, labels), args) == want


def pre_verdict(spec: dict[str, Any], args: dict[str, Any] | None) -> str:
    """NodeAffinity's PreFilter: SKIP, SUCCESS, the node set as "nodes: a b", or "CODE: reason"."""
    doc = {"profiles": [{"pluginConfig": [{"name": "NodeAffinity", "args": args}]}]} if args is not None else None
    cfg = parse_config(doc)
    state = ClusterState()
    p = cfg.plugins.modules["NodeAffinity"].new(cfg.args.get("NodeAffinity"), state)
    status = p.pre_filter(Cycle(convert(pod(**spec)), state, NOW))  # type: ignore[attr-defined]
    if isinstance(status, PreFilterResult):
        return "nodes: " + " ".join(sorted(status.node_names))
    return status.code.name + (f": {status.message}" if status.message else "")


# (upstream case, pod spec, NodeAffinityArgs or None, wantPreFilterStatus / wantPreFilterResult)
PRE_AFFINITY: list[tuple[str, dict[str, Any], dict[str, Any] | None, str]] = [
    (NA + "missing labels", {"nodeSelector": FOO_BAR}, None, OK),
    (NA + "Pod with no Affinity will schedule onto a node", {}, None, "SKIP"),
    (NA + "Pod with Affinity but nil NodeSelector will schedule onto a node", {"affinity": {"nodeAffinity": {}}},
     None, "SKIP"),
    (NA + "Pod with matchFields using In operator that matches the existing node",
     {"affinity": required(term(fields=(name_in("node1"),)))}, None, "nodes: node1"),
    (NA + "Pod with matchFields using In operator that does not match the existing node",
     {"affinity": required(term(fields=(name_in("node1"),)))}, None, "nodes: node1"),
    (NA + "Pod with two terms: matchFields does not match, but matchExpressions matches",
     {"affinity": required(term(fields=(name_in("node1"), name_in("node2"))), term(r("foo", "In", "bar")))},
     None, OK),
    (NA + "Pod with one term: matchFields does not match, but matchExpressions matches",
     {"affinity": required(term(r("foo", "In", "bar"), fields=(name_in("node1"),)))}, None, "nodes: node1"),
    (NA + "Pod with one term: both matchFields and matchExpressions match",
     {"affinity": required(term(r("foo", "In", "bar"), fields=(name_in("node1"),)))}, None, "nodes: node1"),
    (NA + "Pod with two terms: both matchFields and matchExpressions do not match",
     {"affinity": required(term(fields=(name_in("node1"),)), term(r("foo", "In", "not-match-to-bar")))}, None, OK),
    (NA + "Pod with two terms of node.Name affinity",
     {"affinity": required(term(fields=(name_in("node1"),)), term(fields=(name_in("node2"),)))}, None,
     "nodes: node1 node2"),
    (NA + "Pod with two conflicting mach field requirements",
     {"affinity": required(term(fields=(name_in("node1"), name_in("node2"))))}, None,
     "UNRESOLVABLE: pod affinity terms conflict"),
    # the args' addedAffinity gives no node set, but the pod is not skipped
    (NA + "Matches added affinity and Pod's node affinity",
     {"affinity": required(term(r("zone", "In", "foo")))}, added(term(fields=(name_in("node2"),))), OK),
    (NA + "Doesn't match added affinity", {}, added(term(r("zone", "In", "bar"))), OK),
]  # fmt: skip


@pytest.mark.parametrize(("spec", "args", "want"), [c[1:] for c in PRE_AFFINITY], ids=[c[0] for c in PRE_AFFINITY])
def test_node_affinity_pre_filter_as_upstream(spec: dict[str, Any], args: dict[str, Any] | None, want: str) -> None:
    assert pre_verdict(spec, args) == want
