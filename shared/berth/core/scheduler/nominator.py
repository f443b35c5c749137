"""kube's nominator: pods nominated to a node (status.nominatedNodeName) that are not bound yet.

Filters see the nominated pods of equal or higher priority as placed on their nodes (kube's
addGENominatedPods, RunFilterPluginsWithNominatedPods), their priority as the state resolves it.
A ClusterState extension: it follows the pods applied to the state; `hold` adds a nomination made
in a run (berth evaluate) that the state never hears of; `clear` is kube's clearing of a pod's
status.nominatedNodeName (kept until an update of the pod names another node).
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
        self._cleared: dict[str, str] = {}  # pod -> the node whose nomination this run cleared

    def pod_changed(self, state: Any, old: Pod | None, new: Pod | None) -> None:
        key = (new or old).key  # type: ignore[union-attr]
        self._waiting.pop(key, None)
        if new is None or (key in self._cleared and new.nominated_node != self._cleared[key]):
            self._cleared.pop(key, None)
        if new is not None and self._nominated(new) and self._cleared.get(key) != new.nominated_node:
            self._waiting[key] = new

    @staticmethod
    def _nominated(pod: Pod) -> bool:
        return bool(pod.nominated_node) and not pod.node_name and not pod.terminated and not pod.deleting

    def hold(self, pod: Pod, node: str) -> None:
        """A nomination made in this run, kept until forget."""
        self._held[pod.key] = msgspec.structs.replace(pod, nominated_node=node)
        self._cleared.pop(pod.key, None)

    def held(self) -> dict[str, str]:
        """The nominations made in this run: pod -> node."""
        return {key: pod.nominated_node or "" for key, pod in self._held.items()}

    def holds(self, pod_key: str) -> bool:
        """Whether this run nominated the pod (and has not forgotten it)."""
        return pod_key in self._held

    def forget(self, pod_key: str) -> None:
        """The pod is nominated no more here: bound, gone, or its victims are gone and it is retried."""
        self._held.pop(pod_key, None)
        self._waiting.pop(pod_key, None)

    def clear(self, pod_key: str) -> None:
        """kube clears the pod's status.nominatedNodeName (a PostFilter that found no node, a
        higher-priority preemption on its node): no nomination, and the pod's own object no longer
        counts as nominated there."""
        held, waiting = self._held.pop(pod_key, None), self._waiting.pop(pod_key, None)
        pod = held or waiting
        if pod is not None and pod.nominated_node:
            self._cleared[pod_key] = pod.nominated_node

    def clear_lower(self, node: str, priority: int) -> list[str]:
        """kube's getLowerPriorityNominatedPods and clearNominatedNodeName: the pods nominated to the
        node with a priority below the preemptor's lose their nomination; returns them, sorted."""
        every = {**self._waiting, **self._held}
        lower = sorted(k for k, p in every.items() if p.nominated_node == node and self.state.priority(p) < priority)
        for key in lower:
            self.clear(key)
        return lower

    def nominated_node(self, pod: Pod) -> str:
        """The node the pod is nominated to as its own cycle sees it (kube: status.nominatedNodeName):
        this run's nomination, else the pod's own unless this run cleared it."""
        held = self._held.get(pod.key)
        if held is not None:
            return held.nominated_node or ""
        node = pod.nominated_node or ""
        return "" if node and self._cleared.get(pod.key) == node else node

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
