"""kube's nominator: pods nominated to a node (status.nominatedNodeName) that are not bound yet.

Filters see the nominated pods of equal or higher priority as placed on their nodes (kube's
addGENominatedPods, RunFilterPluginsWithNominatedPods), their priority as the state resolves it.
A ClusterState extension: it follows the pods applied to the state; `hold` adds a nomination made
in a run (berth evaluate) that the state never hears of; `clear` is kube's clearing of a pod's
status.nominatedNodeName (kept until an update of the pod names another node).

What a pod's filters see (`view`) is kept per priority, and a nomination of a pod that sorts after
every other (pods decided in name order: a burst of preemptors) is added to what is kept rather
than starting it again, so that the k-th preemptor does not walk the k-1 before it.
"""

from __future__ import annotations

import bisect
from collections import Counter
from typing import Any

import msgspec
import numpy as np
import numpy.typing as npt

from berth.core.api.core.model import Pod
from berth.core.api.core.resources import PODS
from berth.core.cache.extension import StateExtension
from berth.core.cache.state import ClusterState

# each node's row, and per resource an amount per row
Columns = tuple[dict[str, int], dict[str, npt.NDArray[np.int64]]]
# by node, what its nominated pods request; and the same as Columns
AmountsAndColumns = tuple[dict[str, dict[str, int]], dict[str, int], dict[str, npt.NDArray[np.int64]]]


class Nominated:
    """A view's answer: by node, the nominated pods a pod's filters see there, in namespace/name order
    (nodes in the order of their first pod); with, made when first read and kept with the answer,
    each node's amounts (Nominator.amounts) and the pods' keys. Read only: a nomination added makes
    a new one (`plus`)."""

    __slots__ = ("_amounts", "_columns", "_keys", "by_node")

    def __init__(
        self,
        by_node: dict[str, list[Pod]],
        amounts: dict[str, dict[str, int]] | None = None,
        keys: frozenset[str] | None = None,
        columns: Columns | None = None,
    ) -> None:
        self.by_node = by_node
        self._amounts = amounts
        self._keys = keys
        self._columns = columns

    def amounts(self, nominator: Nominator) -> dict[str, dict[str, int]]:
        """By node, what its nominated pods request together (one pod each under pods)."""
        if self._amounts is None:
            self._amounts = {node: nominator.amounts(pods) for node, pods in self.by_node.items()}
        return self._amounts

    def columns(self, nominator: Nominator) -> Columns:
        """The amounts as columns: each node's row, and per resource named in any, an amount per row."""
        if self._columns is None:
            amounts = self.amounts(nominator)
            rows = {node: i for i, node in enumerate(amounts)}
            names = sorted({name for a in amounts.values() for name in a})
            self._columns = (
                rows,
                {
                    name: np.fromiter((a.get(name, 0) for a in amounts.values()), dtype=np.int64, count=len(amounts))
                    for name in names
                },
            )
        return self._columns

    def keys(self) -> frozenset[str]:
        if self._keys is None:
            self._keys = frozenset(p.key for pods in self.by_node.values() for p in pods)
        return self._keys

    def plus(self, pod: Pod, nominator: Nominator) -> Nominated:
        """With one more nominated pod, after every other in namespace/name order."""
        node = pod.nominated_node
        keys = None if self._keys is None else self._keys | {pod.key}
        return self._with_node(node, [*self.by_node.get(node, ()), pod], keys, nominator)

    def minus(self, pod: Pod, nominator: Nominator) -> Nominated | None:
        """Without this nominated pod; None where that moves its node in the order (it was the first
        of several there): the caller works it out again."""
        node = pod.nominated_node
        pods = self.by_node.get(node)
        if not pods or all(p.key != pod.key for p in pods):
            return self
        if pods[0].key == pod.key and len(pods) > 1:
            return None
        keys = None if self._keys is None else self._keys - {pod.key}
        return self._with_node(node, [p for p in pods if p.key != pod.key], keys, nominator)

    def _with_node(self, node: str, pods: list[Pod], keys: frozenset[str] | None, nominator: Nominator) -> Nominated:
        """A copy with the node's nominated pods these (none: the node leaves; a new node comes last),
        what is made of them brought up to date."""
        by_node = dict(self.by_node)
        if pods:
            by_node[node] = pods
        else:
            del by_node[node]
        if self._amounts is None:
            return Nominated(by_node, None, keys)
        amounts = dict(self._amounts)
        added = nominator.amounts(pods)
        if pods:
            amounts[node] = added
        else:
            del amounts[node]
        # a node that leaves keeps its row, at zero
        columns = None if self._columns is None else _with_row(self._columns, node, added)
        return Nominated(by_node, amounts, keys, columns)


def _with_row(columns: Columns, node: str, amounts: dict[str, int]) -> Columns:
    """The columns with the node's row set to these amounts (a new row last if it had none)."""
    rows, by_name = columns
    n = len(rows)  # every column's length: a row is never dropped
    row = rows.get(node)
    if row is None:
        rows, row = {**rows, node: n}, n
        n += 1
    out = {}
    for name in sorted(by_name.keys() | amounts.keys()):
        column = by_name.get(name)
        if column is None:
            column = np.zeros(n, dtype=np.int64)
        elif len(column) < n:
            column = np.append(column, 0)
        else:
            column = column.copy()
        column[row] = amounts.get(name, 0)
        out[name] = column
    return rows, out


NONE = Nominated({}, {}, frozenset())


class Nominator(StateExtension):
    def __init__(self, state: ClusterState) -> None:
        self.state = state
        self._waiting: dict[str, Pod] = {}  # pending pods with status.nominatedNodeName, by namespace/name
        self._held: dict[str, Pod] = {}  # nominations made in this run
        self._cleared: dict[str, str] = {}  # pod -> the node whose nomination this run cleared
        self._sorted: list[tuple[str, Pod]] | None = []  # both, in namespace/name order (None: sort again)
        self._uids: dict[str, int] = {}  # theirs, with how many have each
        # view's answers by the pod's priority, for _sorted and the PriorityClasses as they were then
        self._answers: dict[int, Nominated] = {}
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
        key = pod.key
        held = self._held[key] = msgspec.structs.replace(pod, nominated_node=node)
        self._cleared.pop(key, None)
        every = self._sorted
        if every is None or key in self._waiting or (every and every[-1][0] >= key) or pod.uid in self._uids:
            self._sorted = None
            return
        every.append((key, held))  # after every other: the kept answers take it as one more
        if held.uid:
            self._uids[held.uid] = 1
        if self._answers_current(every):
            mine = self._priority(key, held)
            for priority, answer in self._answers.items():
                if mine >= priority:
                    self._answers[priority] = answer.plus(held, self)

    def held(self) -> dict[str, str]:
        """The nominations made in this run: pod -> node."""
        return {key: pod.nominated_node or "" for key, pod in self._held.items()}

    def holds(self, pod_key: str) -> bool:
        """Whether this run nominated the pod (and has not forgotten it)."""
        return pod_key in self._held

    def forget(self, pod_key: str) -> None:
        """The pod is nominated no more here: bound, gone, or its victims are gone and it is retried."""
        self._remove(pod_key)

    def clear(self, pod_key: str) -> None:
        """kube clears the pod's status.nominatedNodeName (a PostFilter that found no node, a
        higher-priority preemption on its node): no nomination, and the pod's own object no longer
        counts as nominated there."""
        pod = self._remove(pod_key)
        if pod is not None and pod.nominated_node:
            self._cleared[pod_key] = pod.nominated_node

    def _remove(self, key: str) -> Pod | None:
        """The pod's nominations gone (this run's over its own); returns the one filters saw. The
        kept answers go without it where that leaves the others' order as it was."""
        held, waiting = self._held.pop(key, None), self._waiting.pop(key, None)
        pod = held or waiting
        every = self._sorted
        if pod is None or every is None:
            return pod
        i = bisect.bisect_left(every, key, key=lambda e: e[0])
        if i == len(every) or every[i][0] != key or (pod.uid and self._uids.get(pod.uid, 0) > 1):
            self._sorted = None
            return pod
        del every[i]
        if pod.uid:
            del self._uids[pod.uid]
        if self._answers_current(every):
            mine = self._priority(key, pod)
            for priority, answer in list(self._answers.items()):
                if mine >= priority:
                    less = answer.minus(pod, self)
                    if less is None:
                        del self._answers[priority]
                    else:
                        self._answers[priority] = less
        self._priorities.pop(key, None)
        self._takes.pop(key, None)
        return pod

    def _answers_current(self, every: list[tuple[str, Pod]]) -> bool:
        """Whether the kept answers are those of `every` (changed in place since) and the PriorityClasses
        now; if not, none is kept."""
        at, changes = self._answered_at
        if at is every and changes == self.state.priority_changes:
            return True
        self._answers = {}
        return False

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
        not the pod itself (kube's addGENominatedPods), in namespace/name order. Read only."""
        return self.view(pod).by_node

    def view(self, pod: Pod) -> Nominated:
        """for_pod's answer with its amounts and keys; kept for the next pod of the same priority
        while nothing changes but nominations added after every other."""
        if not self._waiting and not self._held:
            return NONE
        mine = self.state.priority(pod)
        every = self._every()
        own = self._held.get(pod.key) or self._waiting.get(pod.key)
        shared = bool(pod.uid) and self._uids.get(pod.uid, 0) > (1 if own is not None and own.uid == pod.uid else 0)
        if not shared:  # the pod's own nomination at most: the answer for its priority without it
            if not self._answers_current(every):
                self._answered_at = (every, self.state.priority_changes)
            kept = self._answers.get(mine)
            if kept is None:
                kept = self._answers[mine] = self._seen_by(mine, every, "", "")
            if own is None or self._priority(pod.key, own) < mine:
                return kept
            less = kept.minus(own, self)
            if less is not None:
                return less
        return self._seen_by(mine, every, pod.key, pod.uid)

    def _seen_by(self, mine: int, every: list[tuple[str, Pod]], key: str, uid: str) -> Nominated:
        """The nominations of priority at least `mine`, but the pod of this key or uid."""
        by_node: dict[str, list[Pod]] = {}
        for k, other in every:
            if k == key or (uid and other.uid == uid):
                continue
            if self._priority(k, other) >= mine:
                by_node.setdefault(other.nominated_node, []).append(other)
        return Nominated(by_node)

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
            self._uids = dict(Counter(p.uid for _, p in self._sorted if p.uid))
            keys = {k for k, _ in self._sorted}  # what is kept by pod, for these only
            self._priorities = {k: v for k, v in self._priorities.items() if k in keys}
            self._takes = {k: v for k, v in self._takes.items() if k in keys}
        return self._sorted
