"""kube's nominator: pods nominated to a node (status.nominatedNodeName) that are not bound yet.

Filters see the nominated pods of equal or higher priority as placed on their nodes (kube's
addGENominatedPods, RunFilterPluginsWithNominatedPods), their priority as the state resolves it.
A ClusterState extension: it follows the pods applied to the state; `hold` adds a nomination made
in a run (berth evaluate) that the state never hears of.
"""

from __future__ import annotations

from typing import Any

import msgspec

from berth.core.api.core.model import Pod
from berth.core.cache.extension import StateExtension
from berth.core.cache.state import ClusterState


class Nominator(StateExtension):
    def __init__(self, state: ClusterState) -> None:
        self.state = state
        self._waiting: dict[str, Pod] = {}  # pending pods with status.nominatedNodeName, by namespace/name
        self._held: dict[str, Pod] = {}  # nominations made in this run

    def pod_changed(self, state: Any, old: Pod | None, new: Pod | None) -> None:
        key = (new or old).key  # type: ignore[union-attr]
        self._waiting.pop(key, None)
        if new is not None and new.nominated_node and not new.node_name and not new.terminated and not new.deleting:
            self._waiting[key] = new

    def hold(self, pod: Pod, node: str) -> None:
        """A nomination made in this run, kept until forget."""
        self._held[pod.key] = msgspec.structs.replace(pod, nominated_node=node)

    def held(self) -> dict[str, str]:
        """The nominations made in this run: pod -> node."""
        return {key: pod.nominated_node or "" for key, pod in self._held.items()}

    def holds(self, pod_key: str) -> bool:
        """Whether this run nominated the pod (and has not forgotten it)."""
        return pod_key in self._held

    def forget(self, pod_key: str) -> None:
        """kube clears a nomination when PostFilter finds no node for the pod."""
        self._held.pop(pod_key, None)
        self._waiting.pop(pod_key, None)

    def for_pod(self, pod: Pod) -> dict[str, list[Pod]]:
        """By node, the nominated pods a filter of this pod sees there: priority at least the pod's,
        not the pod itself (kube's addGENominatedPods), in namespace/name order."""
        if not self._waiting and not self._held:
            return {}
        priority = self.state.priority
        mine = priority(pod)
        out: dict[str, list[Pod]] = {}
        every = {**self._waiting, **self._held}
        for key in sorted(every):
            other = every[key]
            if key == pod.key or (pod.uid and other.uid == pod.uid):
                continue
            if priority(other) >= mine:
                out.setdefault(other.nominated_node, []).append(other)
        return out
