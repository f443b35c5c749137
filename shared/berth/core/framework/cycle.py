"""One scheduling cycle's state for one pod (kube: CycleState)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from berth.core.api.core.model import Pod

if TYPE_CHECKING:
    from berth.core.cache.state import ClusterState


@dataclass
class Cycle:
    """One scheduling cycle for one pod: the state (the handle), the clock, per-plugin scratch, and
    what Reserve plugins take for the pod on its node."""

    pod: Pod
    state: ClusterState
    now: datetime
    data: dict[str, Any] = field(default_factory=dict)
    bindings: list[tuple[str, str]] = field(default_factory=list)  # (claim key, PV name), assumed by Reserve
    provisions: list[str] = field(default_factory=list)  # claim keys to provision on the node
    # plugins whose PreFilter returned Skip in this cycle (kube's SkipFilterPlugins): a re-run of the
    # filters for the same cycle (with nominated pods placed, a preemption dry run) keeps them skipped
    skip_filter: frozenset[str] = frozenset()


# ---- extension points ------------------------------------------------------------------------
