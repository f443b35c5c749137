"""percentageOfNodesToScore: how many feasible nodes a cycle looks for before it stops filtering.

kube (pkg/scheduler/schedule_one.go numFeasibleNodesToFind, findNodesThatPassFilters): below 100
nodes, all; else the percentage of the nodes (0: adaptive, 50 − nodes/125, at least 5), at least
100. The search starts where the last cycle stopped (nextStartNodeIndex) and stops at the k-th
feasible node. berth filters every node at once, then keeps the first k feasible nodes from the
start in node-name order: kube's order is its node tree's (zones interleaved), and its parallel
search can look at a few nodes past the k-th; berth's is deterministic.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5


def num_feasible_nodes_to_find(percentage: int, all_nodes: int) -> int:
    """kube's numFeasibleNodesToFind."""
    if all_nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return all_nodes
    if percentage == 0:
        percentage = max(50 - all_nodes // 125, MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND)
    found = all_nodes * percentage // 100
    return max(found, MIN_FEASIBLE_NODES_TO_FIND)


def first_feasible(
    feasible: npt.NDArray[np.bool_], order: npt.NDArray[np.int64], start: int, k: int
) -> tuple[npt.NDArray[np.bool_], int]:
    """The first k feasible slots of `order` (the node slots, in search order) from `start`, and
    how many nodes the search went through (every node when fewer than k are feasible)."""
    n = len(order)
    if n == 0:
        return feasible, 0
    rotated = np.roll(order, -(start % n))
    ok = feasible[rotated]
    if int(ok.sum()) <= k:
        return feasible, n
    processed = int(np.searchsorted(np.cumsum(ok), k)) + 1
    kept = np.zeros_like(feasible)
    kept[rotated[:processed][ok[:processed]]] = True
    return kept, processed
