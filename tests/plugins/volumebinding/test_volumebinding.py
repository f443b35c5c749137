"""VolumeBinding semantics, case by case, against kube-scheduler's behaviour."""

from __future__ import annotations

import pytest

from berth.core.plugins.volumebinding import BIND_CONFLICT, NODE_CONFLICT, NOT_ENOUGH_SPACE, PV_NOT_EXIST
from tests.builders import ZONE, csi_capacity, csi_driver, node, pod, pv, pvc, storage_class, zone_affinity
from tests.plugins.volumebinding.vb_helpers import bindings, decide, reasons, vb_scores

N2 = (node("n1", zone="z1"), node("n2", zone="z2"))
SC = storage_class()

# kube's PostFilter tail when every node is UnschedulableAndUnresolvable
NOT_HELPFUL = (
    "no new claims to deallocate, preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
)
# kube 1.36 after a PreFilter's UnschedulableAndUnresolvable: DynamicResources' PostFilter cannot read the
# state its own PreFilter never wrote (docs/plugins.md, DynamicResources)
NOT_FOUND = "not found"


# ---- PreFilter -----------------------------------------------------------------
def _owned_ephemeral() -> dict:
    p = pod("p")
    p["spec"]["volumes"] = [{"name": "scratch", "ephemeral": {"volumeClaimTemplate": {}}}]
    return p


@pytest.mark.parametrize(
    ("objs", "status", "message"),
    [
        ((pod("p", ("c",)),), "Unschedulable", 'persistentvolumeclaim "c" not found'),
        (
            (_owned_ephemeral(),),
            "Unschedulable",
            'waiting for ephemeral volume controller to create the persistentvolumeclaim "p-scratch"',
        ),
        (
            (_owned_ephemeral(), pvc("p-scratch")),
            "Unschedulable",
            "PVC default/p-scratch was not created for pod default/p (pod is not owner)",
        ),
        (
            (pod("p", ("c",)), pvc("c", volume="gone", status={"phase": "Lost"})),
            "Unschedulable",
            'persistentvolumeclaim "c" bound to non-existent persistentvolume "gone"',
        ),
        (
            (pod("p", ("c",)), pvc("c", metadata={"deletionTimestamp": "2026-11-01T00:00:00Z"})),
            "Unschedulable",
            'persistentvolumeclaim "c" is being deleted',
        ),
        (
            (pod("p", ("c",)), pvc("c"), storage_class(mode="Immediate")),
            "Unschedulable",
            "pod has unbound immediate PersistentVolumeClaims",
        ),
        ((pod("p", ("c",)), pvc("c", cls="")), "Unschedulable", "pod has unbound immediate PersistentVolumeClaims"),
        (
            (pod("p", ("c",)), pvc("c", cls="nowhere")),
            "Unschedulable",
            "pod has unbound immediate PersistentVolumeClaims",
        ),
        (
            (pod("p", ("c",)), pvc("c", volume="pv1"), SC, pv("pv1", "10Gi")),
            "Unschedulable",
            "pod has unbound immediate PersistentVolumeClaims",
        ),
        (
            (pod("p", ("c",)), pvc("c"), storage_class(mode=None)),
            "Error",
            'VolumeBindingMode not set for StorageClass "local"',
        ),
    ],
)
def test_prefilter(objs: tuple, status: str, message: str) -> None:
    d = decide(*N2, *objs)
    assert d.status == status
    assert message in d.message
    if status == "Unschedulable":
        assert d.message == f"0/2 nodes are available: {message}. {NOT_FOUND}"
        assert all(r.reasons == [message] for r in d.nodes.values())


def test_owned_ephemeral_claim_is_used() -> None:
    claim = pvc(
        "p-scratch", metadata={"ownerReferences": [{"kind": "Pod", "name": "p", "uid": "uid-p", "controller": True}]}
    )
    d = decide(*N2, SC, _owned_ephemeral(), claim, pv("pv1", "10Gi", on="n2"))
    assert (d.status, d.node) == ("Scheduled", "n2")


def test_pod_without_claims_skips_volume_binding() -> None:
    d = decide(*N2, pod("p"))
    assert d.status == "Scheduled"
    assert vb_scores(d) == {"n1": 0, "n2": 0}
    assert d.node == "n1"  # equal totals: the node name decides


# ---- bound claims ----------------------------------------------------------------
def test_bound_claim_follows_pv_affinity() -> None:
    d = decide(
        *N2,
        pod("p", ("c",)),
        pvc("c", volume="pv1", bound=True),
        pv("pv1", "10Gi", on="n2", phase="Bound", claim="default/c"),
    )
    assert d.node == "n2"
    assert reasons(d)["n1"] == [NODE_CONFLICT]


# VolumeBinding's own Filter reasons for a missing PV: in kube's default profile VolumeZone's
# PreFilter turns such a pod away first (`persistentvolume "gone" not found`), so it is left out here
NO_VOLUME_ZONE = {"profiles": [{"plugins": {"multiPoint": {"disabled": [{"name": "VolumeZone"}]}}}]}


def test_bound_claim_with_missing_pv() -> None:
    d = decide(*N2, pod("p", ("c",)), pvc("c", volume="gone", bound=True), config=NO_VOLUME_ZONE)
    assert d.status == "Unschedulable"
    assert reasons(d) == {"n1": [PV_NOT_EXIST], "n2": [PV_NOT_EXIST]}
    assert d.message == f"0/2 nodes are available: 2 {PV_NOT_EXIST}. {NOT_HELPFUL}"


def test_conflict_stops_before_missing_pv() -> None:
    objs = (
        pod("p", ("a", "b")),
        pvc("a", volume="pv-a", bound=True),
        pvc("b", volume="gone", bound=True),
        pv("pv-a", "1Gi", on="n1", phase="Bound"),
    )
    assert reasons(decide(*N2, *objs, config=NO_VOLUME_ZONE)) == {"n1": [PV_NOT_EXIST], "n2": [NODE_CONFLICT]}


def test_in_the_default_profile_volume_zone_turns_a_missing_pv_away_first() -> None:
    d = decide(*N2, pod("p", ("c",)), pvc("c", volume="gone", bound=True))
    assert d.message == f'0/2 nodes are available: persistentvolume "gone" not found. {NOT_FOUND}'


# ---- WaitForFirstConsumer static matching -----------------------------------------------
def test_smallest_fitting_pv_per_node_and_tightest_fit_wins() -> None:
    # The upstream scorer test: 50Gi claim, node-a best PV 200Gi (25), node-b 100Gi (50).
    objs = (
        SC,
        pod("p", ("c",)),
        pvc("c", "50Gi"),
        pv("a-200", "200Gi", on="n1"),
        pv("a-500", "500Gi", on="n1"),
        pv("b-100", "100Gi", on="n2"),
    )
    d = decide(*N2, *objs)
    assert vb_scores(d) == {"n1": 25, "n2": 50}
    assert (d.node, bindings(d)) == ("n2", [("default/c", "b-100")])


def test_two_classes_average_with_half_rounded_away() -> None:
    objs = (
        SC,
        storage_class("ssd"),
        pod("p", ("a", "b")),
        pvc("a", "50Gi"),
        pvc("b", "100Gi", cls="ssd"),
        pv("n1-local", "200Gi", on="n1"),
        pv("n1-ssd", "200Gi", on="n1", cls="ssd"),
        pv("n2-local", "100Gi", on="n2"),
        pv("n2-ssd", "100Gi", on="n2", cls="ssd"),
    )
    assert vb_scores(decide(*N2, *objs)) == {"n1": 38, "n2": 75}


def test_equal_capacity_ties_go_to_pv_name() -> None:
    objs = (
        SC,
        pod("p", ("c",)),
        pvc("c", "10Gi"),
        pv("pv-b", "10Gi", on="n1"),
        pv("pv-a", "10Gi", on="n1"),
        pv("pv-c", "10Gi", on="n1"),
    )
    assert bindings(decide(node("n1"), *objs)) == [("default/c", "pv-a")]


@pytest.mark.parametrize(
    ("request_size", "want"),
    [
        ("1E", "local001"),  # successful-match-very-large
        ("800E", "local002"),  # successful-match-exact-extremely-large
        ("950E", None),  # successful-no-match-way-too-large
    ],
)
def test_sizes_past_int64_match_exactly(request_size: str, want: str | None) -> None:
    """kube's TestFindMatchVolumeWithNode (pkg/controller/volume/persistentvolume/index_test.go): PVs of
    200E and 800E bytes, past int64, matched by Quantity.Cmp, exactly."""
    objs = (
        SC,
        pod("p", ("c",)),
        pvc("c", request_size),
        pv("local001", "200E", on="n1"),
        pv("local002", "800E", on="n1"),
    )
    d = decide(node("n1"), *objs)
    if want is None:
        assert d.status == "Unschedulable" and "didn't find available persistent volumes to bind" in d.message
    else:
        assert (d.node, bindings(d)) == ("n1", [("default/c", want)])


def test_claims_are_matched_smallest_request_first() -> None:
    objs = (
        SC,
        pod("p", ("big", "small")),
        pvc("big", "50Gi"),
        pvc("small", "10Gi"),
        pv("pv-60", "60Gi", on="n1"),
        pv("pv-100", "100Gi", on="n1"),
    )
    assert bindings(decide(node("n1"), *objs)) == [("default/big", "pv-100"), ("default/small", "pv-60")]


def test_a_pv_is_not_taken_twice_by_one_pod() -> None:
    objs = (SC, pod("p", ("a", "b")), pvc("a", "10Gi"), pvc("b", "10Gi"), pv("pv-1", "10Gi", on="n1"))
    d = decide(node("n1"), *objs)
    assert reasons(d)["n1"] == [BIND_CONFLICT]


@pytest.mark.parametrize(
    ("volume", "claim"),
    [
        (pv("x", "10Gi", on="n1", modes=("ReadOnlyMany",)), pvc("c")),
        (pv("x", "10Gi", on="n1", spec={"volumeMode": "Block"}), pvc("c")),
        (pv("x", "10Gi", on="n1", phase="Released"), pvc("c")),
        (pv("x", "10Gi", on="n1", claim="other/claim"), pvc("c")),
        (pv("x", "10Gi", on="n1", metadata={"deletionTimestamp": "2026-11-01T00:00:00Z"}), pvc("c")),
        (pv("x", "9Gi", on="n1"), pvc("c")),
        (pv("x", "10Gi", on="n1", cls="other"), pvc("c")),
        (
            pv("x", "10Gi", on="n1", metadata={"labels": {"tier": "hdd"}}),
            pvc("c", spec={"selector": {"matchLabels": {"tier": "ssd"}}}),
        ),
        (pv("x", "10Gi", on="n1"), pvc("c", modes=("ReadWriteOnce", "ReadWriteMany"))),
    ],
    ids=[
        "access-mode",
        "volume-mode",
        "phase",
        "claimed-by-other",
        "deleting",
        "too-small",
        "class",
        "selector",
        "modes-superset",
    ],
)
def test_pv_that_does_not_match(volume: dict, claim: dict) -> None:
    d = decide(node("n1"), SC, pod("p", ("c",)), claim, volume)
    assert (d.status, reasons(d)["n1"]) == ("Unschedulable", [BIND_CONFLICT])


def test_matching_selector_and_modes() -> None:
    volume = pv("x", "10Gi", on="n1", modes=("ReadWriteOnce", "ReadOnlyMany"), metadata={"labels": {"tier": "ssd"}})
    claim = pvc(
        "c",
        modes=("ReadOnlyMany",),
        spec={"selector": {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["ssd"]}]}},
    )
    assert bindings(decide(node("n1"), SC, pod("p", ("c",)), claim, volume)) == [("default/c", "x")]


def test_prebound_pv_wins_where_it_fits_and_blocks_elsewhere() -> None:
    objs = (
        SC,
        pod("p", ("c",)),
        pvc("c", "10Gi"),
        pv("mine", "100Gi", on="n1", claim="default/c"),
        pv("free", "10Gi", on="n2"),
    )
    d = decide(*N2, *objs)
    assert bindings(d) == [("default/c", "mine")]
    assert reasons(d)["n2"] == [BIND_CONFLICT]  # kube's fail-prebound-node-affinity


def test_zonal_pv_matches_every_node_in_its_zone() -> None:
    nodes = (node("a1", zone="z1"), node("a2", zone="z1"), node("b1", zone="z2"))
    objs = (SC, pod("p", ("c",)), pvc("c", "10Gi"), pv("zonal", "20Gi", affinity=zone_affinity("z1")))
    d = decide(*nodes, *objs)
    assert reasons(d)["b1"] == [BIND_CONFLICT]
    assert (d.node, vb_scores(d)) == ("a1", {"a1": 50, "a2": 50})


def test_reasons_keep_kube_order() -> None:
    objs = (
        SC,
        pod("p", ("bound", "new")),
        pvc("bound", volume="pv-b", bound=True),
        pv("pv-b", "1Gi", on="n2", phase="Bound"),
        pvc("new", "10Gi"),
    )
    assert reasons(decide(*N2, *objs))["n1"] == [NODE_CONFLICT, BIND_CONFLICT]


# ---- selected-node fast path and dynamic provisioning -------------------------------------------
PROV = storage_class("topo", provisioner="topolvm.io")


def test_selected_node_fast_path() -> None:
    claim = pvc("c", cls="topo", annotations={"volume.kubernetes.io/selected-node": "n2"})
    d = decide(*N2, PROV, pod("p", ("c",)), claim, pv("free", "10Gi", on="n1", cls="topo"))
    assert reasons(d)["n1"] == [BIND_CONFLICT]
    assert (d.node, bindings(d)) == ("n2", [("default/c", "provision:n2")])


def test_no_provisioner_means_no_dynamic_fallback() -> None:
    claim = pvc("c", annotations={"volume.kubernetes.io/selected-node": "n1"})
    assert reasons(decide(*N2, SC, pod("p", ("c",)), claim)) == {"n1": [BIND_CONFLICT], "n2": [BIND_CONFLICT]}


def test_allowed_topologies() -> None:
    sc = storage_class("topo", provisioner="topolvm.io", topologies=[{ZONE: ["z2"]}])
    d = decide(*N2, sc, pod("p", ("c",)), pvc("c", cls="topo"))
    assert reasons(d)["n1"] == [BIND_CONFLICT]
    assert bindings(d) == [("default/c", "provision:n2")]


def test_capacity_tracking() -> None:
    objs = (
        PROV,
        csi_driver("topolvm.io"),
        pod("p", ("c",)),
        pvc("c", "10Gi", cls="topo"),
        csi_capacity("cap-n1", "topo", capacity="100Gi", on="n1"),
        csi_capacity("cap-n2", "topo", capacity="5Gi", on="n2"),
    )
    d = decide(*N2, *objs)
    assert reasons(d)["n2"] == [NOT_ENOUGH_SPACE]
    assert (d.node, vb_scores(d)) == ("n1", {"n1": 10})  # 10Gi of a 100Gi pool, tight-fit shape


@pytest.mark.parametrize(
    ("cap", "fits"),
    [
        (csi_capacity("x", "topo", capacity="100Gi", max_size="5Gi", on="n1"), False),
        (csi_capacity("x", "topo", capacity="1Gi", max_size="20Gi", on="n1"), True),
        (csi_capacity("x", "topo", on="n1"), False),
        (csi_capacity("x", "topo", capacity="100Gi", topology=None), False),
        (csi_capacity("x", "topo", capacity="100Gi", topology={}), True),
        (csi_capacity("x", "other", capacity="100Gi", on="n1"), False),
    ],
    ids=["max-size-too-small", "max-size-wins", "no-limit", "no-topology", "empty-topology", "other-class"],
)
def test_capacity_object_rules(cap: dict, fits: bool) -> None:
    d = decide(node("n1"), PROV, csi_driver("topolvm.io"), pod("p", ("c",)), pvc("c", "10Gi", cls="topo"), cap)
    assert d.status == ("Scheduled" if fits else "Unschedulable")
    if not fits:
        assert reasons(d)["n1"] == [NOT_ENOUGH_SPACE]


def test_driver_without_capacity_tracking_always_fits() -> None:
    d = decide(node("n1"), PROV, csi_driver("topolvm.io", capacity=False), pod("p", ("c",)), pvc("c", cls="topo"))
    assert (d.status, vb_scores(d)) == ("Scheduled", {"n1": 0})


def test_static_and_dynamic_on_one_node_scores_only_static() -> None:
    objs = (
        PROV,
        csi_driver("topolvm.io"),
        pod("p", ("a", "b")),
        pvc("a", "10Gi", cls="topo"),
        pvc("b", "50Gi", cls="topo"),
        pv("n1-20", "20Gi", on="n1", cls="topo"),
        csi_capacity("cap", "topo", capacity="1Ti", on="n1"),
    )
    d = decide(node("n1"), *objs)
    assert bindings(d) == [("default/a", "n1-20"), ("default/b", "provision:n1")]
    assert vb_scores(d) == {"n1": 50}


def test_two_claims_share_one_pool_when_scored() -> None:
    objs = (
        PROV,
        csi_driver("topolvm.io"),
        pod("p", ("a", "b")),
        pvc("a", "50Gi", cls="topo"),
        pvc("b", "50Gi", cls="topo"),
        csi_capacity("cap", "topo", capacity="100Gi", on="n1"),
    )
    assert vb_scores(decide(node("n1"), *objs)) == {"n1": 100}


# ---- scoring args --------------------------------------------------------------------------
def _scored_pair(config: dict | None = None, weight: str | None = None) -> dict[str, int]:
    objs = (
        SC,
        storage_class("ssd", weight=weight),
        pod("p", ("a", "b")),
        pvc("a", "50Gi"),
        pvc("b", "100Gi", cls="ssd"),
        pv("n1-local", "200Gi", on="n1"),
        pv("n1-ssd", "100Gi", on="n1", cls="ssd"),
    )
    return vb_scores(decide(node("n1"), *objs, config=config))


def args(**a: object) -> dict:
    return {"profiles": [{"pluginConfig": [{"name": "VolumeBinding", "args": a}]}]}


def test_class_weights_from_args_and_annotation() -> None:
    assert _scored_pair() == {"n1": 63}  # (25 + 100) / 2 = 62.5 -> 63
    assert _scored_pair(weight="3") == {"n1": 81}  # (25 + 3*100) / 4 = 81.25
    assert _scored_pair(args(storageClassWeights={"local": 3}), weight="3") == {
        "n1": 63
    }  # args win: (3*25 + 3*100) / 6 = 62.5
    assert _scored_pair(args(storageClassWeights={"ssd": 1}), weight="3") == {"n1": 63}


@pytest.mark.parametrize(
    ("shape", "size", "expected"),
    [
        (
            [{"utilization": 0, "score": 0}, {"utilization": 50, "score": 3}, {"utilization": 100, "score": 5}],
            "200Gi",
            15,
        ),
        (
            [{"utilization": 0, "score": 0}, {"utilization": 50, "score": 3}, {"utilization": 100, "score": 5}],
            "100Gi",
            30,
        ),
        ([{"utilization": 0, "score": 10}, {"utilization": 100, "score": 0}], "200Gi", 75),
        ([{"utilization": 0, "score": 10}, {"utilization": 30, "score": 0}], "500Gi", 67),  # Go truncation, not floor
        ([{"utilization": 50, "score": 5}], "500Gi", 50),
    ],
)
def test_shapes(shape: list, size: str, expected: int) -> None:
    d = decide(node("n1"), SC, pod("p", ("c",)), pvc("c", "50Gi"), pv("x", size, on="n1"), config=args(shape=shape))
    assert vb_scores(d) == {"n1": expected}
