"""NodeAffinity: the Filter checks the args' addedAffinity required terms (scheduler-enforced), then the
pod's nodeSelector and required node affinity; the Score sums the weights of the preferred terms (the
pod's and the args') each node matches, and NormalizeScore scales them to the highest (100)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec
import numpy as np

from berth.core import framework as fwk
from berth.core.api.core import normalise as convert
from berth.core.api.core import wire as wc
from berth.core.api.core.model import Node, Pod
from berth.core.api.meta.normalise import node_selector
from berth.core.api.meta.selectors import NodeSelector, unmet
from berth.core.api.meta.validation import Problems, invalid, qualified_name, unknown_fields
from berth.core.cache.state import ClusterState
from berth.core.plugins.helper.normalize_score import default_normalize

NAME = "NodeAffinity"
REASON = "node(s) didn't match Pod's node affinity/selector"
ENFORCED = "node(s) didn't match scheduler-enforced node affinity"
CONFLICT = "pod affinity terms conflict"


class Args(msgspec.Struct, frozen=True, kw_only=True):
    """NodeAffinityArgs: addedAffinity, applied to every pod of the profile."""

    required: NodeSelector | None = None
    preferred: tuple[tuple[int, NodeSelector], ...] = ()

    @classmethod
    def parse(cls, raw: Mapping[str, Any], path: str, problems: Problems) -> Args:
        unknown_fields(raw, {"apiVersion", "kind", "addedAffinity"}, path, problems)
        if raw.get("kind", "NodeAffinityArgs") != "NodeAffinityArgs":
            problems.append(invalid(f"{path}.kind", raw["kind"], "want NodeAffinityArgs"))
        added = raw.get("addedAffinity")
        if added is None:
            return cls()
        try:
            wire = msgspec.convert(added, wc.NodeAffinity, str_keys=True)
        except msgspec.ValidationError as e:
            problems.append(invalid(f"{path}.addedAffinity", added, str(e)))
            return cls()
        required = wire.required_during_scheduling_ignored_during_execution
        sel = None if required is None else node_selector(required)
        at = f"{path}.addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"
        for i, term in enumerate(sel.terms if sel is not None else ()):
            for j, r in enumerate(term.match_expressions):
                key_problems: Problems = []
                qualified_name(r.key, f"{at}[{i}].matchExpressions[{j}].key", key_problems)
                problems.extend(key_problems)
                if not key_problems and not r.is_valid():
                    problems.append(invalid(f"{at}[{i}].matchExpressions[{j}]", r.key, "invalid requirement"))
        preferred = convert.preferred_terms(wire)
        at = f"{path}.addedAffinity.preferredDuringSchedulingIgnoredDuringExecution"
        for i, (_, pref) in enumerate(preferred):
            for term in pref.terms:
                for j, r in enumerate(term.match_fields):
                    if len(r.values) != 1:
                        problems.append(
                            invalid(f"{at}[{i}].matchFields[{j}].values", list(r.values), "must have one element")
                        )
        return cls(required=sel, preferred=preferred)


class NodeAffinity:
    name = NAME
    ignores_pods = True  # its verdict never reads the pods on a node (framework.IgnoresPods)

    def __init__(self, args: Args) -> None:
        self.args = args

    def pre_filter(self, cycle: fwk.Cycle) -> fwk.Status:
        """kube's PreFilter: Skip for a pod without node affinity or nodeSelector (and no args'
        addedAffinity); when every required term names nodes by `metadata.name In`, those nodes
        (each term's sets intersected, the terms' united) as a PreFilterResult, or a rejection when
        they cancel out. The args' addedAffinity gives no node set."""
        pod = cycle.pod
        if pod.affinity is None and self.args.required is None and not pod.node_selector:
            return fwk.SKIP
        names = node_names(pod.affinity)
        if names is None:
            return fwk.OK
        if not names:
            return fwk.Status(fwk.Code.UNRESOLVABLE, CONFLICT, NAME)
        return fwk.PreFilterResult(node_names=names)

    def explain_node_set(self, cycle: fwk.Cycle) -> str:
        """Why the PreFilter's node set holds those nodes: every required term names nodes by metadata.name."""
        affinity = cycle.pod.affinity
        terms = affinity.terms if affinity is not None else ()
        shown = []
        for i, term in enumerate(terms, 1):
            names = [f"metadata.name In [{', '.join(r.values)}]" for r in term.match_fields if r.key == "metadata.name"]
            shown.append(f"term {i}: {' and '.join(names)}")
        return "every required node affinity term names its nodes by metadata.name (" + "; ".join(shown) + ")"

    def filter(self, cycle: fwk.Cycle) -> list[fwk.Failure]:
        pod, nodes = cycle.pod, cycle.state.nodes
        out = []
        if self.args.required is not None:
            enforced = nodes.valid & ~nodes.selector_mask(self.args.required)
            if enforced.any():
                out.append(fwk.Failure(enforced, ENFORCED, fwk.Code.UNRESOLVABLE))
        if not pod.node_selector and pod.affinity is None:
            return out
        ok = nodes.valid.copy()
        if pod.node_selector:
            ok &= nodes.match_labels_mask(pod.node_selector)
        if pod.affinity is not None:
            ok &= nodes.selector_mask(pod.affinity)
        if self.args.required is not None:
            ok |= ~nodes.selector_mask(self.args.required)  # a node fails the first check only
        out.append(fwk.Failure(nodes.valid & ~ok, REASON, fwk.Code.UNRESOLVABLE))
        return out

    def explain_filter(self, cycle: fwk.Cycle, slots: fwk.Slots) -> dict[int, list[fwk.Why]]:
        """The nodeSelector labels the node lacks, and per required term the requirement it fails."""
        pod, nodes = cycle.pod, cycle.state.nodes
        out: dict[int, list[fwk.Why]] = {}
        for s in slots.tolist():
            node = nodes.node(s)
            if node is None:
                continue
            labels, whys = node.labels, []
            if self.args.required is not None and not self.args.required.matches(labels, node.name):
                failing = unmet(self.args.required, labels, node.name)
                whys.append(fwk.Why(ENFORCED, "scheduler's addedAffinity: " + "; ".join(failing), {"terms": failing}))
            else:
                parts: list[str] = []
                facts: dict[str, Any] = {}
                wrong = {k: labels.get(k) for k, v in sorted(pod.node_selector.items()) if labels.get(k) != v}
                if wrong:
                    parts.append(
                        "nodeSelector "
                        + ", ".join(
                            f"{k}={pod.node_selector[k]} (node: {v or 'no such label'})" for k, v in wrong.items()
                        )
                    )
                    facts["nodeSelector"] = {k: {"want": pod.node_selector[k], "node": v} for k, v in wrong.items()}
                if pod.affinity is not None and not pod.affinity.matches(labels, node.name):
                    failing = unmet(pod.affinity, labels, node.name)
                    parts.append("required node affinity: " + "; ".join(failing))
                    facts["terms"] = failing
                if parts:
                    whys.append(fwk.Why(REASON, "; ".join(parts), facts))
            if whys:
                out[s] = whys
        return out

    def pre_score(self, cycle: fwk.Cycle, feasible: fwk.Mask) -> fwk.Status:
        return fwk.OK if cycle.pod.preferred_affinity or self.args.preferred else fwk.SKIP

    def score(self, cycle: fwk.Cycle, feasible: fwk.Mask) -> fwk.Scores:
        nodes = cycle.state.nodes
        out = np.zeros(len(feasible), dtype=np.int64)
        for weight, sel in (*cycle.pod.preferred_affinity, *self.args.preferred):
            out += np.where(nodes.selector_mask(sel)[: len(out)], weight, 0)
        return out

    def normalize_score(self, cycle: fwk.Cycle, scores: fwk.Scores, feasible: fwk.Mask) -> None:
        default_normalize(scores, feasible, reverse=False)

    def events_to_register(self) -> tuple[fwk.ClusterEventWithHint, ...]:
        # kube: Node Add|UpdateNodeLabel with a hint (and the pod's own update, which the scorer decides
        # again anyway). berth keeps Delete, without a hint, as it always had.
        return (
            fwk.ClusterEventWithHint(fwk.ClusterEvent("Node", fwk.Action.ADD | fwk.Action.UPDATE), self.node_hint),
            fwk.ClusterEventWithHint(fwk.ClusterEvent("Node", fwk.Action.DELETE)),
        )

    def node_hint(self, state: ClusterState, obj: Any, now: Any) -> fwk.Hint:
        """kube: a node added or its labels changed; retry a pod whose required node affinity and
        nodeSelector (and the args' addedAffinity) it matches now."""
        assert isinstance(obj, Node)
        labels, name = obj.labels, obj.name
        if self.args.required is not None and not self.args.required.matches(labels, name):
            return lambda pods, version: fwk.each_pod(pods, lambda p: False)

        def helps(p: Pod) -> bool:
            if any(labels.get(k) != v or k not in labels for k, v in p.node_selector.items()):
                return False
            return p.affinity is None or p.affinity.matches(labels, name)

        return lambda pods, version: fwk.each_pod(pods, helps)


def node_names(required: NodeSelector | None) -> frozenset[str] | None:
    """The nodes a pod's required node affinity names by `metadata.name In` in every term, or None
    when a term names none (any node may match)."""
    if required is None or not required.terms:
        return None
    out: set[str] = set()
    for term in required.terms:
        mine: set[str] | None = None
        for r in term.match_fields:
            if r.key == "metadata.name" and r.operator == "In":
                mine = set(r.values) if mine is None else mine & set(r.values)
        if mine is None:
            return None
        out |= mine
    return frozenset(out)


def new(args: Any, handle: ClusterState) -> NodeAffinity:
    return NodeAffinity(args if args is not None else Args())
