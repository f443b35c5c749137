"""The replay story on a generated log: `berth generate --preset small`'s StatefulSets and Deployments
that keep their replicas apart, replayed with berth's default profile (kube's, with InterPodAffinity
and PodTopologySpread). At every point of the replay no two replicas of a workload with required hostname
anti-affinity share a node, and no live workload's zone spread exceeds its maxSkew."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from berth.core.config.kubeschedulerconfig import parse_config
from berth.core.generate import PRESETS, generate
from berth.core.pipeline.scorer import ScorerEngine

HOST, ZONE = "kubernetes.io/hostname", "topology.kubernetes.io/zone"
# berth's profile before it became kube's: reads no pod-to-pod rule
SIX_PLUGINS = Path(__file__).parents[3] / "examples" / "six-plugin-profile.yaml"


@dataclass
class Group:
    """One workload's rules, read from its pods."""

    anti_host: bool = False  # required podAntiAffinity on the hostname against its own replicas
    skew: int | None = None  # maxSkew of its DoNotSchedule zone spread
    deleting: bool = False  # its pods are going (a cascading deletion takes them one event at a time)
    peak: int = 0  # the most replicas placed at once
    pods: set[str] = field(default_factory=set)


def _rules(spec: dict[str, Any]) -> tuple[bool, int | None]:
    anti = (spec.get("affinity") or {}).get("podAntiAffinity") or {}
    required = anti.get("requiredDuringSchedulingIgnoredDuringExecution") or []
    skews = [
        c["maxSkew"]
        for c in spec.get("topologySpreadConstraints") or []
        if c["topologyKey"] == ZONE and c["whenUnsatisfiable"] == "DoNotSchedule"
    ]
    return any(t["topologyKey"] == HOST for t in required), (skews[0] if skews else None)


def replay(config: Any) -> tuple[list[str], dict[str, Group]]:
    """Replays the small preset; returns every broken rule seen (workload and when) and the groups."""
    engine = ScorerEngine(parse_config(config))
    groups: dict[str, Group] = {}
    broken: list[str] = []
    zones: dict[str, str] = {}
    for ev in generate(PRESETS["small"], seed=1):
        obj = ev.object
        if obj["kind"] == "Node":
            zones[obj["metadata"]["name"]] = obj["metadata"]["labels"][ZONE]
        elif obj["kind"] == "Pod" and obj["metadata"]["namespace"] in ("db", "web"):
            meta = obj["metadata"]
            anti, skew = _rules(obj["spec"])
            if anti or skew is not None:
                g = groups.setdefault(f"{meta['namespace']}/{meta['labels']['app']}", Group(anti, skew))
                g.pods.add(f"{meta['namespace']}/{meta['name']}")
                g.deleting |= ev.type == "DELETED" or "deletionTimestamp" in meta
        engine.handle(ev.decoded())
        for name, g in groups.items():
            placed = [p.node_name for key in g.pods if (p := engine.state.pods.get(key)) and p.node_name]
            g.peak = max(g.peak, len(placed))
            if g.anti_host and len(placed) != len(set(placed)):
                broken.append(f"{name} shares a node at {ev.ts}")
            if g.skew is not None and not g.deleting:
                per_zone = Counter(zones[n] for n in placed)
                counts = [per_zone.get(z, 0) for z in set(zones.values())]
                if max(counts) - min(counts) > g.skew:
                    broken.append(f"{name} zone skew {per_zone} at {ev.ts}")
    return broken, groups


def test_generated_workloads_keep_their_replicas_apart() -> None:
    broken, groups = replay(None)
    assert broken == []
    # the story is not empty: both kinds of rule, and workloads with several replicas placed under them
    assert sum(1 for g in groups.values() if g.anti_host and g.skew == 1 and g.peak >= 3) >= 5  # StatefulSets
    assert any(not g.anti_host and g.skew == 1 and g.peak >= 2 for g in groups.values())  # a Deployment


def test_without_the_plugins_the_generated_story_breaks() -> None:
    """The checks above can fail: the six-plugin profile does not read the rules."""
    broken, _ = replay(yaml.safe_load(SIX_PLUGINS.read_text()))
    assert any("shares a node" in b for b in broken)
    assert any("zone skew" in b for b in broken)
