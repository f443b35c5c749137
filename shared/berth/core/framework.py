"""The plugin framework, shaped like kube-scheduler's: extension points as Protocols, over all nodes at once.

Nodes live in slots of a NodeTable; a plugin answers for every slot with numpy arrays. A Filter
plugin returns failure masks, each with a Status code and the reason string kube would give. A
Score plugin returns an int64 array of 0..100 for the feasible slots.

A plugin implements the extension points it needs; the Profile finds them by these Protocols once,
when it is built, never by name:

- PreEnqueue (may the pod be decided at all), PreFilter, Filter, PostFilter (when no node fits),
  PreScore, Score (+ NormalizeScore), Reserve;
- EnqueueExtensions: the cluster events (resource + action) that can make a pod it rejected fit,
  each with an optional vectorised queueing hint;
- KeepsState: the ClusterState extension (its kinds and store) the plugin keeps state in.

A plugin module exports NAME, Args (an args Struct with `parse(raw, path, problems)`, or None) and
`new(args, handle)`, the handle being the ClusterState the plugin serves (kube: New(ctx, args, handle)).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Hashable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from berth.core.model import Pod

if TYPE_CHECKING:
    from berth.core.nodes import NodeTable
    from berth.core.state import ClusterState, Extension

Mask = npt.NDArray[np.bool_]
Scores = npt.NDArray[np.int64]
Slots = npt.NDArray[np.intp]
MAX_NODE_SCORE = 100


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


# ---- extension points ------------------------------------------------------------------------


@runtime_checkable
class Plugin(Protocol):
    name: str


@runtime_checkable
class PreEnqueuePlugin(Protocol):
    name: str

    def pre_enqueue(self, pod: Pod) -> Status:
        """A rejection holds the pod back: it is not decided until an update of it passes (kube: it
        waits outside the active queue)."""
        ...


@runtime_checkable
class PreFilterPlugin(Protocol):
    name: str

    def pre_filter(self, cycle: Cycle) -> Status:
        """SKIP: the plugin has nothing to say about this pod (its Filter is skipped); a rejection
        stops the cycle for every node."""
        ...


@runtime_checkable
class FilterPlugin(Protocol):
    name: str

    def filter(self, cycle: Cycle) -> list[Failure]:
        """Failure masks over all slots, each with its code and reason; never raises for "doesn't fit"."""
        ...


class DryRun(Protocol):
    """A dry run of this profile's PreFilter and Filter for a cycle, against cycle.state as it is at
    the call (a PostFilter may change the state for the call and restore it): the feasible slots and
    why the others failed. node_local: no filter of the profile reads pods on other nodes for its
    verdict on a node, so changes on several nodes can be tried in one run. node_fit: the profile's
    filter that judges a node by amounts alone (NodeResourcesFit), if it has one. removal_safe(cycle):
    every filter of the profile that passes a node for this cycle's pod keeps passing it with any of
    that node's pods removed (every node-local filter, and each ReadsOtherNodes filter that says so
    for the pod); removal_safe(cycle, leaving): the same when only some of these pods of one node
    leave. Where it holds, a filter's UnschedulableAndUnresolvable failures on the node also stay,
    with their reasons (kube: preemption cannot help there)."""

    node_local: bool
    node_fit: NodeFit | None

    def nominated(self, pod: Pod) -> frozenset[str]:
        """Nodes where the pod's filters also see nominated pods (kube's addGENominatedPods)."""
        ...

    def removal_safe(self, cycle: Cycle, leaving: Sequence[Pod] | None = None) -> bool: ...

    def __call__(self, cycle: Cycle) -> tuple[Mask, NodeToStatus]: ...


@runtime_checkable
class NodeFit(Protocol):
    """A filter that judges a node by amounts alone (NodeResourcesFit): it rejects the pod where, for
    some (resource, wanted) of wants(pod), allocatable - requested < wanted, with reason(resource)."""

    name: str

    def wants(self, pod: Pod) -> list[tuple[str, int]]: ...

    def reason(self, resource: str) -> str: ...


@runtime_checkable
class ReadsOtherNodes(Protocol):
    """A filter whose verdict on a node depends on pods on other nodes (topology domains, claims in
    use anywhere): marked `reads_other_nodes = True`. Every other filter is node-local."""

    reads_other_nodes: bool

    def removal_safe(self, cycle: Cycle, leaving: Sequence[Pod] | None = None) -> bool:
        """True only if, for this cycle's pod, every node this filter passes stays passed when any
        subset of that node's own pods (of `leaving`, pods of one node, when given) is removed, pods
        on other nodes unchanged (what a node-local filter guarantees always). False when unsure: DefaultPreemption then does the dry run proper."""
        ...


@dataclass(frozen=True)
class Shape:
    """What a node-local plugin reads of a pod (key), and for a Filter every (reason, code) it can
    give that pod, in the order its Failures come."""

    key: Hashable
    reasons: tuple[tuple[str, Code], ...] = ()


@runtime_checkable
class NodeLocalFilter(Protocol):
    """A Filter whose answer on a node depends only on that node as ClusterState's slot versions
    track it (its object, the pods counted on it, extensions' rows for it: ClusterState.touch), on
    what moving() returns for it, and on the pod's fields its shape's key holds (plus anything
    global the plugin reads, which the key must hold too). The scheduler may then keep its answers
    per shape and compute again only the slots whose version or moving value changed (docs/framework.md)."""

    name: str

    def filter_shape(self, cycle: Cycle) -> Shape | None:
        """None: not kept for this pod (the plugin's filter runs)."""
        ...

    def filter_on(self, cycle: Cycle, slots: Slots) -> list[Failure]:
        """filter() on these slots only: masks over `slots`, reasons and codes from the shape's."""
        ...

    def moving(self, cycle: Cycle) -> npt.NDArray[Any] | None:
        """Per slot, what the answer also depends on that versions do not track (the clock); None: nothing."""
        ...


@runtime_checkable
class NodeLocalScore(Protocol):
    """A Score plugin whose score on a node is node-local in NodeLocalFilter's sense (NormalizeScore
    still runs over every feasible slot)."""

    name: str

    def score_shape(self, cycle: Cycle) -> Shape | None: ...

    def score_on(self, cycle: Cycle, slots: Slots) -> Scores:
        """score() on these slots only, each taken as feasible."""
        ...

    def moving(self, cycle: Cycle) -> npt.NDArray[Any] | None: ...


@dataclass(frozen=True)
class PostFilterResult:
    """nominated_node: None leaves the pod's nomination as it is, "" clears it (kube's Override with
    no node); victims: the pods (namespace/name) to evict for the nomination."""

    status: Status
    nominated_node: str | None = None
    victims: tuple[str, ...] = ()


@runtime_checkable
class PostFilterPlugin(Protocol):
    name: str

    def post_filter(self, cycle: Cycle, statuses: NodeToStatus, dry_run: DryRun) -> PostFilterResult:
        """Called when no node fits (kube: preemption), with each node's first failing status."""
        ...


@runtime_checkable
class PreScorePlugin(Protocol):
    name: str

    def pre_score(self, cycle: Cycle, feasible: Mask) -> Status:
        """SKIP: the plugin's Score is skipped for this pod."""
        ...


@runtime_checkable
class ScorePlugin(Protocol):
    name: str

    def score(self, cycle: Cycle, feasible: Mask) -> Scores:
        """Scores for every slot (only feasible slots are read)."""
        ...


@runtime_checkable
class NormalizeScorePlugin(Protocol):
    name: str

    def normalize_score(self, cycle: Cycle, scores: Scores, feasible: Mask) -> None:
        """Bring the feasible slots' scores into 0..MAX_NODE_SCORE, in place."""
        ...


@runtime_checkable
class ReservePlugin(Protocol):
    name: str

    def reserve(self, cycle: Cycle, slot: int) -> Status:
        """What the pod takes on the chosen node (VolumeBinding: kube's AssumePodVolumes), added to
        cycle.bindings / cycle.provisions; ClusterState.reserve applies it."""
        ...

    def unreserve(self, cycle: Cycle, slot: int) -> None:
        """Undo reserve (a later Reserve plugin failed)."""
        ...


class Action(enum.IntFlag):
    """kube's ActionType. For pods berth reports DELETE when an assigned pod leaves its node:
    deleted, finished or bound elsewhere (kube's AssignedPodDelete), and an assigned pod's update
    as UPDATE_POD_LABEL (its labels changed) and/or UPDATE_POD_SCALE_DOWN (some of its requests
    went down: pod_update). Both are parts of UPDATE, as in kube: a plugin registered for UPDATE
    sees either. Updates of other kinds are reported as UPDATE."""

    ADD = 1
    UPDATE_POD_LABEL = 2
    DELETE = 4
    UPDATE_POD_SCALE_DOWN = 8
    UPDATE = UPDATE_POD_LABEL | UPDATE_POD_SCALE_DOWN
    ALL = ADD | UPDATE | DELETE


@dataclass(frozen=True)
class PodUpdate:
    """What the hints of an assigned pod's update read: the pod before and after."""

    old: Pod
    new: Pod


def pod_update(old: Pod, new: Pod) -> Action:
    """What an assigned pod's update is (kube's PodSchedulingPropertiesChange, the parts berth
    reports): UPDATE_POD_LABEL for new labels, UPDATE_POD_SCALE_DOWN when a request of the old pod is
    gone or smaller in the new one (extractPodScaleDown, over PodRequests with UseStatusResources,
    which Pod.requests holds); Action(0) for neither (kube's updatePodOther)."""
    action = Action.UPDATE_POD_LABEL if old.labels != new.labels else Action(0)
    now = new.requests
    if any(k not in now or now[k] < v for k, v in old.requests.items()):
        action |= Action.UPDATE_POD_SCALE_DOWN
    return action


@dataclass(frozen=True)
class ClusterEvent:
    """A change of a resource (a kind, as berth's models name it) that can make a rejected pod fit."""

    resource: str
    action: Action = Action.ALL

    def matches(self, resource: str, action: Action) -> bool:
        return self.resource == resource and bool(self.action & action)


# A vectorised queueing hint (kube's QueueingHintFn) over many waiting pods at once: which of them
# the change can help. The int names the pod list (same number, same pods), so a plugin may cache per list.
Hint = Callable[[list[Pod | None], int | None], Mask]
# Made once per change: (state, changed object, now) -> the hint for that change.
HintFactory = Callable[["ClusterState", Any, datetime], Hint]


def never(pods: list[Pod | None], version: int | None) -> Mask:
    """The hint of a change that helps none of the waiting pods: the retry queue passes over the
    plugin for that change without calling it (the answer would be all false)."""
    return np.zeros(len(pods), dtype=bool)


def each_pod(pods: list[Pod | None], helps: Callable[[Pod], bool]) -> Mask:
    """A hint's answer pod by pod (kube's QueueingHintFn is per pod); a pod gone is retried (and so leaves
    the queue)."""
    return np.fromiter((p is None or helps(p) for p in pods), dtype=bool, count=len(pods))


def claim_hint(obj: Any) -> Hint:
    """kube's hint for a PersistentVolumeClaim added or updated: retry a pod that uses that claim."""
    ns, name = obj.namespace, obj.name
    return lambda pods, version: each_pod(
        pods, lambda p: p.namespace == ns and any(v.claim_name == name for v in p.volumes)
    )


@dataclass(frozen=True)
class ClusterEventWithHint:
    event: ClusterEvent
    hint: HintFactory | None = None  # None: every such change is worth a retry


@runtime_checkable
class EnqueueExtensions(Protocol):
    name: str

    def events_to_register(self) -> tuple[ClusterEventWithHint, ...]: ...


@runtime_checkable
class KeepsState(Protocol):
    """A plugin that keeps state for kinds of its own: its ClusterState extension is attached to the
    handle when the profile is built."""

    def extension(self) -> Extension: ...


# ---- a plugin module -------------------------------------------------------------------------


class ArgsStruct(Protocol):
    """A plugin's args: a Struct with defaults; parse decodes, defaults and validates a raw
    pluginConfig args object, appending every problem at once (paths as given)."""

    @classmethod
    def parse(cls, raw: Any, path: str, problems: list[str]) -> Any: ...


class PluginModule(Protocol):
    """What a plugin module exports: its name, its args Struct (None: it takes none) and its constructor."""

    @property
    def NAME(self) -> str: ...

    @property
    def Args(self) -> type[ArgsStruct] | None: ...

    def new(self, args: Any, handle: ClusterState) -> Plugin: ...
