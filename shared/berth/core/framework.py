"""The plugin framework: named Filter and Score plugins over all nodes at once.

Nodes live in slots of a NodeTable; a plugin answers for every slot with numpy
arrays. A Filter plugin returns failure masks, each with the reason string kube
would give. A Score plugin returns an int64 array of 0..100 for the feasible slots.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

import numpy as np
import numpy.typing as npt

from berth.core.model import Pod

if TYPE_CHECKING:
    from berth.core.state import ClusterState

Mask = npt.NDArray[np.bool_]
Scores = npt.NDArray[np.int64]
MAX_NODE_SCORE = 100


class Code(enum.Enum):
    SUCCESS = "Success"
    SKIP = "Skip"
    UNSCHEDULABLE = "Unschedulable"
    UNRESOLVABLE = "UnschedulableAndUnresolvable"
    ERROR = "Error"


@dataclass(frozen=True)
class Status:
    code: Code = Code.SUCCESS
    message: str = ""

    @property
    def rejects(self) -> bool:
        return self.code in (Code.UNSCHEDULABLE, Code.UNRESOLVABLE, Code.ERROR)


OK = Status()
SKIP = Status(Code.SKIP)


@dataclass(frozen=True)
class Failure:
    """Slots that fail a filter, and the reason string for each of them."""

    mask: Mask
    reason: str


@dataclass
class Cycle:
    """One scheduling cycle for one pod: read-only state, the clock, and per-plugin scratch."""

    pod: Pod
    state: ClusterState
    now: datetime
    data: dict[str, Any] = field(default_factory=dict)


class FilterPlugin(Protocol):
    name: ClassVar[str]

    def pre_filter(self, cycle: Cycle) -> Status:
        """SKIP means the plugin has nothing to say about this pod; a rejection stops the cycle."""
        ...

    def filter(self, cycle: Cycle) -> list[Failure]:
        """Failure masks over all slots. Errors are raised as FilterError."""
        ...


class ScorePlugin(Protocol):
    name: ClassVar[str]

    def score(self, cycle: Cycle, feasible: Mask) -> Scores:
        """Scores 0..100 for every slot (only feasible slots are read)."""
        ...


# A queueing hint (kube's QueueingHintFn), over many waiting pods at once: which of them the change
# can help. The int names the pod list (same number, same pods), so a plugin may cache per list.
Hint = Callable[[list[Pod | None], int | None], "npt.NDArray[np.bool_]"]


class FilterError(Exception):
    """A filter could not decide (kube's Error status); the pod's decision is Error."""
