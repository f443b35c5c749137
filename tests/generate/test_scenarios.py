"""What the presets are for, checked through berth's scorer engine (decide on ADDED, reserve, release)."""

from __future__ import annotations

from collections import Counter

from berth.core.api.core.model import PersistentVolume
from berth.core.api.meta.quantity import NANO
from berth.core.api.watch import WatchEvent
from berth.core.cache.pvindex import available
from berth.core.config.kubeschedulerconfig import parse_config
from berth.core.generate import PRESETS, generate
from berth.core.pipeline.records import DecisionRecord
from berth.core.pipeline.scorer import ScorerEngine

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


def test_the_preempt_preset_replays_preemption() -> None:
    """PriorityClasses (batch the globalDefault), PDBs on some workloads, pods carrying their class
    as admission writes it; replayed, the critical burst preempts serving or batch pods."""
    events = list(generate(PRESETS["preempt"], 1))
    kinds = Counter(ev.object["kind"] for ev in events if ev.type == "ADDED")
    classes = {ev.object["metadata"]["name"]: ev.object for ev in events if ev.object["kind"] == "PriorityClass"}
    assert {n: (c["value"], c.get("globalDefault", False)) for n, c in classes.items()} == {
        "critical": (1_000_000, False),
        "serving": (1000, False),
        "batch": (0, True),
    }
    assert kinds["PodDisruptionBudget"] >= 1
    pods = [ev.object for ev in events if ev.object["kind"] == "Pod" and ev.type == "ADDED"]
    assert all(p["spec"]["priority"] == classes[p["spec"]["priorityClassName"]]["value"] for p in pods)
    burst = {p["metadata"]["name"] for p in pods if p["metadata"]["name"].startswith("flash-sale")}
    assert len(burst) == 12 and all(
        p["spec"]["priorityClassName"] == "critical" for p in pods if p["metadata"]["name"] in burst
    )
    engine = ScorerEngine(parse_config(None))
    records: list[DecisionRecord] = []
    for ev in events:
        records += engine.handle(ev.decoded())
    priority = {f"{p['metadata']['namespace']}/{p['metadata']['name']}": p["spec"]["priority"] for p in pods}
    preempting = [r for r in records if isinstance(r.nominated_node, str) and isinstance(r.victims, list)]
    assert any(r.pod.split("/")[1] in burst for r in preempting)
    assert all(priority[v] < priority[r.pod] for r in preempting if isinstance(r.victims, list) for v in r.victims)


def test_priorities_and_pdbs_are_off_unless_asked_for(small: list[WatchEvent]) -> None:
    kinds = {ev.object["kind"] for ev in small}
    assert not kinds & {"PriorityClass", "PodDisruptionBudget"}
