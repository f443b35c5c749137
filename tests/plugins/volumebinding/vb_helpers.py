"""Helpers for deciding one pod against a small cluster."""

from __future__ import annotations

from typing import Any

from berth.core.config.kubeschedulerconfig import parse_config
from berth.core.scheduler.results import Decision
from berth.core.scheduler.schedule_one import Scheduler
from tests.builders import NOW, cluster


def decide(*objs: dict[str, Any], pod: str = "default/p", config: Any = None) -> Decision:
    state = cluster(*objs)
    return Scheduler(parse_config(config).build(state)).decide(state.pods[pod], NOW).decision


def reasons(d: Decision) -> dict[str, list[str]]:
    return {n: r.reasons for n, r in d.nodes.items()}


def vb_scores(d: Decision) -> dict[str, int]:
    return {n: (r.scores or {}).get("VolumeBinding", -1) for n, r in d.nodes.items() if r.feasible}


def bindings(d: Decision) -> list[tuple[str, str]]:
    return [(b.claim, b.pv or f"provision:{b.provision.node if b.provision else ''}") for b in d.volume_bindings]
