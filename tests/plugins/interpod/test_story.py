"""A replay story: a StatefulSet with required hostname anti-affinity and a Deployment spread over zones
(maxSkew 1), replayed through the engine with both plugins enabled. At every point no two replicas of the
StatefulSet share a node and the Deployment's zone skew stays within maxSkew; a replica that finds no node
waits with kube's reason and is placed once a peer goes."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from berth.core.api.watch import WatchEvent
from berth.core.pipeline.scorer import ScorerEngine
from tests.builders import HOST, NOW, ZONE, node, pod
from tests.plugins.interpod.builders import BOTH, anti_affinity, profile, spread

DB = {"app": "db"}
WEB = {"app": "web"}


def event(obj: dict[str, Any], at: int, kind: str = "ADDED") -> WatchEvent:
    return WatchEvent(kind, obj, ts=NOW + timedelta(seconds=at))


def db(i: int) -> dict[str, Any]:
    return pod(f"db-{i}", metadata={"labels": DB}, affinity=anti_affinity(DB, HOST))


def web(i: int) -> dict[str, Any]:
    return pod(f"web-{i}", metadata={"labels": WEB}, topologySpreadConstraints=[spread(ZONE, WEB)])


def story() -> list[WatchEvent]:
    nodes = [node(f"n{z}{i}", zone=f"z{z}") for z in range(3) for i in range(3)]
    out = [event(n, 0) for n in nodes]
    at = 1
    for i in range(10):  # one replica more than there are nodes
        out.append(event(db(i), at))
        out.append(event(web(i), at))
        at += 5
    return out


def test_anti_affine_replicas_never_share_a_node_and_zone_spread_holds() -> None:
    engine = ScorerEngine(profile(BOTH))
    waiting: dict[str, list[str]] = {}
    for ev in story():
        records = engine.handle(ev.decoded())
        for r in records:
            if r.status == "Unschedulable":
                waiting[r.pod] = sorted({x for res in r.nodes.values() for x in res.reasons})
        placed = [p for p in engine.state.pods.values() if p.node_name]
        db_nodes = [p.node_name for p in placed if p.labels == DB]
        assert len(db_nodes) == len(set(db_nodes)), db_nodes
        zones = {f"z{z}": 0 for z in range(3)}
        for p in placed:
            if p.labels == WEB:
                zones[engine.state.nodes.get(p.node_name).labels[ZONE]] += 1  # type: ignore[union-attr]
        assert max(zones.values()) - min(zones.values()) <= 1, zones
    assert sum(1 for p in engine.state.pods.values() if p.labels == DB and p.node_name) == 9
    assert sum(1 for p in engine.state.pods.values() if p.labels == WEB and p.node_name) == 10
    assert waiting == {"default/db-9": ["node(s) didn't match pod anti-affinity rules"]}
    # a replica goes: the waiting one is placed on the node it leaves
    gone = engine.state.pods["default/db-0"]
    freed = gone.node_name
    raw = {**db(0), "spec": {**db(0)["spec"], "nodeName": freed}}
    records = engine.handle(event(raw, 600, "DELETED").decoded())
    assert [(r.pod, r.status, r.node) for r in records] == [("default/db-9", "Scheduled", freed)]


def test_without_the_plugins_the_story_breaks() -> None:
    """The checks above can fail: berth's default profile stacks the replicas."""
    engine = ScorerEngine(profile(()))
    for ev in story():
        engine.handle(ev.decoded())
    db_nodes = [p.node_name for p in engine.state.pods.values() if p.labels == DB and p.node_name]
    assert len(db_nodes) > len(set(db_nodes))
