"""The generator's output: deterministic, readable by berth, shaped like a real cluster's history."""

from __future__ import annotations

import itertools
from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from berth.core.api.meta.normalise import parse_time
from berth.core.api.watch import WatchEvent, parse_event
from berth.core.generate import PRESETS, Params, generate
from tests.generate.conftest import encoded

T0 = datetime(2026, 11, 2, 8, 0, tzinfo=UTC)
TINY = Params(nodes=6, zones=2, racks_per_zone=1, local_pvs=24, zonal_pvs=4, pods=30, duration=600, burst=5)


def key(obj: dict[str, Any]) -> str:
    meta = obj["metadata"]
    return f"{obj['kind']} {meta.get('namespace', '')}/{meta['name']}"


def pending(ev: WatchEvent) -> bool:
    return ev.type == "ADDED" and ev.object["kind"] == "Pod" and not ev.object["spec"].get("nodeName")


def test_same_seed_same_bytes() -> None:
    assert encoded(list(generate(TINY, 7))) == encoded(list(generate(TINY, 7)))


def test_another_seed_another_log() -> None:
    assert encoded(list(generate(TINY, 7))) != encoded(list(generate(TINY, 8)))


@pytest.mark.parametrize("name", ["small", "cold_burst"])
def test_every_line_parses_and_every_object_converts(name: str, request: pytest.FixtureRequest) -> None:
    events: list[WatchEvent] = request.getfixturevalue(name)
    for number, line in enumerate(encoded(events).splitlines(), start=1):
        ev = parse_event(line, number)
        assert ev.model is not None, f"line {number}: berth does not read {ev.kind}"


def test_kinds_in_the_small_sample(small: list[WatchEvent]) -> None:
    kinds = {ev.object["kind"] for ev in small}
    assert kinds == {
        "CSIDriver",
        "CSIStorageCapacity",
        "CapacityBuffer",
        "Deployment",
        "Job",
        "Node",
        "NodeMetric",
        "PersistentVolume",
        "PersistentVolumeClaim",
        "Pod",
        "PodTemplate",
        "ReplicaSet",
        "ResourceQuota",
        "StatefulSet",
        "StorageClass",
    }


def test_versions_increase_and_time_moves_forward(small: list[WatchEvent]) -> None:
    rvs = [int(ev.object["metadata"]["resourceVersion"]) for ev in small]
    assert rvs == sorted(set(rvs))
    stamps = [ev.ts for ev in small]
    assert all(a is not None and b is not None and a <= b for a, b in itertools.pairwise(stamps))
    setup = [ev for ev in small if ev.ts == T0 and ev.type == "ADDED"]
    assert {ev.object["kind"] for ev in setup} >= {"Node", "PersistentVolume", "StorageClass", "NodeMetric"}
    assert small[-1].ts is not None and small[-1].ts >= T0 + timedelta(minutes=25)


def test_objects_look_like_the_api_servers(small: list[WatchEvent]) -> None:
    for ev in small:
        meta = ev.object["metadata"]
        assert ev.object["apiVersion"]
        assert meta["name"] and meta["uid"] and meta["resourceVersion"].isdigit()
        assert parse_time(meta["creationTimestamp"]) <= (ev.ts or T0)
    uids = Counter((ev.object["metadata"]["uid"], key(ev.object)) for ev in small)
    assert len({uid for uid, _ in uids}) == len(uids), "one uid per object"


def test_nothing_is_bound(small: list[WatchEvent]) -> None:
    for ev in small:
        obj = ev.object
        if obj["kind"] == "Pod" and obj["spec"].get("nodeName"):
            assert ev.ts == T0 and obj["status"]["phase"] == "Running", "only pods from before t0 run"
        if obj["kind"] == "PersistentVolume":
            assert obj["status"]["phase"] == "Available" and "claimRef" not in obj["spec"]
        if obj["kind"] == "PersistentVolumeClaim":
            assert obj["status"]["phase"] == "Pending" and "volumeName" not in obj["spec"]


def test_claims_come_before_their_pods_and_deletions_after_adds(small: list[WatchEvent]) -> None:
    live: set[str] = set()
    claims_checked = 0
    for ev in small:
        obj, k = ev.object, key(ev.object)
        if ev.type == "ADDED":
            assert k not in live, f"{k} added twice"
            live.add(k)
        else:
            assert k in live, f"{ev.type} of {k}, which does not exist"
            if ev.type == "DELETED":
                live.remove(k)
        if pending(ev):
            ns = obj["metadata"]["namespace"]
            for v in obj["spec"]["volumes"]:
                if "persistentVolumeClaim" in v:
                    assert f"PersistentVolumeClaim {ns}/{v['persistentVolumeClaim']['claimName']}" in live
                    claims_checked += 1
    assert claims_checked > 20


def test_churn_deletes_pods_and_their_claims(small: list[WatchEvent]) -> None:
    deleted = Counter(ev.object["kind"] for ev in small if ev.type == "DELETED")
    assert deleted["Pod"] > 10 and deleted["PersistentVolumeClaim"] > 0
    for ev in small:
        if ev.type == "DELETED" and ev.object["kind"] == "Pod":
            assert ev.object["metadata"]["deletionTimestamp"]


def test_node_metrics_report_periodically(small: list[WatchEvent]) -> None:
    reports: dict[str, list[datetime]] = {}
    for ev in small:
        if ev.object["kind"] == "NodeMetric":
            update = parse_time(ev.object["status"]["updateTime"])
            if ev.type == "MODIFIED":
                assert update == ev.ts
            else:
                assert T0 - timedelta(seconds=60) <= update < T0
            reports.setdefault(ev.object["metadata"]["name"], []).append(update)
    assert len(reports) == 30
    for times in reports.values():
        assert {(b - a).total_seconds() for a, b in itertools.pairwise(times)} == {60}
        assert len(times) >= 30


def test_small_preset_shape(small: list[WatchEvent]) -> None:
    added = Counter(ev.object["kind"] for ev in small if ev.type == "ADDED")
    assert added["Node"] == 30
    assert added["PersistentVolume"] == 330
    assert sum(pending(ev) for ev in small) == 150
    assert added["CapacityBuffer"] == 3
    assert 1000 < len(small) < 5000
    sizes = Counter(ev.object["spec"]["capacity"]["storage"] for ev in small if ev.object["kind"] == "PersistentVolume")
    assert set(sizes) == {"10Gi", "100Gi", "1Ti"}
    classes = {ev.object["spec"]["storageClassName"] for ev in small if ev.object["kind"] == "PersistentVolume"}
    assert classes == {"local-ssd", "local-hdd", "zonal-ssd"}
    zones = {
        ev.object["metadata"]["labels"]["topology.kubernetes.io/zone"] for ev in small if ev.object["kind"] == "Node"
    }
    assert zones == {"zone-a", "zone-b", "zone-c"}


def cpu_usage(ev: WatchEvent) -> str:
    return str(ev.object["status"]["nodeMetric"]["nodeUsage"]["resources"]["cpu"])


def test_cold_burst_preset_shape(cold_burst: list[WatchEvent]) -> None:
    added = Counter(ev.object["kind"] for ev in cold_burst if ev.type == "ADDED")
    assert added["Node"] == 8 and added["PersistentVolume"] == 0
    burst = [ev for ev in cold_burst if pending(ev)]
    assert len(burst) == 50
    first, last = burst[0].ts, burst[-1].ts
    assert first is not None and last is not None and last - first < timedelta(seconds=1)
    # one node idles at a few percent while the others are warm
    usage = {ev.object["metadata"]["name"]: cpu_usage(ev) for ev in cold_burst if ev.object["kind"] == "NodeMetric"}
    millis = sorted(int(v[:-1]) if v.endswith("m") else int(v) * 1000 for v in usage.values())
    assert millis[0] < 0.05 * 31_620 and millis[1] > 0.1 * 31_620


def test_bench_preset_shape_streams() -> None:
    counts: Counter[str] = Counter()
    events = 0
    for ev in generate(PRESETS["bench"], 1):
        events += 1
        if ev.type == "ADDED":
            counts[ev.object["kind"]] += 1
            counts["pending"] += pending(ev)
    assert counts["Node"] == 5000
    assert counts["PersistentVolume"] == 100_000
    assert counts["pending"] == 20_000
    assert 190_000 <= events <= 210_000


def _without_placement(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _without_placement(v) for k, v in obj.items() if k not in ("affinity", "topologySpreadConstraints")}
    if isinstance(obj, list):
        return [_without_placement(v) for v in obj]
    return obj


def test_placement_rules_change_nothing_else() -> None:
    """Placement is drawn from its own generator: without it every other byte is the same."""
    on, off = list(generate(TINY.replace(pods=120), 3)), list(generate(TINY.replace(pods=120, placement=0.0), 3))
    assert [(e.type, e.ts, _without_placement(e.object)) for e in on] == [
        (e.type, e.ts, _without_placement(e.object)) for e in off
    ]
    assert encoded(on) != encoded(off)
    assert "topologySpreadConstraints" not in encoded(off).decode()


def test_workloads_keep_their_replicas_apart(small: list[WatchEvent]) -> None:
    host, zone = "kubernetes.io/hostname", "topology.kubernetes.io/zone"
    by_kind: dict[str, list[dict[str, Any]]] = {"StatefulSet": [], "Deployment": []}
    pods = [e.object for e in small if pending(e)]
    claims = {key(e.object) for e in small if e.object["kind"] == "PersistentVolumeClaim"}
    for pod in pods:
        spec, meta = pod["spec"], pod["metadata"]
        if "topologySpreadConstraints" not in spec:
            continue
        app = meta["labels"]["app"]
        selector = {"matchLabels": {"app": app}}
        assert spec["topologySpreadConstraints"] == [
            {"maxSkew": 1, "topologyKey": zone, "whenUnsatisfiable": "DoNotSchedule", "labelSelector": selector}
        ]
        (ref,) = meta["ownerReferences"]
        anti = spec["affinity"]["podAntiAffinity"]
        term = {"labelSelector": selector, "topologyKey": host}
        if ref["kind"] == "StatefulSet":
            by_kind["StatefulSet"].append(pod)
            assert ref["name"] == app and meta["name"].startswith(f"{app}-")
            assert anti == {"requiredDuringSchedulingIgnoredDuringExecution": [term]}
            for v in spec["volumes"]:
                if "persistentVolumeClaim" in v:  # volumeClaimTemplates naming: data-<sts>-<ordinal>
                    name = v["persistentVolumeClaim"]["claimName"]
                    assert name == f"{v['name']}-{meta['name']}"
                    assert f"PersistentVolumeClaim {meta['namespace']}/{name}" in claims
        else:
            by_kind["Deployment"].append(pod)
            assert ref["kind"] == "ReplicaSet" and ref["name"] == f"{app}-{meta['labels']['pod-template-hash']}"
            assert anti == {
                "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 100, "podAffinityTerm": term}]
            }
    assert len(by_kind["StatefulSet"]) > 20 and by_kind["Deployment"]
    # the workload's template carries the same rules as its pods
    templates = {
        key(e.object): e.object["spec"]["template"]["spec"]
        for e in small
        if e.object["kind"] in ("StatefulSet", "Deployment", "ReplicaSet") and e.type == "ADDED"
    }
    for pod in by_kind["StatefulSet"]:
        ref = pod["metadata"]["ownerReferences"][0]
        template = templates[f"StatefulSet {pod['metadata']['namespace']}/{ref['name']}"]
        assert template["affinity"] == pod["spec"]["affinity"]


def test_bound_pods_arrive_running_and_leave_gracefully() -> None:
    params = PRESETS["steady"].replace(nodes=12, zones=1, racks_per_zone=2, pods=40, duration=600, lifetime=60)
    events = list(generate(params, 1))
    nodes = {ev.object["metadata"]["name"] for ev in events if ev.object["kind"] == "Node"}
    arrived = [ev for ev in events if ev.type == "ADDED" and ev.object["kind"] == "Pod" and ev.ts != params.start]
    assert len(arrived) == 40
    assert all(ev.object["spec"]["nodeName"] in nodes and ev.object["status"]["phase"] == "Running" for ev in arrived)
    # every arrival is marked for deletion, then deleted
    for kind in ("MODIFIED", "DELETED"):
        gone = [ev for ev in events if ev.type == kind and ev.object["kind"] == "Pod"]
        assert len(gone) == 40 and all("deletionTimestamp" in ev.object["metadata"] for ev in gone)
    reports = sum(1 for ev in events if ev.object["kind"] == "NodeMetric")
    assert reports == 12 * 11  # one at t0 and one a minute per node until the end
