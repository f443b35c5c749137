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

from collections.abc import Collection, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy.typing as npt

from berth.core.api.core.model import Pod

if TYPE_CHECKING:
    from berth.core.cache.extension import StateExtension
    from berth.core.cache.state import ClusterState

from berth.core.framework.cycle import Cycle
from berth.core.framework.events import ClusterEventWithHint
from berth.core.framework.status import Code, Failure, NodeToStatus, Status
from berth.core.framework.types import Mask, Scores, Slots


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
        stops the cycle for every node; a PreFilterResult (a Success) names the only nodes worth
        evaluating (kube's PreFilterResult.NodeNames)."""
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
    that node's pods removed (every node-local filter but one whose own removal_safe says otherwise,
    and each ReadsOtherNodes filter that says so for the pod); removal_safe(cycle, leaving): the same when only some of these pods of one node
    leave. Where it holds, a filter's UnschedulableAndUnresolvable failures on the node also stay,
    with their reasons (kube: preemption cannot help there)."""

    node_local: bool
    node_fit: NodeFit | None

    def nominated(self, pod: Pod) -> frozenset[str]:
        """Nodes where the pod's filters also see nominated pods (kube's addGENominatedPods)."""
        ...

    def nominated_node(self, pod: Pod) -> str:
        """The pod's own nominated node as kube's latest pod object has it (a cleared nomination: "")."""
        ...

    def nominated_amounts(self, cycle: Cycle) -> dict[str, dict[str, int]] | None:
        """Where node_fit is the only filter this cycle runs that reads pods (the others skipped or
        IgnoresPods): by node, what the nominated pods the pod sees there request, one pod each under
        pods (nodes left out: decide them by the dry run proper); else None."""
        ...

    def nominated_columns(
        self, cycle: Cycle
    ) -> tuple[dict[str, dict[str, int]], Mapping[str, int], Mapping[str, npt.NDArray[Any]]] | None:
        """Where nominated_amounts holds every node the pod sees nominated pods on: those amounts, and
        the same as columns, each node's row (a node whose nominated pods have gone may keep its row,
        at zero) and per resource named in any an amount per row; else None."""
        ...

    def removal_safe(self, cycle: Cycle, leaving: Sequence[Pod] | None = None) -> bool: ...

    def __call__(self, cycle: Cycle, nodes: Collection[str] | None = None) -> tuple[Mask, NodeToStatus]:
        """nodes: the nodes whose answer the caller reads; nominated pods are tried on these only
        (elsewhere the answer leaves them out). None: every node's answer is exact."""
        ...


@runtime_checkable
class NodeFit(Protocol):
    """A filter that judges a node by amounts alone (NodeResourcesFit): it rejects the pod where, for
    some (resource, wanted) of wants(pod), allocatable - requested < wanted, with reason(resource)."""

    name: str

    def wants(self, pod: Pod) -> list[tuple[str, int]]: ...

    def reason(self, resource: str) -> str: ...

    def filter_with(self, cycle: Cycle, slots: Slots, extra: Mapping[str, npt.NDArray[Any]]) -> list[Failure]:
        """The filter on these slots with `extra` more requested on each (per resource, an amount per
        slot), its failures with masks over the slots, in the order filter gives them."""
        ...


@runtime_checkable
class IgnoresPods(Protocol):
    """A filter (and PreFilter) whose verdict never reads the pods on any node, placed or nominated
    (NodeUnschedulable, TaintToleration, NodeAffinity, the volume ones): marked `ignores_pods = True`.
    Where every filter a cycle runs but the node fit is one, nominated pods change a node's verdict only
    through the node fit's amounts."""

    ignores_pods: bool


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
class Signature:
    """A pod's signature (kube 1.36: the pod signature): what a node-local plugin reads of a pod (key), and for a Filter every (reason, code) it can
    give that pod, in the order its Failures come."""

    key: Hashable
    reasons: tuple[tuple[str, Code], ...] = ()


@runtime_checkable
class NodeLocalFilter(Protocol):
    """A Filter whose answer on a node depends only on that node as ClusterState's slot versions
    track it (its object, the pods counted on it, extensions' rows for it: ClusterState.touch), on
    what moving() returns for it, and on the pod's fields its signature's key holds (plus anything
    global the plugin reads, which the key must hold too). The scheduler may then keep its answers
    per signature and compute again only the slots whose version or moving value changed (docs/framework.md)."""

    name: str

    def filter_signature(self, cycle: Cycle) -> Signature | None:
        """None: not kept for this pod (the plugin's filter runs)."""
        ...

    def filter_on(self, cycle: Cycle, slots: Slots) -> list[Failure]:
        """filter() on these slots only: masks over `slots`, reasons and codes from the signature's."""
        ...

    def moving(self, cycle: Cycle) -> npt.NDArray[Any] | None:
        """Per slot, what the answer also depends on that versions do not track (the clock); None: nothing."""
        ...


@runtime_checkable
class NodeLocalScore(Protocol):
    """A Score plugin whose score on a node is node-local in NodeLocalFilter's sense (NormalizeScore
    still runs over every feasible slot)."""

    name: str

    def score_signature(self, cycle: Cycle) -> Signature | None: ...

    def score_on(self, cycle: Cycle, slots: Slots) -> Scores:
        """score() on these slots only, each taken as feasible."""
        ...

    def moving(self, cycle: Cycle) -> npt.NDArray[Any] | None: ...


# ---- berth explain ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Change:
    """A change to the cluster that berth can try (berth explain's "what would make it fit"): pods
    leaving (namespace/name), a node's allocatable raised (resource -> amount to add), a PV's capacity
    set (PV name -> capacity in nano-units), a PV's labels set (PV name -> (key, value) pairs),
    tolerations the pod would add. cost: how much of the node the change adds or frees, as a share of
    it (orders changes of the same size: the closest node first)."""

    leave: tuple[str, ...] = ()
    more: tuple[tuple[str, int], ...] = ()
    resize: tuple[tuple[str, int], ...] = ()
    tolerate: tuple[Any, ...] = ()  # Toleration models
    relabel: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = ()
    cost: float = 0.0


@dataclass(frozen=True)
class Why:
    """The constraint behind one Filter reason on one node, from the plugin's own state: `text` for
    people, `facts` as data, the change the plugin expects would lift it there (None: none berth
    can try), and another change that would lift it too (`instead`: pods leaving in place of more
    allocatable)."""

    reason: str
    text: str
    facts: dict[str, Any]
    change: Change | None = None
    instead: Change | None = None


@runtime_checkable
class ExplainsFilter(Protocol):
    """A Filter plugin that can say why it rejected the pod on some nodes (berth explain). Called in the
    same cycle, after its PreFilter and Filter ran, with the slots it rejected."""

    name: str

    def explain_filter(self, cycle: Cycle, slots: Slots) -> dict[int, list[Why]]: ...


@runtime_checkable
class ExplainsNodeSet(Protocol):
    """A PreFilter plugin that can give a node set (kube's PreFilterResult) and say why it names those
    nodes (berth explain, for the nodes it leaves out). Called after its PreFilter ran in the cycle."""

    name: str

    def explain_node_set(self, cycle: Cycle) -> str: ...


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


@runtime_checkable
class EnqueueExtensions(Protocol):
    name: str

    def events_to_register(self) -> tuple[ClusterEventWithHint, ...]: ...


@runtime_checkable
class KeepsState(Protocol):
    """A plugin that keeps state for kinds of its own: its ClusterState extension is attached to the
    handle when the profile is built."""

    def extension(self) -> StateExtension: ...


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
