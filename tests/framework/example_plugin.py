"""A small example plugin, as a plugin author writes one: this module and one registry line.

NodeLabelGate filters out nodes without `requiredLabel: "true"` and scores the nodes with
`preferredLabel: "true"` highest. Its args are a Struct with defaults and a parse that reports
every problem at once.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec
import numpy as np

from berth.core import framework as fwk
from berth.core.api.meta.validation import Problems, invalid, unknown_fields
from berth.core.cache.state import ClusterState

NAME = "NodeLabelGate"


class Args(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    required_label: str = "example.berth.dev/allowed"
    preferred_label: str = "example.berth.dev/preferred"

    @classmethod
    def parse(cls, raw: Mapping[str, Any], path: str, problems: Problems) -> Args:
        unknown_fields(raw, {"requiredLabel", "preferredLabel"}, path, problems)
        values: dict[str, str] = {}
        for field, attr in (("requiredLabel", "required_label"), ("preferredLabel", "preferred_label")):
            if field not in raw:
                continue
            v = raw[field]
            if not isinstance(v, str) or not v:
                problems.append(invalid(f"{path}.{field}", v, "must be a non-empty label key"))
            else:
                values[attr] = v
        return cls(**values)


class NodeLabelGate:
    name = NAME

    def __init__(self, args: Args) -> None:
        self.args = args
        self.reason = f"node(s) didn't have label {args.required_label}"

    def filter(self, cycle: fwk.Cycle) -> list[fwk.Failure]:
        nodes = cycle.state.nodes
        ok = nodes.match_labels_mask({self.args.required_label: "true"})
        return [fwk.Failure(nodes.valid & ~ok, self.reason, fwk.Code.UNRESOLVABLE)]

    def score(self, cycle: fwk.Cycle, feasible: fwk.Mask) -> fwk.Scores:
        preferred = cycle.state.nodes.match_labels_mask({self.args.preferred_label: "true"})
        return np.where(preferred, fwk.MAX_NODE_SCORE, 0).astype(np.int64)

    def events_to_register(self) -> tuple[fwk.ClusterEventWithHint, ...]:
        return (fwk.ClusterEventWithHint(fwk.ClusterEvent("Node", fwk.Action.ADD | fwk.Action.UPDATE)),)


def new(args: Any, handle: ClusterState) -> NodeLabelGate:
    return NodeLabelGate(args if args is not None else Args())
