"""What the presets are for, checked through berth's scorer engine (decide on ADDED, reserve, release)."""

from __future__ import annotations

from collections import Counter

from berth.core.config import parse_config
from berth.core.events import WatchEvent
from berth.core.model import PersistentVolume
from berth.core.pipeline.records import DecisionRecord
from berth.core.pipeline.scorer import ScorerEngine
from berth.core.pvindex import available
from berth.core.quantity import NANO

GI = 2**30 * NANO
HOST = "kubernetes.io/hostname"


def host_of(pv: PersistentVolume) -> str | None:
    if pv.node_affinity is None:
        return None
    for term in pv.node_affinity.terms:
        for r in term.match_expressions:
            if r.key == HOST:
                return r.values[0]
    return None


def test_small_claims_take_small_pvs(small: list[WatchEvent]) -> None:
    """KEP-1845: no claim of <= 10Gi takes a 1Ti PV while a fitting 10Gi PV is free on a feasible node."""
    engine = ScorerEngine(parse_config(None))
    small_claims: Counter[int] = Counter()
    large_for_large = 0
    for ev in small:
        records = engine.handle(ev.decoded())
        for r in records:
            if r.status != "Scheduled":
                continue
            feasible = {n for n, res in r.nodes.items() if res.feasible}
            for b in r.volume_bindings:
                if not b.pv:
                    continue
                claim, pv = engine.state.pvcs[b.claim], engine.state.pvs[b.pv]
                if (claim.request or 0) > 10 * GI:
                    large_for_large += pv.capacity >= 1024 * GI
                    continue
                small_claims[pv.capacity // GI] += 1
                if pv.capacity >= 1024 * GI:
                    free = [
                        p.name
                        for p in engine.state.pvs.values()
                        if available(p)
                        and p.storage_class == claim.storage_class
                        and p.capacity == 10 * GI
                        and host_of(p) in feasible
                    ]
                    assert not free, f"{b.claim} took {b.pv} while {free[0]} was free"
    assert small_claims[10] >= 10, "the sample exercises small claims"
    assert small_claims[10] > 2 * (small_claims.total() - small_claims[10]), "most take a 10Gi PV"
    assert large_for_large > 0, "large PVs stayed free for large claims"


def scheduled(events: list[WatchEvent]) -> list[DecisionRecord]:
    engine = ScorerEngine(parse_config(None))
    out = []
    for ev in events:
        records = engine.handle(ev.decoded())
        out += [r for r in records if r.status == "Scheduled"]
    return out


def test_a_burst_does_not_all_land_on_the_cold_node(cold_burst: list[WatchEvent]) -> None:
    decisions = scheduled(cold_burst)
    assert len(decisions) == 50
    nodes = Counter(d.node for d in decisions)
    (coldest, count), *_ = nodes.most_common()
    usage = {
        ev.object["metadata"]["name"]: ev.object["status"]["nodeMetric"]["nodeUsage"]["resources"]["cpu"]
        for ev in cold_burst
        if ev.object["kind"] == "NodeMetric"
    }
    assert min(usage, key=lambda n: int(usage[n].rstrip("m"))) == coldest, "the cold node is the favourite"
    assert 10 <= count < 50
    assert len(nodes) >= 5
