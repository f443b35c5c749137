"""The base of a ClusterState extension: state a plugin or controller keeps for kinds of its own
(NodeMetrics, CapacityBuffers, ...) or per node, in step with the objects applied to the state.

A plugin that keeps such state hands it over as KeepsState.extension(); the profile attaches it
to the state the plugin was made for. The hooks do nothing here: a subclass overrides those it needs.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from berth.core.api.core.model import Pod
    from berth.core.cache.state import ClusterState


class StateExtension:
    kinds: tuple[type, ...] = ()  # the model types apply() is given
    # True: pod_changed does nothing for pods on no node (a pending pod added, changed or deleted),
    # so the state calls it only when the old or the new pod names a node
    assigned_only: bool = False
    # True: doze() puts off the work of its kinds' changes until the extension is next read
    dozes: bool = False
    _owner: weakref.ref[ClusterState] | None = None  # the one state it serves (ClusterState.attach)

    def apply(self, state: ClusterState, obj: Any, deleted: bool) -> None:
        """An object of one of its kinds was added, changed or deleted."""

    def pod_changed(self, state: ClusterState, old: Pod | None, new: Pod | None) -> None:
        """A pod was added (old None), changed, or removed (new None)."""

    def node_changed(self, state: ClusterState, slot: int) -> None:
        """The node in this slot was added, changed or removed."""

    def doze(self) -> None:
        """Put off work until next read (a view that may never be read); see `dozes`."""
