"""Queueing hints against upstream's hint tables: tainttoleration TestIsSchedulableAfterNodeChange,
nodeunschedulable TestIsSchedulableAfterNodeChange, nodeports Test_isSchedulableAfterPodDeleted,
volumerestrictions Test_isSchedulableAfterPodDeleted / Test_isSchedulableAfterPersistentVolumeClaimChange,
interpodaffinity and podtopologyspread Test_isSchedulableAfterPodChange / Test_isSchedulableAfterNodeChange,
nodeaffinity Test_isSchedulableAfterNodeChange, noderesources Test_isSchedulableAfterNodeChange.

A berth hint answers for the change's new object (for a deletion, the object as it was); upstream's
cases whose answer needs the old object answer the same here, as each table shows. Not carried over:
the "backoff-wrong-*-object" cases (a Go type check: berth's changes are typed when decoded) and
tainttoleration's Test_isSchedulableAfterPodChange (berth decides a pod again after its own update
without a hint)."""

from __future__ import annotations

from typing import Any

import pytest

from berth.core.api.kinds import convert
from berth.core.cache.state import ClusterState
from berth.core.config.kubeschedulerconfig import parse_config
from berth.core.framework.events import Action, ClusterEvent, PodUpdate
from tests.builders import NOW
from tests.plugins.interpod.builders import affinity


def retried(
    plugin: str, event: ClusterEvent, obj: dict[str, Any], pod: dict[str, Any], args: dict[str, Any] | None = None
) -> bool:
    """Whether the plugin's hint for this change retries the pod (no hint: every such change does)."""
    state = ClusterState()
    cfg = parse_config({"profiles": [{"pluginConfig": [{"name": plugin, "args": args}]}]} if args else None)
    p = cfg.plugins.modules[plugin].new(cfg.args.get(plugin), state)
    hints = [h for h in p.events_to_register() if h.event.resource == event.resource and event.action & h.event.action]
    assert hints, f"{plugin} registers no {event}"
    factory = hints[0].hint
    if factory is None:
        return True
    return bool(factory(state, convert(obj), NOW)([convert(pod)], None)[0])


def k_pod(name: str = "p", ns: str = "default", node: str = "", **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"containers": [spec.pop("container", {"name": "c"})], **spec}
    if node:
        body["nodeName"] = node
    meta = {"name": name, "namespace": ns, "uid": f"uid-{ns}-{name}"}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": body}


def k_node(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "nodeA"}, "spec": spec}


NODE_ADDED, NODE_UPDATED = ClusterEvent("Node", Action.ADD), ClusterEvent("Node", Action.UPDATE)
POD_DELETED = ClusterEvent("Pod", Action.DELETE)
PVC_ADDED = ClusterEvent("PersistentVolumeClaim", Action.ADD)


# ---- TaintToleration ------------------------------------------------------------------------------
def dedicated(*users: str) -> dict[str, Any]:
    return k_node(taints=[{"key": "dedicated", "value": u, "effect": "NoSchedule"} for u in users])


TOLERATES_USER2 = k_pod(
    tolerations=[{"key": "dedicated", "operator": "Equal", "value": "user2", "effect": "NoSchedule"}]
)
TT = "TestIsSchedulableAfterNodeChange (tainttoleration)/"
TAINTS = [
    (TT + "skip-queue-on-untoleratedtaint-node-added", NODE_ADDED, dedicated("user1"), False),
    (TT + "queue-on-toleratedtaint-node-added", NODE_ADDED, dedicated("user2"), True),
    (TT + "skip-unrelated-change", NODE_UPDATED, dedicated("user1", "user3"), False),
    (TT + "queue-on-taint-change", NODE_UPDATED, dedicated("user2"), True),
]  # fmt: skip


@pytest.mark.parametrize(("event", "node", "want"), [c[1:] for c in TAINTS], ids=[c[0] for c in TAINTS])
def test_taint_toleration_hints_as_upstream(event: ClusterEvent, node: dict[str, Any], want: bool) -> None:
    assert retried("TaintToleration", event, node, TOLERATES_USER2) is want


# ---- NodeUnschedulable ----------------------------------------------------------------------------
NU = "TestIsSchedulableAfterNodeChange (nodeunschedulable)/"
CORDON = [
    (NU + "skip-queue-on-unschedulable-node-added", NODE_ADDED, k_node(unschedulable=True), False),
    (NU + "queue-on-schedulable-node-added", NODE_ADDED, k_node(unschedulable=False), True),
    (NU + "skip-unrelated-change", NODE_UPDATED,
     k_node(unschedulable=True, taints=[{"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"}]), False),
    (NU + "queue-on-unschedulable-field-change", NODE_UPDATED, k_node(unschedulable=False), True),
]  # fmt: skip


@pytest.mark.parametrize(("event", "node", "want"), [c[1:] for c in CORDON], ids=[c[0] for c in CORDON])
def test_node_unschedulable_hints_as_upstream(event: ClusterEvent, node: dict[str, Any], want: bool) -> None:
    assert retried("NodeUnschedulable", event, node, k_pod()) is want


# ---- NodePorts ------------------------------------------------------------------------------------
def host_port(port: int) -> dict[str, Any]:
    return {"name": "c", "ports": [{"containerPort": port, "hostPort": port}]}


NP = "Test_isSchedulableAfterPodDeleted (nodeports)/"
PORTS = [
    (NP + "skip-queue-on-unscheduled", k_pod("old"), False),
    (NP + "skip-queue-on-non-hostport", k_pod("old", node="fake-node"), False),
    (NP + "skip-queue-on-unrelated-hostport", k_pod("old", node="fake-node", container=host_port(8081)), False),
    (NP + "queue-on-released-hostport", k_pod("old", node="fake-node", container=host_port(8080)), True),
]  # fmt: skip


@pytest.mark.parametrize(("old", "want"), [c[1:] for c in PORTS], ids=[c[0] for c in PORTS])
def test_node_ports_hints_as_upstream(old: dict[str, Any], want: bool) -> None:
    assert retried("NodePorts", POD_DELETED, old, k_pod(container=host_port(8080))) is want


# ---- VolumeRestrictions ---------------------------------------------------------------------------
GCE, GCE2 = {"gcePersistentDisk": {"pdName": "foo"}}, {"gcePersistentDisk": {"pdName": "bar"}}
AWS, AWS2 = {"awsElasticBlockStore": {"volumeID": "foo"}}, {"awsElasticBlockStore": {"volumeID": "bar"}}
RBD = {"rbd": {"monitors": ["a", "b"], "pool": "foo", "image": "bar", "fsType": "ext4"}}
RBD2 = {"rbd": {"monitors": ["c", "d"], "pool": "foo", "image": "bar", "fsType": "ext4"}}
ISCSI = {"iscsi": {"targetPortal": "127.0.0.1:3260", "iqn": "iqn.2016-12.server:storage.target01", "lun": 0}}
ISCSI2 = {"iscsi": {"targetPortal": "127.0.0.1:3260", "iqn": "iqn.2017-12.server:storage.target01", "lun": 0}}


def with_volumes(name: str, *volumes: dict[str, Any], ns: str = "default", node: str = "") -> dict[str, Any]:
    return k_pod(name, ns, node, volumes=[{"name": f"v{i}", **v} for i, v in enumerate(volumes)])


def claims(*names: str) -> list[dict[str, Any]]:
    return [{"persistentVolumeClaim": {"claimName": n}} for n in names]


VR = "Test_isSchedulableAfterPodDeleted (volumerestrictions)/"
DISKS = [
    (VR + f"{verdict}-new-object-{kind}disk-{suffix}", with_volumes("p", one), with_volumes("old", other), want)
    for kind, one, two in (("gce", GCE, GCE2), ("aws", AWS, AWS2), ("rbd", RBD, RBD2), ("iscsi", ISCSI, ISCSI2))
    for verdict, suffix, other, want in (("queue", "conflict", one, True), ("skip", "no-conflict", two, False))
] + [
    (VR + "queue-has-same-claim", with_volumes("pod1", *claims("claim-rwop")),
     with_volumes("pod2", *claims("claim-rwop")), True),
    (VR + "skip-no-same-claim", with_volumes("pod1", *claims("claim-1-rwop")),
     with_volumes("pod2", *claims("claim-2-rwop")), False),
]  # fmt: skip


@pytest.mark.parametrize(("pod", "old", "want"), [c[1:] for c in DISKS], ids=[c[0] for c in DISKS])
def test_volume_restrictions_pod_deleted_hints_as_upstream(
    pod: dict[str, Any], old: dict[str, Any], want: bool
) -> None:
    assert retried("VolumeRestrictions", POD_DELETED, old, pod) is want


def claim(name: str) -> dict[str, Any]:
    meta = {"name": name, "namespace": "default"}
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": meta,
        "spec": {"accessModes": ["ReadWriteMany"]},
    }


ONE = with_volumes("pod-with-one-pvc", *claims("claim-with-rwx-1"), node="node-1")
TWO = with_volumes("pod-with-two-pvcs", *claims("claim-with-rwx-1", "claim-with-rwx-2"), node="node-1")
OTHER_NS = with_volumes("pod-with-one-pvc", *claims("claim-with-rwx-1"), ns="kube-system", node="claim-with-rwx-2")
VC = "Test_isSchedulableAfterPersistentVolumeClaimChange (volumerestrictions)/"
CLAIMS = [
    (VC + "queue-new-object-pvc-belong-pod", TWO, claim("claim-with-rwx-1"), True),
    (VC + "skip-new-object-unused", ONE, claim("claim-with-rwx-2"), False),
    (VC + "skip-nil-old-object", ONE, claim("claim-with-rwx-2"), False),
    (VC + "skip-new-object-not-belong-pod", ONE, claim("claim-with-rwx-2"), False),
    (VC + "skip-new-object-namespace-not-equal-pod", OTHER_NS, claim("claim-with-rwx-1"), False),
]  # fmt: skip


@pytest.mark.parametrize(("pod", "pvc", "want"), [c[1:] for c in CLAIMS], ids=[c[0] for c in CLAIMS])
def test_volume_restrictions_claim_hints_as_upstream(pod: dict[str, Any], pvc: dict[str, Any], want: bool) -> None:
    assert retried("VolumeRestrictions", PVC_ADDED, pvc, pod) is want


# ---- InterPodAffinity (interpodaffinity plugin_test.go) -------------------------------------------
# Not carried over: Test_isSchedulableAfterPodChange's label-update cases (berth registers an assigned
# pod's label update without a hint: it retries where kube compares the old labels, a retry too many) and
# Test_isSchedulableAfterNodeChange's update cases that kube answers from the old node alone ("update
# node label that isn't related ...", "update node to have the anti-affinity topology label": berth retries).
def ipa_pod(name: str = "p", node: str = "", labels: dict[str, str] | None = None, **aff: Any) -> dict[str, Any]:
    raw = k_pod(name, node=node)
    raw["metadata"]["labels"] = labels or {}
    if aff:
        raw["spec"]["affinity"] = affinity(**aff)
    return raw


def svc_term(key: str, op: str = "In") -> dict[str, Any]:
    values = {"values": ["securityscan", "value2"]} if op == "In" else {}
    expr = {"key": "service", "operator": op, **values}
    return {"topologyKey": key, "labelSelector": {"matchExpressions": [expr]}}


def exists(label: str, key: str) -> dict[str, Any]:
    return {"topologyKey": key, "labelSelector": {"matchExpressions": [{"key": label, "operator": "Exists"}]}}


AFFINE = ipa_pod(required=[svc_term("region")])
ANTI = ipa_pod(anti=[svc_term("region")])
SCAN = {"service": "securityscan"}
IP = "Test_isSchedulableAfterPodChange (interpodaffinity)/"
POD_ADDED = ClusterEvent("Pod", Action.ADD)
IPA_PODS = [
    (IP + "add a pod which matches the pod affinity", AFFINE, POD_ADDED, ipa_pod("other", "fake-node", SCAN), True),
    (IP + "add an un-scheduled pod", AFFINE, POD_ADDED, ipa_pod("other", "", SCAN), False),
    (IP + "add a pod which doesn't match the pod affinity", AFFINE, POD_ADDED,
     ipa_pod("other", "fake-node", {"aaa": "a"}), False),
    (IP + "delete a pod which doesn't match pod's anti-affinity", ANTI, POD_DELETED,
     ipa_pod("other", "fake-node", {"aaa": "a"}), False),
    (IP + "delete a pod which matches pod's anti-affinity", ANTI, POD_DELETED, ipa_pod("other", "fake-node", SCAN), True),
    (IP + "delete a pod with anti-affinity that matches pending pod", ipa_pod(labels=SCAN), POD_DELETED,
     ipa_pod("other", "fake-node", anti=[svc_term("region")]), True),
    (IP + "delete a pod with anti-affinity that doesn't match pending pod", ipa_pod(labels={"service": "foo"}),
     POD_DELETED, ipa_pod("other", "fake-node", anti=[svc_term("region")]), False),
    (IP + "delete a pod which doesn't match pending pod's anti-affinity and has anti-affinity that doesn't match"
     " pending pod", ipa_pod(labels={"service": "foo"}, anti=[svc_term("region")]), POD_DELETED,
     ipa_pod("other", "fake-node", {"service": "foo"}, anti=[svc_term("region")]), False),
]  # fmt: skip


@pytest.mark.parametrize(("pod", "event", "other", "want"), [c[1:] for c in IPA_PODS], ids=[c[0] for c in IPA_PODS])
def test_inter_pod_affinity_pod_hints_as_upstream(
    pod: dict[str, Any], event: ClusterEvent, other: dict[str, Any], want: bool
) -> None:
    assert retried("InterPodAffinity", event, other, pod) is want


def labelled_node(**labels: str) -> dict[str, Any]:
    raw = k_node()
    raw["metadata"] = {"name": "node-a", "labels": labels}
    return raw


ZONE_AFFINE = ipa_pod(required=[svc_term("zone")])
ZONE_ANTI = ipa_pod(anti=[{"topologyKey": "zone", "labelSelector": {"matchLabels": {"another": "label"}}}])
IN = "Test_isSchedulableAfterNodeChange (interpodaffinity)/"
IPA_NODES = [
    (IN + "add a new node with matched pod affinity topologyKey", ZONE_AFFINE, NODE_ADDED, labelled_node(zone="zone1"),
     True),
    (IN + "add a new node without matched topologyKey", AFFINE, NODE_ADDED, labelled_node(zone="zone1"), False),
    (IN + "update node label but not topologyKey", ZONE_AFFINE, NODE_UPDATED, labelled_node(aaa="b"), False),
    (IN + "update node with different affinity topologyKey value", ZONE_AFFINE, NODE_UPDATED,
     labelled_node(zone="zone2"), True),
    (IN + "update node to have the affinity topology label", ZONE_AFFINE, NODE_UPDATED, labelled_node(zone="zone1"),
     True),
    (IN + "add a new node with matched pod anti-affinity topologyKey", ZONE_ANTI, NODE_ADDED,
     labelled_node(zone="zone1"), True),
    (IN + "add a new node without matched pod anti-affinity topologyKey", ZONE_ANTI, NODE_ADDED, labelled_node(), True),
    (IN + "update node with different anti-affinity topologyKey value", ZONE_ANTI, NODE_UPDATED,
     labelled_node(zone="zone2"), True),
    (IN + "update node label not to have anti-affinity topology label", ZONE_ANTI, NODE_UPDATED,
     labelled_node(aaa="a"), True),
]  # fmt: skip


@pytest.mark.parametrize(("pod", "event", "node", "want"), [c[1:] for c in IPA_NODES], ids=[c[0] for c in IPA_NODES])
def test_inter_pod_affinity_node_hints_as_upstream(
    pod: dict[str, Any], event: ClusterEvent, node: dict[str, Any], want: bool
) -> None:
    assert retried("InterPodAffinity", event, node, pod) is want


# ---- PodTopologySpread (podtopologyspread plugin_test.go) -----------------------------------------
# Not carried over: the update cases kube answers from the old object ("node that doesn't match
# topologySpreadConstraints updates non-related label", "update node with related labels that only match
# one of topologySpreadConstraints", and Test_isSchedulableAfterPodChange's label updates): berth registers
# Node updates and assigned pods' label updates without a hint and retries (a retry too many).
FOO_SEL = {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}


def pts_pod(*constraints: tuple[str, dict[str, Any]], labels: dict[str, str] | None = None) -> dict[str, Any]:
    raw = k_pod()
    raw["metadata"]["labels"] = labels if labels is not None else {"foo": ""}
    raw["spec"]["topologySpreadConstraints"] = [
        {"maxSkew": 1, "topologyKey": key, "whenUnsatisfiable": "DoNotSchedule", "labelSelector": sel}
        for key, sel in constraints
    ]
    return raw


def other(node: str = "fake-node", ns: str = "default", **labels: str) -> dict[str, Any]:
    raw = k_pod("other", ns, node)
    raw["metadata"]["labels"] = labels
    return raw


ZONE_ONLY = pts_pod(("zone", FOO_SEL))
ZONE_AND_NODE = pts_pod(("zone", FOO_SEL), ("node", FOO_SEL))
NODE_DELETED = ClusterEvent("Node", Action.DELETE)
PN = "Test_isSchedulableAfterNodeChange (podtopologyspread)/"
PTS_NODES = [
    (PN + "node updates label which matches topologyKey", ZONE_ONLY, NODE_UPDATED, labelled_node(zone="zone2"), True),
    (PN + "node that match topologySpreadConstraints adds non-related label", ZONE_AND_NODE, NODE_UPDATED,
     labelled_node(zone="zone1", node="node1"), True),
    (PN + "create node with non-related labels", ZONE_ONLY, NODE_ADDED, labelled_node(foo="bar"), False),
    (PN + "create node with related labels", ZONE_ONLY, NODE_ADDED, labelled_node(zone="zone1"), True),
    (PN + "delete node with non-related labels", ZONE_ONLY, NODE_DELETED, labelled_node(foo="bar"), False),
    (PN + "delete node with related labels", ZONE_ONLY, NODE_DELETED, labelled_node(zone="zone1"), True),
    (PN + "add node with related labels that only match one of topologySpreadConstraints", ZONE_AND_NODE,
     NODE_ADDED, labelled_node(zone="zone1"), False),
    (PN + "add node with related labels that match all topologySpreadConstraints", ZONE_AND_NODE, NODE_ADDED,
     labelled_node(zone="zone1", node="node1"), True),
    (PN + "update node with related labels that match all topologySpreadConstraints", ZONE_AND_NODE, NODE_UPDATED,
     labelled_node(zone="zone1", node="node2"), True),
]  # fmt: skip
PP = "Test_isSchedulableAfterPodChange (podtopologyspread)/"
PTS_PODS = [
    (PP + "add pod with labels match topologySpreadConstraints selector", ZONE_ONLY, POD_ADDED, other(foo=""), True),
    (PP + "add un-scheduled pod", ZONE_ONLY, POD_ADDED, other("", foo=""), False),
    (PP + "delete un-scheduled pod", ZONE_ONLY, POD_DELETED, other("", foo=""), False),
    (PP + "add pod with different namespace", ZONE_ONLY, POD_ADDED, other(ns="fake-namespace", foo=""), False),
    (PP + "add pod with labels don't match topologySpreadConstraints selector", ZONE_ONLY, POD_ADDED, other(bar=""),
     False),
    (PP + "delete pod with labels that match topologySpreadConstraints selector", ZONE_ONLY, POD_DELETED,
     other(foo=""), True),
    (PP + "delete pod with labels that don't match topologySpreadConstraints selector", ZONE_ONLY, POD_DELETED,
     other(bar=""), False),
]  # fmt: skip


@pytest.mark.parametrize(
    ("pod", "event", "obj", "want"), [c[1:] for c in PTS_NODES + PTS_PODS], ids=[c[0] for c in PTS_NODES + PTS_PODS]
)
def test_pod_topology_spread_hints_as_upstream(
    pod: dict[str, Any], event: ClusterEvent, obj: dict[str, Any], want: bool
) -> None:
    assert retried("PodTopologySpread", event, obj, pod) is want


# ---- NodeAffinity (nodeaffinity Test_isSchedulableAfterNodeChange) --------------------------------
FOO_BAR_AFFINITY = k_pod(
    affinity={
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [{"key": "foo", "operator": "In", "values": ["bar"]}]}]
            }
        }
    }
)
ENFORCED = {"addedAffinity": FOO_BAR_AFFINITY["spec"]["affinity"]["nodeAffinity"]}
NN = "Test_isSchedulableAfterNodeChange (nodeaffinity)/"
NA_NODES = [
    (NN + "skip-queue-on-add", None, NODE_ADDED, labelled_node(), False),
    (NN + "queue-on-add", None, NODE_ADDED, labelled_node(foo="bar"), True),
    (NN + "skip-unrelated-changes", None, NODE_UPDATED, labelled_node(), False),
    (NN + "skip-unrelated-changes-on-labels", None, NODE_UPDATED, labelled_node(k="v"), False),
    (NN + "skip-labels-changes-on-node-from-suitable-to-unsuitable", None, NODE_UPDATED, labelled_node(k="v"), False),
    (NN + "queue-on-labels-change-makes-pod-schedulable", None, NODE_UPDATED, labelled_node(foo="bar"), True),
    (NN + "skip-queue-on-add-scheduler-enforced-node-affinity", ENFORCED, NODE_ADDED, labelled_node(), False),
    (NN + "queue-on-add-scheduler-enforced-node-affinity", ENFORCED, NODE_ADDED, labelled_node(foo="bar"), True),
]  # fmt: skip


@pytest.mark.parametrize(("args", "event", "node", "want"), [c[1:] for c in NA_NODES], ids=[c[0] for c in NA_NODES])
def test_node_affinity_hints_as_upstream(
    args: dict[str, Any] | None, event: ClusterEvent, node: dict[str, Any], want: bool
) -> None:
    assert retried("NodeAffinity", event, node, FOO_BAR_AFFINITY, args) is want


# ---- NodeResourcesFit (noderesources fit_test.go) -------------------------------------------------
# Test_isSchedulableAfterPodChange's in-place resize cases are further down, with the scale-down hint.
def sized_node(**capacity: str) -> dict[str, Any]:
    """st.MakeNode().Capacity(...): pods 32 unless given."""
    raw = labelled_node()
    res = {"pods": "32", **capacity}
    raw["status"] = {"allocatable": res, "capacity": res}
    return raw


def requesting(**requests: str) -> dict[str, Any]:
    return k_pod(container={"name": "c", "resources": {"requests": requests}})


A_RES, B_RES = "example.com/aaa", "example.com/bbb"
MEM2_A1 = requesting(memory="2", **{A_RES: "1"})
FN = "Test_isSchedulableAfterNodeChange (noderesources)/"
FIT_NODES = [
    (FN + "skip-queue-on-node-add-without-sufficient-resources", requesting(memory="2"), NODE_ADDED,
     sized_node(memory="1"), False),
    (FN + "skip-queue-on-node-add-without-required-resource-type", requesting(**{A_RES: "1"}), NODE_ADDED,
     sized_node(**{B_RES: "1"}), False),
    (FN + "queue-on-node-add-with-sufficient-resources", MEM2_A1, NODE_ADDED, sized_node(memory="4", **{A_RES: "2"}),
     True),
    (FN + "skip-queue-on-node-changes-from-suitable-to-unsuitable", MEM2_A1, NODE_UPDATED,
     sized_node(memory="1", **{A_RES: "2"}), False),
    (FN + "queue-on-node-changes-from-unsuitable-to-suitable", MEM2_A1, NODE_UPDATED,
     sized_node(memory="4", **{A_RES: "2"}), True),
    # berth's own: isFit compares what fitsRequest does, so a name that is neither cpu, memory,
    # ephemeral-storage nor scalar (IsScalarResourceName) holds no pod back
    ("queue-on-node-add-a-non-scalar-name-not-compared", requesting(memory="2", foo="1"), NODE_ADDED,
     sized_node(memory="4"), True),
    ("Test_isSchedulableAfterPodChange (noderesources)/queue-on-other-pod-deleted", requesting(cpu="1"), POD_DELETED,
     k_pod("pod2", node="fake", container={"name": "c", "resources": {"requests": {"cpu": "1"}}}), True),
]  # fmt: skip


@pytest.mark.parametrize(("pod", "event", "obj", "want"), [c[1:] for c in FIT_NODES], ids=[c[0] for c in FIT_NODES])
def test_node_resources_fit_hints_as_upstream(
    pod: dict[str, Any], event: ClusterEvent, obj: dict[str, Any], want: bool
) -> None:
    assert retried("NodeResourcesFit", event, obj, pod) is want


# An assigned pod scaled down in place (kube: Pod/UpdatePodScaleDown, the hint isSchedulableAfterPodEvent).
# Not carried over: "skip-queue-on-unscheduled-pod-deleted" (berth reports a deletion only for an
# assigned pod), "skip-queue-on-disable-inplace-pod-vertical-scaling" (berth has no feature gates: kube's
# default since v1.33, InPlacePodVerticalScaling on), the "queue-on-target-pod-*" cases (berth decides a
# pod again after its own update, without a hint) and the "backoff-wrong-*-object" ones (a Go type check).
def sized_pod(name: str, node: str = "", level: bool = False, **requests: str) -> dict[str, Any]:
    """st.MakePod().Name(name).Req(requests), .PodLevelResourceRequests(requests) with level."""
    if level:
        raw = k_pod(name, node=node)
        raw["spec"]["resources"] = {"requests": requests}
        return raw
    return k_pod(name, node=node, container={"name": "c", "resources": {"requests": requests}})


SD = "Test_isSchedulableAfterPodChange (noderesources)/"
SCALE_DOWNS = [
    (SD + "skip-queue-on-other-unscheduled-pod", sized_pod("pod1", cpu="1"), sized_pod("pod2", cpu="2"),
     sized_pod("pod2", cpu="1"), False),
    (SD + "skip-queue-on-other-pod-unrelated-resource-scaled-down", sized_pod("pod1", cpu="1"),
     sized_pod("pod2", "fake", memory="2"), sized_pod("pod2", "fake", memory="1"), False),
    (SD + "skip-queue-on-other-pod-unrelated-pod-level-resource-scaled-down", sized_pod("pod1", level=True, cpu="1"),
     sized_pod("pod2", "fake", level=True, memory="2"), sized_pod("pod2", "fake", level=True, memory="1"), False),
    (SD + "queue-on-other-pod-some-resource-scale-down", sized_pod("pod1", cpu="1"),
     sized_pod("pod2", "fake", cpu="2"), sized_pod("pod2", "fake", cpu="1"), True),
    (SD + "queue-on-other-pod-some-pod-level-resource-scale-down", sized_pod("pod1", level=True, cpu="1"),
     sized_pod("pod2", "fake", level=True, cpu="2"), sized_pod("pod2", "fake", level=True, cpu="1"), True),
    ("berth: an extended resource scaled down", sized_pod("pod1", **{A_RES: "1"}),
     sized_pod("pod2", "fake", **{A_RES: "2"}), sized_pod("pod2", "fake", **{A_RES: "1"}), True),
    ("berth: a resource removed from the requests", sized_pod("pod1", cpu="1"),
     sized_pod("pod2", "fake", cpu="2", memory="1"), sized_pod("pod2", "fake", memory="1"), True),
]  # fmt: skip


@pytest.mark.parametrize(("pod", "old", "new", "want"), [c[1:] for c in SCALE_DOWNS], ids=[c[0] for c in SCALE_DOWNS])
def test_node_resources_fit_scale_down_hints_as_upstream(
    pod: dict[str, Any], old: dict[str, Any], new: dict[str, Any], want: bool
) -> None:
    state = ClusterState()
    cfg = parse_config(None)
    plugin = cfg.plugins.modules["NodeResourcesFit"].new(cfg.args.get("NodeResourcesFit"), state)
    (reg,) = [h for h in plugin.events_to_register() if h.event.matches("Pod", Action.UPDATE_POD_SCALE_DOWN)]
    assert reg.hint is not None
    hint = reg.hint(state, PodUpdate(convert(old), convert(new)), NOW)
    assert bool(hint([convert(pod)], None)[0]) is want


# kube's fit_test.go TestEventsToRegister, "Register events with InPlacePodVerticalScaling feature
# enabled": Pod UpdatePodScaleDown|Delete. With the general Update (UpdatePodScaleDown is part of it) a
# plugin sees scale-downs too; InterPodAffinity and PodTopologySpread register UpdatePodLabel only.
POD_REGISTERED = [
    ("NodeResourcesFit", Action.DELETE | Action.UPDATE_POD_SCALE_DOWN),
    ("InterPodAffinity", Action.ADD | Action.UPDATE_POD_LABEL | Action.DELETE),
    ("PodTopologySpread", Action.ADD | Action.UPDATE_POD_LABEL | Action.DELETE),
    ("NodePorts", Action.DELETE),
]


@pytest.mark.parametrize(("plugin", "want"), POD_REGISTERED, ids=[c[0] for c in POD_REGISTERED])
def test_pod_events_registered_as_upstream(plugin: str, want: Action) -> None:
    cfg = parse_config(None)
    p = cfg.plugins.modules[plugin].new(cfg.args.get(plugin), ClusterState())
    got = Action(0)
    for h in p.events_to_register():
        if h.event.resource == "Pod":
            got |= h.event.action
    assert got == want


# ---- NodeVolumeLimits (nodevolumelimits csi_test.go TestCSILimitsQHint, TestCSILimitsAddedPVCQHint,
# TestCSILimitsDeletedVolumeAttachmentQHint) ---
# Not carried over: "return a Queue when a deleted pod has a inline migratable volume" (its EBS volume has an empty ID, which
# berth cannot translate and so never counted: docs/plugins.md; its deletion frees nothing here).
EBS_CLAIM_POD = with_volumes("p", *claims("csi-ebs.csi.aws.com-2"))
CQ = "TestCSILimitsQHint/"
CSI_DELETED = [
    (CQ + "return a Queue when a deleted pod has a PVC", with_volumes("old", *claims("placeholder"), node="node-1"),
     True),
    (CQ + "return a QueueSkip when a deleted pod doesn't have any volume", with_volumes("old", node="node-1"), False),
    (CQ + "return a QueueSkip when a deleted pod is not scheduled.",
     with_volumes("old", *claims("csi-ebs.csi.aws.com-0")), False),
]  # fmt: skip


@pytest.mark.parametrize(("old", "want"), [c[1:] for c in CSI_DELETED], ids=[c[0] for c in CSI_DELETED])
def test_node_volume_limits_pod_deleted_hints_as_upstream(old: dict[str, Any], want: bool) -> None:
    assert retried("NodeVolumeLimits", POD_DELETED, old, EBS_CLAIM_POD) is want


def ns_claim(name: str, ns: str) -> dict[str, Any]:
    raw = claim(name)
    raw["metadata"]["namespace"] = ns
    return raw


CA = "TestCSILimitsAddedPVCQHint/"
CSI_CLAIMS = [
    (CA + "a pod isn't in the same namespace as an added PVC", with_volumes("p", ns="ns1"), ns_claim("pvc", "ns2"),
     False),
    (CA + "a pod is in the same namespace as an added PVC", with_volumes("p", *claims("pvc1"), ns="ns1"),
     ns_claim("pvc1", "ns1"), True),
    (CA + "a pod has an ephemeral volume related to an added PVC",
     k_pod("pod1", "ns1", volumes=[{"name": "ephemeral", "ephemeral": {}}]), ns_claim("pod1-ephemeral", "ns1"), True),
    (CA + "a pod doesn't have the same PVC as an added PVC", with_volumes("p", *claims("pvc1"), ns="ns1"),
     ns_claim("pvc2", "ns1"), False),
    (CA + "a pod doesn't have any PVC attached", with_volumes("p", ns="ns1"), ns_claim("pvc2", "ns1"), False),
]  # fmt: skip


@pytest.mark.parametrize(("pod", "pvc", "want"), [c[1:] for c in CSI_CLAIMS], ids=[c[0] for c in CSI_CLAIMS])
def test_node_volume_limits_claim_hints_as_upstream(pod: dict[str, Any], pvc: dict[str, Any], want: bool) -> None:
    assert retried("NodeVolumeLimits", PVC_ADDED, pvc, pod) is want


def deleted_attachment(attacher: str, pv: str = "") -> dict[str, Any]:
    """A VolumeAttachment on fake-node; without a PV name, its source is an inline spec (berth reads none)."""
    source = {"persistentVolumeName": pv} if pv else {"inlineVolumeSpec": {"csi": {"driver": attacher}}}
    spec = {"nodeName": "fake-node", "attacher": attacher, "source": source}
    return {"apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttachment", "metadata": {"name": "volumeattachment1"},
            "spec": spec}  # fmt: skip


VA_DELETED = ClusterEvent("VolumeAttachment", Action.DELETE)
EBS_INLINE = {"awsElasticBlockStore": {"volumeID": "test"}}
GCE_INLINE = {"gcePersistentDisk": {"pdName": "test"}}
CV = "TestCSILimitsDeletedVolumeAttachmentQHint/"
CSI_ATTACHMENTS = [
    (CV + "a pod has PVC when VolumeAttachment is deleting", with_volumes("p", *claims("pvc1"), ns="ns1"),
     deleted_attachment("test.storage.gke.io", "pv1"), True),
    (CV + "a pod has an Inline Migratable volume (AWSEBSDriver) when VolumeAttachment (AWSEBSDriver) is deleting "
     "(match)", with_volumes("p", EBS_INLINE, ns="ns1"), deleted_attachment("ebs.csi.aws.com"), True),
    (CV + "a pod has an Inline Migratable volume (GCEPDDriver) when VolumeAttachment (AWSEBSDriver) is deleting "
     "(no match)", with_volumes("p", GCE_INLINE, ns="ns1"), deleted_attachment("ebs.csi.aws.com"), False),
    (CV + "a pod has an Inline Migratable volume (AWSEBSDriver) and PVC when VolumeAttachment (AWSEBSDriver) is "
     "deleting", with_volumes("p", EBS_INLINE, *claims("pvc1"), ns="ns1"), deleted_attachment("ebs.csi.aws.com"),
     True),
    (CV + "a pod has an Inline Migratable volume (AWSEBSDriver) and PVC when VolumeAttachment (AWSEBSDriver)  is "
     "deleting", with_volumes("p", EBS_INLINE, *claims("pvc1"), ns="ns1"),
     deleted_attachment("test.storage.gke.io", "pv1"), True),
    (CV + "a pod has no PVC when VolumeAttachment is deleting", with_volumes("p", ns="ns1"),
     deleted_attachment("test.storage.gke.io", "pv1"), False),
    ("a pod with only a generic ephemeral volume is not retried (kube's hint reads persistentVolumeClaim only)",
     k_pod("p", "ns1", volumes=[{"name": "e", "ephemeral": {}}]), deleted_attachment("ebs.csi.aws.com", "pv1"),
     False),
]  # fmt: skip


@pytest.mark.parametrize(("pod", "va", "want"), [c[1:] for c in CSI_ATTACHMENTS], ids=[c[0] for c in CSI_ATTACHMENTS])
def test_node_volume_limits_attachment_hints_as_upstream(pod: dict[str, Any], va: dict[str, Any], want: bool) -> None:
    assert retried("NodeVolumeLimits", VA_DELETED, va, pod) is want
