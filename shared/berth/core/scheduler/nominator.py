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
from berth.core.api.core.resources import PODS
from berth.core.cache.extension import StateExtension
from berth.core.cache.state import ClusterState


class Nominator(StateExtension):
    def __init__(self, state: ClusterState) -> None:
        self.state = state
        self._waiting: dict[str, Pod] = {}  # pending pods with status.nominatedNodeName, by namespace/name
        self._held: dict[str, Pod] = {}  # nominations made in this run
        self._cleared: dict[str, str] = {}  # pod -> the node whose nomination this run cleared
        self._sorted: list[tuple[str, Pod]] | None = []  # both, in namespace/name order (None: sort again)
        self._uids: set[str] = set()  # theirs
        # for_pod's answers by the pod's priority, for _sorted and the PriorityClasses as they were then
        self._answers: dict[int, dict[str, list[Pod]]] = {}
        self._answered_at: tuple[list[tuple[str, Pod]] | None, int] = (None, -1)
        # by nominated pod: its priority (for the PriorityClasses of _priorities_at) and what it takes
        self._priorities: dict[str, tuple[Pod, int]] = {}
        self._priorities_at = 0
        self._takes: dict[str, tuple[Pod, dict[str, int]]] = {}

    def pod_changed(self, state: Any, old: Pod | None, new: Pod | None) -> None:
        key = (new or old).key  # type: ignore[union-attr]
        if self._waiting.pop(key, None) is not None:
            self._sorted = None
        if new is None or (key in self._cleared and new.nominated_node != self._cleared[key]):
            self._cleared.pop(key, None)
        if new is not None and self._nominated(new) and self._cleared.get(key) != new.nominated_node:
            self._waiting[key] = new
            self._sorted = None

    @staticmethod
    def _nominated(pod: Pod) -> bool:
        return bool(pod.nominated_node) and not pod.node_name and not pod.terminated and not pod.deleting

    def hold(self, pod: Pod, node: str) -> None:
        """A nomination made in this run, kept until forget."""
        self._held[pod.key] = msgspec.structs.replace(pod, nominated_node=node)
        self._sorted = None
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
        self._sorted = None

    def clear(self, pod_key: str) -> None:
        """kube clears the pod's status.nominatedNodeName (a PostFilter that found no node, a
        higher-priority preemption on its node): no nomination, and the pod's own object no longer
        counts as nominated there."""
        held, waiting = self._held.pop(pod_key, None), self._waiting.pop(pod_key, None)
        self._sorted = None
        pod = held or waiting
        if pod is not None and pod.nominated_node:
            self._cleared[pod_key] = pod.nominated_node

    def clear_lower(self, node: str, priority: int) -> list[str]:
        """kube's getLowerPriorityNominatedPods and clearNominatedNodeName: the pods nominated to the
        node with a priority below the preemptor's lose their nomination; returns them, sorted."""
        lower = [k for k, p in self._every() if p.nominated_node == node and self._priority(k, p) < priority]
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
        not the pod itself (kube's addGENominatedPods), in namespace/name order. Read only: the
        answer is kept for the next pod of the same priority while nothing changes."""
        if not self._waiting and not self._held:
            return {}
        mine = self.state.priority(pod)
        every = self._every()
        itself = pod.key in self._waiting or pod.key in self._held or (pod.uid and pod.uid in self._uids)
        if not itself:
            at, changes = self._answered_at
            if at is not every or changes != self.state.priority_changes:  # identity: the list is kept
                self._answers, self._answered_at = {}, (every, self.state.priority_changes)
            kept = self._answers.get(mine)
            if kept is not None:
                return kept
        out: dict[str, list[Pod]] = {}
        for key, other in every:
            if key == pod.key or (pod.uid and other.uid == pod.uid):
                continue
            if self._priority(key, other) >= mine:
                out.setdefault(other.nominated_node, []).append(other)
        if not itself:
            self._answers[mine] = out
        return out

    def amounts(self, pods: list[Pod]) -> dict[str, int]:
        """What these nominated pods request together, one pod each under pods: what placing them on
        their node counts there (read only)."""
        takes = []
        for p in pods:
            kept = self._takes.get(p.key)
            if kept is None or kept[0] is not p:
                kept = self._takes[p.key] = (p, {**p.requests, PODS: 1})
            takes.append(kept[1])
        if len(takes) == 1:
            return takes[0]
        out: dict[str, int] = {}
        for take in takes:
            for k, v in take.items():
                out[k] = out.get(k, 0) + v
        return out

    def _priority(self, key: str, pod: Pod) -> int:
        """A nominated pod's priority as the state resolves it, kept per pod while no PriorityClass changes."""
        if self._priorities_at != self.state.priority_changes:
            self._priorities, self._priorities_at = {}, self.state.priority_changes
        kept = self._priorities.get(key)
        if kept is None or kept[0] is not pod:
            kept = self._priorities[key] = (pod, self.state.priority(pod))
        return kept[1]

    def _every(self) -> list[tuple[str, Pod]]:
        """The waiting and held nominations (a held one over the pod's own), in namespace/name order."""
        if self._sorted is None:
            self._sorted = sorted({**self._waiting, **self._held}.items())
            self._uids = {p.uid for _, p in self._sorted if p.uid}
            keys = {k for k, _ in self._sorted}  # what is kept by pod, for these only
            self._priorities = {k: v for k, v in self._priorities.items() if k in keys}
            self._takes = {k: v for k, v in self._takes.items() if k in keys}
        return self._sorted
