"""Statuses (kube: fwk.Status), per-node statuses and the FitError text."""

from __future__ import annotations

import enum
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from berth.core.cache.nodes import NodeTable


from berth.core.framework.types import Mask


def with_post_filter(message: str, post_filter: str) -> str:
    """kube's FitError with its PostFilter message appended after a space (FitError.Error)."""
    return f"{message} {post_filter}" if post_filter else message


# kube's ErrNoNodesAvailable: the cycle ends before PreFilter when the cluster has no node.
NO_NODES_AVAILABLE = "no nodes available to schedule pods"


def fit_error(total_nodes: int, reasons: dict[str, int], pre_filter: str = "") -> str:
    """kube's FitError.Error(): "0/N nodes are available:", then the PreFilter message if a PreFilter
    rejected the pod, else each reason counted ("%d %s") over the nodes' first failing plugins, sorted
    as strings and joined with ", "; each part ends with "." (with_post_filter adds the PostFilter's)."""
    text = f"0/{total_nodes} nodes are available:"
    if pre_filter:
        text += f" {pre_filter}."
    else:
        parts = sorted(f"{n} {r}" for r, n in reasons.items())
        if parts:
            text += f" {', '.join(parts)}."
    return text


class Code(enum.IntEnum):
    """kube's status codes (Success, Skip, Unschedulable, UnschedulableAndUnresolvable, Error); a
    higher value is more severe among rejections."""

    SUCCESS = 0
    SKIP = 1
    UNSCHEDULABLE = 2
    UNRESOLVABLE = 3  # UnschedulableAndUnresolvable: no preemption on that node can help
    ERROR = 4


@dataclass(frozen=True)
class Status:
    code: Code = Code.SUCCESS
    message: str = ""
    plugin: str = ""  # the plugin that gave it (kube's FailedPlugin), when known

    @property
    def rejects(self) -> bool:
        return self.code >= Code.UNSCHEDULABLE


OK = Status()
SKIP = Status(Code.SKIP)


@dataclass(frozen=True)
class PreFilterResult(Status):
    """A PreFilter's Success that names the only nodes worth evaluating (kube's PreFilterResult
    NodeNames); names of nodes that do not exist are ignored."""

    node_names: frozenset[str] = frozenset()


def unsatisfied(plugins: list[str]) -> str:
    """kube's status for the nodes a PreFilterResult left out (findNodesThatFitPod): the plugins
    that gave node sets, sorted, as Go prints a []string."""
    return f"node(s) didn't satisfy plugin(s) [{' '.join(sorted(plugins))}]"


def disjoint(plugins: list[str]) -> str:
    """kube's PreFilter rejection when the plugins' node sets have no node in common (RunPreFilterPlugins)."""
    names = sorted(plugins)
    if len(names) == 1:
        return f"node(s) didn't satisfy plugin {names[0]}"
    return f"node(s) didn't satisfy plugin(s) [{' '.join(names)}] simultaneously"


@dataclass(frozen=True)
class Failure:
    """Slots that fail a filter, with the Status code and the reason string for each of them.
    An ERROR failure stops the cycle whatever its mask (kube: the filter returned an error)."""

    mask: Mask
    reason: str
    code: Code = Code.UNSCHEDULABLE


@dataclass(frozen=True)
class NodeStatus:
    """One node's verdict: its first failing plugin (in filter order) and that plugin's reasons there."""

    plugin: str
    code: Code
    reasons: tuple[str, ...]


class NodeToStatus:
    """kube's NodeToStatus: per node, the status of its first failing plugin. Built lazily from the
    Filter's masks (nothing is computed unless read), or one status for every node (a PreFilter
    rejection). Feasible nodes have no entry. It reads the state's node table: read it in the cycle
    (PostFilter) or before the nodes change."""

    def __init__(
        self,
        nodes: NodeTable,
        failures: list[tuple[str, list[Failure]]] | None = None,
        everywhere: NodeStatus | None = None,
    ) -> None:
        self._nodes = nodes
        self._names = nodes.names
        self._failures = failures or []
        self.everywhere = everywhere
        self._first: npt.NDArray[np.int64] | None = None

    def _first_failing(self) -> npt.NDArray[np.int64]:
        if self._first is None:
            first = np.full(len(self._names), -1, dtype=np.int64)
            for i, (_, found) in enumerate(self._failures):
                hit = np.zeros(len(self._names), dtype=bool)
                for f in found:
                    hit |= f.mask[: len(hit)]
                first[hit & (first < 0)] = i
            self._first = first
        return self._first

    def _at(self, slot: int) -> NodeStatus | None:
        if self.everywhere is not None:
            return self.everywhere if self._names[slot] is not None else None
        i = int(self._first_failing()[slot])
        if i < 0:
            return None
        plugin, found = self._failures[i]
        hits = [f for f in found if f.mask[slot]]
        return NodeStatus(plugin, max(f.code for f in hits), tuple(f.reason for f in hits))

    def get(self, node: str) -> NodeStatus | None:
        slot = self._nodes.slot.get(node)
        return None if slot is None else self._at(slot)

    def failing(self, slot: int) -> list[tuple[str, tuple[Failure, ...]]]:
        """Every plugin that rejected the slot, in filter order, with its failures there (empty with
        one status for every node)."""
        out = []
        for plugin, found in self._failures:
            hits = tuple(f for f in found if f.mask[slot])
            if hits:
                out.append((plugin, hits))
        return out

    def items(self) -> Iterator[tuple[str, NodeStatus]]:
        """(node, status) of every rejected node, in slot order."""
        for slot, name in enumerate(self._names):
            if name is None:
                continue
            status = self._at(slot)
            if status is not None:
                yield name, status

    def reason_counts(self) -> dict[str, int]:
        """How many nodes give each reason, counting each node's first failing plugin only (the
        counts in kube's FitError message), in filter order."""
        if self.everywhere is not None:
            known = sum(name is not None for name in self._names)
            return dict.fromkeys(self.everywhere.reasons, known) if known else {}
        first = self._first_failing()
        counts: dict[str, int] = {}
        for i, (_, found) in enumerate(self._failures):
            mine = first == i
            for f in found:
                hit = int(np.count_nonzero(mine & f.mask[: len(mine)]))
                if hit:
                    counts[f.reason] = counts.get(f.reason, 0) + hit
        return counts

    def rejected(self, code: Code) -> Mask:
        """Slots whose first failing plugin gave this code (all slots at once)."""
        n = len(self._names)
        if self.everywhere is not None:
            known: Mask = np.array([s is not None for s in self._names], dtype=bool)
            return known & (self.everywhere.code is code)
        first = self._first_failing()
        worst = np.zeros(n, dtype=np.int64)  # per slot, the most severe code of its first failing plugin
        for i, (_, found) in enumerate(self._failures):
            mine = first == i
            for f in found:
                hit = mine & f.mask[:n]
                np.maximum(worst, hit * int(f.code), out=worst)  # codes are not negative
        out: Mask = worst == int(code)
        return out

    def only(self, plugin: str) -> Mask:
        """Slots that this plugin rejected and no other did (none with one status for every node)."""
        n = len(self._names)
        mine: Mask = np.zeros(n, dtype=bool)
        others: Mask = np.zeros(n, dtype=bool)
        if self.everywhere is not None:
            return mine
        for name, found in self._failures:
            for f in found:
                hit = mine if name == plugin else others
                hit |= f.mask[:n]
        out: Mask = mine & ~others
        return out
