"""A minimal stand-in for the replay engine, to check what generated logs are good for.

Applies events in order; a pending pod is decided when its ADDED event is applied and the
decision is reserved; DELETED releases. Not the real engine: just enough to check the scenarios.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from berth.core.config import parse_config
from berth.core.convert import kind_key
from berth.core.decision import Decision
from berth.core.events import Event
from berth.core.kinds import CONVERTERS
from berth.core.model import Pod
from berth.core.scheduler import Scheduler
from berth.core.state import ClusterState

Hook = Callable[[ClusterState, Pod, Decision], None]


@dataclass
class Replay:
    config: dict[str, Any] | None = None
    decisions: list[Decision] = field(default_factory=list)

    def run(self, events: Iterable[Event], before_reserve: Hook | None = None) -> ClusterState:
        profile = parse_config(self.config).profile()
        state = ClusterState(extensions=profile.extensions)
        sched = Scheduler(state, profile)
        for ev in events:
            obj = CONVERTERS[kind_key(ev.object)](ev.object)
            state.apply(obj, ev.deleted)
            if ev.type == "ADDED" and isinstance(obj, Pod) and obj.pending:
                assert ev.ts is not None
                outcome = sched.decide(obj, ev.ts)
                if before_reserve is not None:
                    before_reserve(state, obj, outcome.decision)
                if outcome.reservation is not None:
                    state.reserve(outcome.reservation)
                self.decisions.append(outcome.decision)
        return state
