"""Decisions: what berth prints for every pending pod, in one JSON shape everywhere, built from what
a scheduling cycle found (its statuses, scores and the chosen node).

A Decision is written inside a DecisionRecord (berth.core.pipeline.records), so it follows
the records' evolution rules (docs/records.md).
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import compress
from typing import TYPE_CHECKING, NamedTuple

import msgspec
import numpy as np
import numpy.typing as npt

from berth.core.api.core.model import PersistentVolumeClaim, Pod
from berth.core.framework.status import Failure
from berth.core.framework.types import Mask

if TYPE_CHECKING:
    from berth.core.cache.nodes import NodeTable

CODE_BITS = 63  # failures a slot's code holds (an int64); past that, one slot at a time
COUNTED_BITS = 16  # up to this many failures, rejected_groups counts the codes (a bincount) instead of sorting them
FEW_GROUPS = 8  # ... and with up to this many codes present, finds each group's nodes by a pass of its own


class Provision(msgspec.Struct, frozen=True, omit_defaults=True, rename="camel"):
    storage_class: str
    node: str


class VolumeBindingOut(msgspec.Struct, frozen=True, omit_defaults=True):
    claim: str
    pv: str | None = None
    provision: Provision | None = None


class NodeResult(msgspec.Struct, frozen=True, omit_defaults=True):
    feasible: bool
    reasons: list[str]
    scores: dict[str, int] | None = None
    total: int | None = None


class Decision(msgspec.Struct, frozen=True, rename="camel"):
    pod: str
    status: str  # Scheduled | Unschedulable | Error
    node: str | None
    message: str
    volume_bindings: list[VolumeBindingOut] = []
    nodes: dict[str, NodeResult] = {}
    # preemption (DefaultPreemption): the node nominated for the pod and the pods (namespace/name) to
    # evict there; left out of the JSON when preemption cannot help
    nominated_node: str | msgspec.UnsetType = msgspec.UNSET
    victims: list[str] | msgspec.UnsetType = msgspec.UNSET


def scheduled(
    pod: Pod,
    node: str,
    bindings: list[tuple[str, str]],
    provisions: list[str],
    pvcs: dict[str, PersistentVolumeClaim],
    listed: dict[str, NodeResult],
) -> Decision:
    """The pod placed on node, with the claims Reserve bound or will provision, in the pod's volume order."""
    out = [VolumeBindingOut(claim=c, pv=v) for c, v in bindings]
    out += [VolumeBindingOut(claim=c, provision=Provision(pvcs[c].storage_class, node)) for c in provisions]
    order = {f"{pod.namespace}/{v.claim_name}": i for i, v in enumerate(pod.volumes)}
    out.sort(key=lambda b: order.get(b.claim, 0))
    message = f"Successfully assigned {pod.key} to {node}"
    return Decision(pod.key, "Scheduled", node, message, volume_bindings=out, nodes=listed)


def unschedulable(pod: Pod, message: str, listed: dict[str, NodeResult] | None = None) -> Decision:
    return Decision(pod.key, "Unschedulable", None, message, nodes=listed or {})


def error(pod: Pod, message: str) -> Decision:
    return Decision(pod.key, "Error", None, message)


def rejected_everywhere(pod: Pod, message: str, reason: str, nodes: NodeTable, listed: bool) -> Decision:
    """A PreFilter turned the pod away: listed, one shared result for every node (results are never
    changed once made); else none (only feasible nodes are listed, and there is none)."""
    here = NodeResult(feasible=False, reasons=[reason])
    every = dict.fromkeys(sorted(nodes.slot), here) if listed else {}
    return Decision(pod.key, "Unschedulable", None, message, nodes=every)


def node_results(
    nodes: NodeTable,
    failures: list[Failure],
    feasible: Mask,
    scores: dict[str, np.ndarray],
    total: np.ndarray,
    filtered: Mask,
) -> dict[str, NodeResult]:
    """The per-node report, in node-name order. A rejected node lists every failing plugin's reasons
    (in filter order), not only its first failing plugin's (that one is in the Outcome's statuses).
    Feasible nodes past percentageOfNodesToScore (filtered but not in feasible: not looked at) are
    not listed."""
    every, every_name = nodes.by_name()
    listed = ~(filtered & ~feasible)[every]
    slots = every[listed]
    ok = feasible[slots].tolist()
    chosen = slots[feasible[slots]]
    # the feasible nodes' scores as rows, gathered in one numpy call per plugin, in name order
    keys = list(scores)
    columns = [v[chosen].tolist() for v in scores.values()]
    rows = list(zip(*columns, strict=True)) if columns else [()] * len(chosen)
    feasible_rows = iter(zip(rows, total[chosen].tolist(), strict=True))
    rejections = iter(_rejected_at(failures, slots[~feasible[slots]]))
    out: dict[str, NodeResult] = {}
    for name, fits in zip(compress(every_name, listed.tolist()), ok, strict=True):
        if fits:
            row, node_total = next(feasible_rows)
            out[name] = NodeResult(True, [], dict(zip(keys, row, strict=True)), node_total)
        else:
            out[name] = next(rejections)
    return out


class RejectedGroup(NamedTuple):
    """Nodes the filters rejected for the same reasons (what a table of the rejections shows): how
    many, and the first few in name order."""

    reasons: tuple[str, ...]
    size: int
    first: list[str]


def rejected_groups(nodes: NodeTable, failures: list[Failure], filtered: Mask, shown: int) -> list[RejectedGroup]:
    """The rejected nodes of node_results grouped by their reasons, each group with its first `shown`
    node names, without a result per node: the groups by the failure codes in numpy, the names of
    the first few alone looked up."""
    every, names = nodes.by_name()
    at = np.flatnonzero(~filtered[every])  # the rejected nodes' places in name order
    if not len(at):
        return []
    rejected = every[at]
    if len(failures) > CODE_BITS:  # past one number's bits: each place's reasons, slot by slot
        reasons = _reasons(failures)
        whys = [reasons.get(s, ()) for s in rejected.tolist()]
        inverse = np.arange(len(at))
    else:
        codes = failure_codes([f.mask[rejected] for f in failures], len(at))
        if len(failures) <= COUNTED_BITS:
            counts = np.bincount(codes)
            present = np.flatnonzero(counts)
            if len(present) <= FEW_GROUPS:
                return _few_groups(failures, codes, counts, present.tolist(), at, names, shown)
        distinct, inverse = np.unique(codes, return_inverse=True)
        whys = [_reasons_of(failures, c) for c in distinct.tolist()]
    # codes with the same reasons (two failures giving one reason) are one group
    group_of: dict[tuple[str, ...], int] = {}
    merged = np.array([group_of.setdefault(why, len(group_of)) for why in whys], dtype=np.int64)[inverse]
    order = np.argsort(merged, kind="stable")  # each group's places together, in name order
    counts = np.bincount(merged, minlength=len(group_of))
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    return [
        RejectedGroup(why, count, [names[p] for p in at[order[start : start + min(shown, count)]].tolist()])
        for why, count, start in zip(group_of, counts.tolist(), starts.tolist(), strict=True)
    ]


def _few_groups(
    failures: list[Failure],
    codes: np.ndarray,
    counts: np.ndarray,
    present: list[int],
    at: np.ndarray,
    names: list[str],
    shown: int,
) -> list[RejectedGroup]:
    """rejected_groups where a few failure codes are present (codes: of the rejected places `at`, in
    name order; counts: by code): one pass over the codes per group instead of sorting them."""
    by_why: dict[tuple[str, ...], list[int]] = {}  # in the order of each group's lowest code, as np.unique's
    for code in present:
        by_why.setdefault(_reasons_of(failures, code), []).append(code)
    out = []
    for why, group in by_why.items():
        hits = codes == group[0] if len(group) == 1 else np.isin(codes, group)
        first = np.flatnonzero(hits)[:shown]
        out.append(RejectedGroup(why, int(counts[group].sum()), [names[p] for p in at[first].tolist()]))
    return out


def _rejections(failures: list[Failure]) -> Callable[[int], NodeResult]:
    """A rejected slot's result: one per set of reasons, shared by the nodes that have it."""
    reasons = _reasons(failures)
    shared: dict[tuple[str, ...], NodeResult] = {}

    def result(slot: int) -> NodeResult:
        why = reasons.get(slot, ())
        got = shared.get(why)
        if got is None:
            got = shared[why] = NodeResult(False, list(why))
        return got

    return result


def _rejected_at(failures: list[Failure], slots: np.ndarray) -> list[NodeResult]:
    """_rejections' results for these slots, each slot's set of failures taken as the bits of one
    number (one numpy pass per failure, not a Python step per slot and failure)."""
    if len(failures) > CODE_BITS:
        rejection = _rejections(failures)
        return [rejection(s) for s in slots.tolist()]
    codes, inverse = np.unique(failure_codes([f.mask[slots] for f in failures], len(slots)), return_inverse=True)
    shared: dict[tuple[str, ...], NodeResult] = {}
    made = np.empty(len(codes), dtype=object)
    for i, c in enumerate(codes.tolist()):
        why = _reasons_of(failures, c)
        made[i] = shared.setdefault(why, NodeResult(False, list(why)))
    found: list[NodeResult] = made[inverse].tolist()
    return found


def failure_codes(masks: list[Mask], n: int) -> npt.NDArray[np.int64]:
    """Each of n slots' failures (at most CODE_BITS masks over the n) as the bits of one number, bit i
    for masks[i]."""
    code = np.zeros(n, dtype=np.int64)
    for bit, mask in enumerate(masks):
        code |= mask.astype(np.int64) << bit
    return code


def _reasons_of(failures: list[Failure], code: int) -> tuple[str, ...]:
    """The reasons of the failures whose bits the code holds (failure_codes), in their order."""
    return tuple(f.reason for bit, f in enumerate(failures) if code >> bit & 1)


def _reasons(failures: list[Failure]) -> dict[int, tuple[str, ...]]:
    """Each failing slot's reasons, in the failures' order."""
    reasons: dict[int, tuple[str, ...]] = {}
    for f in failures:
        for s in np.flatnonzero(f.mask).tolist():
            reasons[s] = (*reasons.get(s, ()), f.reason)
    return reasons


def top_results(
    nodes: NodeTable, scores: dict[str, np.ndarray], total: np.ndarray, ranked: np.ndarray, key: np.ndarray, k: int
) -> dict[str, NodeResult]:
    """The k best of the feasible slots `ranked` (with their keys), highest total first, then node
    name (keys are unique)."""
    names = nodes.names
    if not k or not len(ranked):
        return {}
    idx = ranked
    if len(idx) > k:
        # feasible slots' keys are distinct (the name rank breaks ties): the k-th highest bounds
        # exactly the k best
        m = len(idx) - k
        kth = np.partition(key, m)[m]
        top = key >= kth
        idx, key = idx[top], key[top]
    best = idx[np.argsort(-key, kind="stable")]
    # each column gathered once (one numpy call per plugin, not one per node and plugin)
    columns = [(c, v[best].tolist()) for c, v in scores.items()]
    totals = total[best].tolist()
    return {
        names[s] or "": NodeResult(True, [], {c: col[i] for c, col in columns}, totals[i])
        for i, s in enumerate(best.tolist())
    }
