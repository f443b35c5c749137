"""KubeSchedulerConfiguration-style config, validated with every problem reported at once.

Only profiles[0] is read. Supported: plugins.{filter,score}.{enabled,disabled}
(with "*" to disable the defaults) and pluginConfig args per plugin.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from berth.core.errors import ConfigError
from berth.core.framework import FilterPlugin, ScorePlugin
from berth.core.plugins import FILTERS, REGISTRY, SCORES
from berth.core.scheduler import Profile
from berth.core.state import Extension
from berth.core.validation import Problems, invalid, is_int, unknown_fields

API_VERSIONS = ("kubescheduler.config.k8s.io/v1", "kubescheduler.config.k8s.io/v1beta3")


@dataclass(frozen=True)
class SchedulerConfig:
    filters: tuple[str, ...] = FILTERS
    scores: tuple[tuple[str, int], ...] = tuple(SCORES.items())
    args: dict[str, Any] = field(default_factory=dict)

    def profile(self) -> Profile:
        instances: dict[str, Any] = {}

        def get(name: str) -> Any:
            if name not in instances:
                instances[name] = REGISTRY[name].make(self.args.get(name))
            return instances[name]

        filters: tuple[FilterPlugin, ...] = tuple(get(n) for n in self.filters)
        scorers: tuple[tuple[ScorePlugin, int], ...] = tuple((get(n), w) for n, w in self.scores)
        stores: tuple[Extension, ...] = tuple(p.store for p in instances.values() if hasattr(p, "store"))
        return Profile(filters=filters, scorers=scorers, extensions=stores)


def _plugin_set(
    section: Any, path: str, defaults: list[tuple[str, int]], kind: str, problems: Problems
) -> list[tuple[str, int]]:
    if section is None:
        return defaults
    if not isinstance(section, Mapping):
        problems.append(invalid(path, section, "must be an object with enabled and disabled"))
        return defaults
    unknown_fields(section, {"enabled", "disabled"}, path, problems)
    allowed = [n for n, spec in REGISTRY.items() if (spec.score_weight is not None if kind == "score" else spec.filter)]
    out = list(defaults)
    for i, item in enumerate(section.get("disabled") or []):
        name = item.get("name") if isinstance(item, Mapping) else None
        if name == "*":
            out = []
        elif name not in allowed:
            problems.append(invalid(f"{path}.disabled[{i}].name", name, f"unknown {kind} plugin"))
        else:
            out = [(n, w) for n, w in out if n != name]
    for i, item in enumerate(section.get("enabled") or []):
        name = item.get("name") if isinstance(item, Mapping) else None
        weight = item.get("weight", 0) if isinstance(item, Mapping) else 0
        if name not in allowed:
            problems.append(invalid(f"{path}.enabled[{i}].name", name, f"unknown {kind} plugin"))
            continue
        if not is_int(weight) or weight < 0:
            problems.append(invalid(f"{path}.enabled[{i}].weight", weight, "must be a non-negative integer"))
            continue
        out = [(n, w) for n, w in out if n != name] + [(name, weight or 1)]
    return out


def parse_config(doc: Any) -> SchedulerConfig:
    """Validate a parsed KubeSchedulerConfiguration document; raise ConfigError with all problems."""
    if doc is None:
        doc = {}
    problems: Problems = []
    if not isinstance(doc, Mapping):
        raise ConfigError(["config: expected a KubeSchedulerConfiguration object"])
    if doc.get("kind", "KubeSchedulerConfiguration") != "KubeSchedulerConfiguration":
        problems.append(invalid("kind", doc.get("kind"), "want KubeSchedulerConfiguration"))
    if "apiVersion" in doc and doc["apiVersion"] not in API_VERSIONS:
        problems.append(invalid("apiVersion", doc["apiVersion"], f"want one of {', '.join(API_VERSIONS)}"))
    profiles = doc.get("profiles") or [{}]
    if not isinstance(profiles, list) or not isinstance(profiles[0], Mapping):
        raise ConfigError([*problems, invalid("profiles", profiles, "must be a list of profiles")])
    prof = profiles[0]
    plugins = prof.get("plugins") or {}
    if not isinstance(plugins, Mapping):
        problems.append(invalid("profiles[0].plugins", plugins, "must be an object"))
        plugins = {}
    filters = _plugin_set(
        plugins.get("filter"),
        "profiles[0].plugins.filter",
        [(n, 0) for n in FILTERS],
        "filter",
        problems,
    )
    scores = _plugin_set(plugins.get("score"), "profiles[0].plugins.score", list(SCORES.items()), "score", problems)
    args: dict[str, Any] = {}
    for i, pc in enumerate(prof.get("pluginConfig") or []):
        path = f"profiles[0].pluginConfig[{i}]"
        name = pc.get("name") if isinstance(pc, Mapping) else None
        spec = REGISTRY.get(name or "")
        parser = spec.parse_args if spec is not None else None
        if parser is None:
            problems.append(invalid(f"{path}.name", name, "no plugin with configurable args by that name"))
            continue
        raw = pc.get("args") or {}
        if not isinstance(raw, Mapping):
            problems.append(invalid(f"{path}.args", raw, "must be an object"))
            continue
        args[name or ""] = parser(raw, f"{path}.args", problems)
    if problems:
        raise ConfigError(problems)
    return SchedulerConfig(filters=tuple(n for n, _ in filters), scores=tuple(scores), args=args)
