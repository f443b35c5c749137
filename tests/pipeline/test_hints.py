"""Queueing hints of the plugins added for kube's default profile: a pod a plugin turned away is retried
after a change that can make it fit, and not after one that cannot (kube's QueueingHintFn)."""

from __future__ import annotations

from typing import Any

from berth.core.api.kinds import convert
from berth.core.config.kubeschedulerconfig import parse_config
from berth.core.framework.events import claim_hint
from berth.core.pipeline.scorer import ScorerEngine
from tests.builders import HOST, ZONE, csi_node, node, pod, pvc
from tests.pipeline.test_engine import Log, replay
from tests.plugins.interpod.builders import affinity, spread, term

EXTRA = ("InterPodAffinity", "PodTopologySpread", "NodePorts", "VolumeRestrictions", "NodeVolumeLimits")
KEY = "default/p"


def engine() -> ScorerEngine:
    """berth's profile plus the filters these hints belong to."""
    return ScorerEngine(
        parse_config({"profiles": [{"plugins": {"filter": {"enabled": [{"name": n} for n in EXTRA]}}}]})
    )


def bound(name: str, on: str, labels: dict[str, str], **spec: Any) -> dict[str, Any]:
    return pod(name, cpu="10m", node_name=on, metadata={"labels": labels}, **spec)


def incoming(labels: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    return pod("p", metadata={"labels": labels or {"app": "db"}}, **spec)


def no_zone(name: str, cpu: str) -> dict[str, Any]:
    raw = node(name, cpu=cpu)
    del raw["metadata"]["labels"][ZONE]
    return raw


def run(log: Log) -> tuple[int, list[tuple[str, str | None]]]:
    """How many times the pod was tried, and its decisions."""
    eng, out = replay(log, engine())
    return eng.queue.attempts(KEY), [(r.status, r.node) for r in out if r.pod == KEY]


def test_inter_pod_affinity_an_added_pod_it_matches() -> None:
    log = Log().add(node("n1")).add(node("n2"))
    log.add(incoming(affinity=affinity(required=[term({"app": "cache"}, HOST)])), at=1)
    log.add(bound("web", "n1", {"app": "web"}), at=5)  # matches no term: not retried
    assert run(log)[0] == 1
    log.add(bound("cache", "n2", {"app": "cache"}), at=10)
    assert run(log)[1] == [("Unschedulable", None), ("Scheduled", "n2")]


def test_inter_pod_affinity_a_deleted_pod_its_anti_affinity_matched() -> None:
    log = Log().add(node("n1")).add(bound("db-0", "n1", {"app": "db"})).add(bound("web", "n1", {"app": "web"}))
    log.add(incoming(affinity=affinity(anti=[term({"app": "db"}, HOST)])), at=1)
    log.add(bound("web", "n1", {"app": "web"}), "DELETED", at=5)
    assert run(log)[0] == 1
    log.add(bound("db-0", "n1", {"app": "db"}), "DELETED", at=10)
    assert run(log)[1] == [("Unschedulable", None), ("Scheduled", "n1")]


def test_inter_pod_affinity_a_deleted_pod_whose_anti_affinity_blocked() -> None:
    """berth's addition to kube's hint: the leaving pod's own anti-affinity had turned the pod away."""
    guard = bound("guard", "n1", {"app": "guard"}, affinity=affinity(anti=[term({"app": "db"}, HOST)]))
    log = Log().add(node("n1")).add(guard).add(bound("web", "n1", {"app": "web"}))
    log.add(incoming(), at=1)
    log.add(bound("web", "n1", {"app": "web"}), "DELETED", at=5)
    assert run(log)[0] == 1
    log.add(guard, "DELETED", at=10)
    assert run(log)[1] == [("Unschedulable", None), ("Scheduled", "n1")]


def test_inter_pod_affinity_a_node_with_a_terms_topology_key() -> None:
    log = Log().add(node("n1")).add(bound("cache", "n1", {"app": "cache"}))
    log.add(incoming(affinity=affinity(required=[term({"app": "cache"}, "rack")])), at=1)
    log.add(node("n2"), at=5)  # no `rack` label: not retried
    assert run(log)[0] == 1
    log.add(node("n3", labels={"rack": "r1"}), at=10)
    assert run(log)[0] == 2


def zone_spread_log() -> Log:
    """z1 holds a db pod, z2's only node is too small: the pod fits nowhere (maxSkew 1 on the zone)."""
    log = Log().add(node("n1", zone="z1")).add(node("n2", zone="z2", cpu="50m"))
    log.add(bound("db-0", "n1", {"app": "db"}))
    return log.add(incoming(topologySpreadConstraints=[spread(ZONE, {"app": "db"})]), at=1)


def test_pod_topology_spread_an_added_pod_its_selector_matches() -> None:
    log = zone_spread_log()
    log.add(bound("web", "n2", {"app": "web"}), at=5)
    log.add(pod("other-ns", cpu="10m", ns="other", node_name="n2", metadata={"labels": {"app": "db"}}), at=6)
    assert run(log)[0] == 1
    log.add(bound("db-1", "n2", {"app": "db"}), at=10)  # z2 has one now: z1 takes the next
    assert run(log)[1] == [("Unschedulable", None), ("Scheduled", "n1")]


def test_pod_topology_spread_a_node_with_every_key() -> None:
    log = zone_spread_log()
    log.add(no_zone("n3", cpu="50m"), at=5)  # neither plugin that turned the pod away can pass it
    assert run(log)[0] == 1
    log.add(node("n4", zone="z3"), at=10)
    assert run(log)[1] == [("Unschedulable", None), ("Scheduled", "n4")]


TAINT = {"key": "dedicated", "value": "x", "effect": "NoSchedule"}


def test_taint_toleration_a_node_whose_taints_are_tolerated_now() -> None:
    log = Log().add(node("n1", taints=[TAINT])).add(incoming(), at=1)
    log.add(node("n1", taints=[TAINT, {"key": "other", "effect": "NoExecute"}]), "MODIFIED", at=5)
    assert run(log)[0] == 1
    log.add(node("n1", taints=[{"key": "soft", "effect": "PreferNoSchedule"}]), "MODIFIED", at=10)
    assert run(log)[1] == [("Unschedulable", None), ("Scheduled", "n1")]


def test_node_affinity_a_node_that_matches_the_selector() -> None:
    log = Log().add(node("n1")).add(incoming(nodeSelector={"disk": "ssd"}), at=1)
    log.add(node("n2", labels={"disk": "hdd"}), at=5)
    assert run(log)[0] == 1
    log.add(node("n3", labels={"disk": "ssd"}), at=10)
    assert run(log)[1] == [("Unschedulable", None), ("Scheduled", "n3")]


def test_node_resources_fit_a_node_big_enough_when_empty() -> None:
    log = Log().add(node("n1", cpu="2")).add(pod("p", cpu="4"), at=1)
    log.add(node("n2", cpu="2"), at=5)
    assert run(log)[0] == 1
    log.add(node("n3", cpu="8"), at=10)
    assert run(log)[1] == [("Unschedulable", None), ("Scheduled", "n3")]


def with_port(port: int) -> dict[str, Any]:
    return {"containers": [{"name": "main", "image": "app", "ports": [{"hostPort": port}]}]}


def test_node_ports_a_deleted_pod_that_held_the_port() -> None:
    holder, other = bound("holder", "n1", {}, **with_port(80)), bound("other", "n1", {}, **with_port(81))
    log = Log().add(node("n1")).add(holder).add(other).add(incoming(**with_port(80)), at=1)
    log.add(other, "DELETED", at=5)
    assert run(log)[0] == 1
    log.add(holder, "DELETED", at=10)
    assert run(log)[1] == [("Unschedulable", None), ("Scheduled", "n1")]


def with_volume(kind: str, source: dict[str, Any]) -> dict[str, Any]:
    return {"volumes": [{"name": "v", kind: source}]}


def test_volume_restrictions_a_deleted_pod_that_held_the_disk() -> None:
    gce = "gcePersistentDisk"
    holder = bound("holder", "n1", {}, **with_volume(gce, {"pdName": "d1"}))
    other = bound("other", "n1", {}, **with_volume(gce, {"pdName": "d2"}))
    log = Log().add(node("n1")).add(holder).add(other).add(incoming(**with_volume(gce, {"pdName": "d1"})), at=1)
    log.add(other, "DELETED", at=5)
    assert run(log)[0] == 1
    log.add(holder, "DELETED", at=10)
    assert run(log)[1] == [("Unschedulable", None), ("Scheduled", "n1")]


def test_node_volume_limits_a_deleted_pod_with_volumes() -> None:
    """An inline EBS volume counts against ebs.csi.aws.com's limit of 1 on n1."""
    ebs = "awsElasticBlockStore"
    holder = bound("holder", "n1", {}, **with_volume(ebs, {"volumeID": "vol-a"}))
    plain = bound("plain", "n1", {})
    log = Log().add(node("n1")).add(csi_node("n1", **{"ebs.csi.aws.com": 1})).add(holder).add(plain)
    log.add(incoming(**with_volume(ebs, {"volumeID": "vol-b"})), at=1)
    log.add(plain, "DELETED", at=5)  # no volumes: frees nothing
    assert run(log)[0] == 1
    log.add(holder, "DELETED", at=10)
    assert run(log)[1] == [("Unschedulable", None), ("Scheduled", "n1")]


def test_a_claim_helps_the_pods_that_use_it() -> None:
    """The claim hint VolumeZone, VolumeRestrictions and NodeVolumeLimits share (kube's PVC Add/Update)."""
    pods = [
        convert(pod("a", ("data",))),
        convert(pod("b", ("logs",))),
        convert(pod("c", ("data",), ns="other")),
        None,  # gone: retried, and so it leaves the queue
    ]
    got = claim_hint(convert(pvc("data")))(pods, None)
    assert got.tolist() == [True, False, False, True]
