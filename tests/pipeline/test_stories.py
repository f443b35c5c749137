"""The stories berth exists for, asserted on generated logs replayed through the engine."""

from __future__ import annotations

import pytest

from berth.core.api.meta.quantity import parse_nanos
from berth.core.api.watch import WatchEvent
from berth.core.cache.pvindex import available
from berth.core.config.kubeschedulerconfig import parse_config
from berth.core.generate import PRESETS, generate
from berth.core.pipeline.scorer import ScorerEngine
from tests.builders import six_plugin_profile

SMALL = parse_nanos("10Gi")
LARGE = parse_nanos("1Ti")


def replay(events: list[WatchEvent], config: object = None) -> tuple[ScorerEngine, list[tuple[str, str, list[str]]]]:
    engine = ScorerEngine(parse_config(config))
    violations: list[tuple[str, str, list[str]]] = []
    for ev in events:
        state = engine.state
        free = {name: pv for name, pv in state.pvs.items() if available(pv)}
        records = engine.handle(ev.decoded())
        for r in records:
            if r.status != "Scheduled":
                continue
            feasible = {n for n, res in r.nodes.items() if res.feasible} or {r.node}
            for b in r.volume_bindings:
                pv, claim = state.pvs.get(b.pv or ""), state.pvcs.get(b.claim)
                if pv is None or claim is None or (claim.request or 0) > SMALL or pv.capacity < LARGE:
                    continue
                # a small claim took a 1Ti PV: was a fitting small PV free on a node the pod could use?
                fitting = [
                    v.name
                    for v in free.values()
                    if v.storage_class == pv.storage_class
                    and (claim.request or 0) <= v.capacity <= SMALL
                    and any(
                        v.node_affinity is None or v.node_affinity.matches(n.labels, n.name)
                        for n in (state.nodes.get(x) for x in feasible)
                        if n is not None
                    )
                ]
                if fitting:
                    violations.append((b.claim, b.pv or "", fitting))
    return engine, violations


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_small_claims_never_take_1ti_while_a_small_pv_is_free(seed: int) -> None:
    events = list(generate(PRESETS["small"], seed))
    _, violations = replay(events)
    assert violations == []


def test_without_capacity_priority_the_story_breaks() -> None:
    """The check above can fail: kube >= 1.33's most-free shape sends small claims to big PVs."""
    events = list(generate(PRESETS["small"], 1))
    most_free = {
        "profiles": [
            {
                "pluginConfig": [
                    {
                        "name": "VolumeBinding",
                        "args": {"shape": [{"utilization": 0, "score": 10}, {"utilization": 100, "score": 0}]},
                    }
                ]
            }
        ]
    }
    _, violations = replay(events, most_free)
    assert violations


def _coldest(events: list[WatchEvent]) -> str:
    usage: dict[str, int] = {}
    for ev in events:
        o = ev.object
        if o.get("kind") == "NodeMetric":
            cpu = o["status"]["nodeMetric"]["nodeUsage"]["resources"]["cpu"]
            usage[o["metadata"]["name"]] = parse_nanos(cpu)
    return min(usage, key=lambda n: usage[n])


def test_a_burst_does_not_all_land_on_the_cold_node() -> None:
    events = list(generate(PRESETS["cold-burst"], 1))
    cold = _coldest(events)
    engine, _ = replay(events)
    burst = [p for p in engine.state.pods.values() if p.labels.get("app") == "flash-sale"]
    placed = [p.node_name for p in burst if p.node_name]
    assert len(burst) == 50 and len(placed) == 50
    on_cold = placed.count(cold)
    assert 0 < on_cold < len(placed) // 2, (cold, on_cold)


def test_without_load_awareness_the_burst_piles_onto_few_nodes() -> None:
    """The check above can fail: with estimates near zero every pod sees the same cold node (in
    the six-plugin profile, where nothing else spreads pods: kube's NodeResourcesFit would)."""
    events = list(generate(PRESETS["cold-burst"], 1))
    cold = _coldest(events)
    off = six_plugin_profile(LoadAwareScheduling={"estimatedScalingFactors": {"cpu": 1, "memory": 1}})
    engine, _ = replay(events, off)
    placed = [p.node_name for p in engine.state.pods.values() if p.labels.get("app") == "flash-sale" and p.node_name]
    assert placed.count(cold) >= len(placed) // 2
