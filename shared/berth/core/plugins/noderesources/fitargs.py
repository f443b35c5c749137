"""NodeResourcesFitArgs: kube's fields, v1 defaults and validation messages."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from berth.core.api.meta.validation import Problems, invalid, is_int, qualified_name, unknown_fields
from berth.core.plugins.noderesources.allocation import DEFAULT_RESOURCES, ResourceSpec, parse_resources

LEAST, MOST, RATIO = "LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"
STRATEGIES = (LEAST, MOST, RATIO)
MAX_CUSTOM_PRIORITY_SCORE = 10


class ShapePoint(msgspec.Struct, frozen=True):
    utilization: int
    score: int


class ScoringStrategy(msgspec.Struct, frozen=True, kw_only=True):
    type: str = LEAST
    resources: tuple[ResourceSpec, ...] = DEFAULT_RESOURCES
    shape: tuple[ShapePoint, ...] | None = None  # requestedToCapacityRatio.shape


class NodeResourcesFitArgs(msgspec.Struct, frozen=True, kw_only=True):
    ignored_resources: frozenset[str] = frozenset()
    ignored_resource_groups: frozenset[str] = frozenset()
    scoring_strategy: ScoringStrategy = ScoringStrategy()

    @classmethod
    def parse(cls, raw: Mapping[str, Any], path: str, problems: Problems) -> NodeResourcesFitArgs:
        unknown_fields(
            raw, {"apiVersion", "kind", "ignoredResources", "ignoredResourceGroups", "scoringStrategy"}, path, problems
        )
        if raw.get("kind", "NodeResourcesFitArgs") != "NodeResourcesFitArgs":
            problems.append(invalid(f"{path}.kind", raw["kind"], "want NodeResourcesFitArgs"))
        ignored = _strings(raw.get("ignoredResources"), f"{path}.ignoredResources", problems)
        for i, name in enumerate(ignored):
            qualified_name(name, f"{path}.ignoredResources[{i}]", problems)
        groups = _strings(raw.get("ignoredResourceGroups"), f"{path}.ignoredResourceGroups", problems)
        for i, group in enumerate(groups):
            at = f"{path}.ignoredResourceGroups[{i}]"
            if "/" in group:
                problems.append(invalid(at, group, "resource group name can't contain '/'"))
            qualified_name(group, at, problems)
        return cls(
            ignored_resources=frozenset(ignored),
            ignored_resource_groups=frozenset(groups),
            scoring_strategy=_strategy(raw.get("scoringStrategy"), f"{path}.scoringStrategy", problems),
        )


def _strings(raw: Any, path: str, problems: Problems) -> list[str]:
    if raw is None:
        return []
    if not isinstance(raw, list) or not all(isinstance(v, str) for v in raw):
        problems.append(invalid(path, raw, "must be a list of strings"))
        return []
    return raw


def _strategy(raw: Any, path: str, problems: Problems) -> ScoringStrategy:
    if raw is None:
        return ScoringStrategy()  # v1 default: LeastAllocated over cpu and memory
    if not isinstance(raw, Mapping):
        problems.append(invalid(path, raw, "must be an object"))
        return ScoringStrategy()
    unknown_fields(raw, {"type", "resources", "requestedToCapacityRatio"}, path, problems)
    kind = raw.get("type", "")  # not defaulted when scoringStrategy is given
    if kind not in STRATEGIES:
        supported = ", ".join(f'"{s}"' for s in STRATEGIES)
        problems.append(f'{path}.type: Unsupported value: "{kind}": supported values: {supported}')
    resources = parse_resources(raw.get("resources") or None, f"{path}.resources", problems)
    for i, r in enumerate(resources):
        if not 0 < r.weight <= 100:
            problems.append(
                invalid(
                    f"{path}.resources[{i}].weight",
                    r.weight,
                    f"resource weight of {r.name} not in valid range (0, 100]",
                )
            )
    ratio = raw.get("requestedToCapacityRatio")
    shape = None if ratio is None else _shape(ratio, path, problems)  # kube checks it whenever given
    if kind == RATIO and ratio is None:  # kube accepts this and then fails reading the shape: berth says so
        problems.append(
            f"{path}.requestedToCapacityRatio: Required value: must be specified when type is RequestedToCapacityRatio"
        )
    return ScoringStrategy(
        type=kind if kind in STRATEGIES else LEAST, resources=resources, shape=shape if kind == RATIO else None
    )  # another type ignores the shape


def _shape(raw: Any, strategy: str, problems: Problems) -> tuple[ShapePoint, ...]:
    """requestedToCapacityRatio.shape; its problems are named `scoringStrategy.shape[...]`, as kube's."""
    if not isinstance(raw, Mapping):
        problems.append(invalid(f"{strategy}.requestedToCapacityRatio", raw, "must be an object"))
        return ()
    unknown_fields(raw, {"shape"}, f"{strategy}.requestedToCapacityRatio", problems)
    path = f"{strategy}.shape"
    points = []
    for i, item in enumerate(raw.get("shape") or []):
        u = item.get("utilization", 0) if isinstance(item, Mapping) else None
        s = item.get("score", 0) if isinstance(item, Mapping) else None
        if not isinstance(u, int) or not isinstance(s, int) or not is_int(u) or not is_int(s):
            problems.append(invalid(f"{path}[{i}]", item, "must be {utilization, score} integers"))
            continue
        points.append(ShapePoint(u, s))
    if not points:
        problems.append(f"{path}: Required value: at least one point must be specified")
        return ()
    for i in range(1, len(points)):
        if points[i - 1].utilization >= points[i].utilization:
            problems.append(
                invalid(f"{path}[{i}].utilization", points[i].utilization, "values must be sorted in increasing order")
            )
            break
    for i, p in enumerate(points):
        if not 0 <= p.utilization <= 100:
            problems.append(invalid(f"{path}[{i}].utilization", p.utilization, "not in valid range [0, 100]"))
        if not 0 <= p.score <= MAX_CUSTOM_PRIORITY_SCORE:
            problems.append(
                invalid(f"{path}[{i}].score", p.score, f"not in valid range [0, {MAX_CUSTOM_PRIORITY_SCORE}]")
            )
    return tuple(points)
