"""KubeSchedulerConfiguration-style config, validated with every problem reported at once.

Only profiles[0] is read. Supported: plugins.{filter,score,postFilter}.{enabled,disabled}
(with "*" to disable the defaults) and pluginConfig args per plugin.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from berth.core.errors import ConfigError
from berth.core.framework import FilterPlugin, Plugin, PluginModule, PostFilterPlugin, PreFilterPlugin, ScorePlugin
from berth.core.plugins import REGISTRY, Registered
from berth.core.scheduler import Profile
from berth.core.state import ClusterState
from berth.core.validation import INT32_MAX, Problems, invalid, is_int, items, unknown_fields

API_VERSIONS = ("kubescheduler.config.k8s.io/v1", "kubescheduler.config.k8s.io/v1beta3")


def default_args(module: PluginModule) -> Any:
    return None if module.Args is None else module.Args()


@dataclass(frozen=True)
class Plugins:
    """What a registry offers the config: modules by name, which can filter or score, the defaults."""

    modules: dict[str, PluginModule]
    filter_names: frozenset[str]
    score_names: frozenset[str]
    filters: tuple[str, ...]  # enabled by default, in order
    scores: tuple[tuple[str, int], ...]  # scored by default, with weights
    post_filter_names: frozenset[str] = frozenset()
    post_filters: tuple[str, ...] = ()  # enabled as PostFilter by default, in order

    @classmethod
    def of(cls, registry: tuple[Registered, ...]) -> Plugins:
        """What each plugin implements is read from its Protocols, on an instance made with its
        default args (kube's framework checks the same when a profile is built)."""
        probe = ClusterState()
        modules = {r.module.NAME: r.module for r in registry}
        made = {name: m.new(default_args(m), probe) for name, m in modules.items()}
        return cls(
            modules=modules,
            filter_names=frozenset(n for n, p in made.items() if isinstance(p, FilterPlugin | PreFilterPlugin)),
            score_names=frozenset(n for n, p in made.items() if isinstance(p, ScorePlugin)),
            filters=tuple(r.module.NAME for r in registry if r.filter),
            scores=tuple((r.module.NAME, r.weight) for r in registry if r.weight is not None),
            post_filter_names=frozenset(n for n, p in made.items() if isinstance(p, PostFilterPlugin)),
            post_filters=tuple(r.module.NAME for r in registry if r.post_filter),
        )


DEFAULT_PLUGINS = Plugins.of(REGISTRY)


@dataclass(frozen=True)
class SchedulerConfig:
    filters: tuple[str, ...] = DEFAULT_PLUGINS.filters
    scores: tuple[tuple[str, int], ...] = DEFAULT_PLUGINS.scores
    args: dict[str, Any] = field(default_factory=dict)
    plugins: Plugins = DEFAULT_PLUGINS
    post_filters: tuple[str, ...] = DEFAULT_PLUGINS.post_filters

    def build(self, state: ClusterState) -> Profile:
        """The profile's plugins, made against this state (their handle): one instance per plugin,
        whatever points it is enabled at; the state they keep is attached to it."""
        instances: dict[str, Plugin] = {}

        def get(name: str) -> Plugin:
            if name not in instances:
                module = self.plugins.modules[name]
                args = self.args[name] if name in self.args else default_args(module)
                instances[name] = module.new(args, state)
            return instances[name]

        filters = [get(n) for n in self.filters]
        scorers = [(get(n), w) for n, w in self.scores]
        return Profile.of(state, filters, scorers, [get(n) for n in self.post_filters])


def _plugin_set(
    section: Any, path: str, defaults: list[tuple[str, int]], allowed: frozenset[str], kind: str, problems: Problems
) -> list[tuple[str, int]]:
    if section is None:
        return defaults
    if not isinstance(section, Mapping):
        problems.append(invalid(path, section, "must be an object with enabled and disabled"))
        return defaults
    unknown_fields(section, {"enabled", "disabled"}, path, problems)
    out = list(defaults)
    for i, item in enumerate(items(section.get("disabled"), f"{path}.disabled", "plugins", problems)):
        name = item.get("name") if isinstance(item, Mapping) else None
        if name == "*":
            out = []
        elif not isinstance(name, str) or name not in allowed:
            problems.append(invalid(f"{path}.disabled[{i}].name", name, f"unknown {kind} plugin"))
        else:
            out = [(n, w) for n, w in out if n != name]
    for i, item in enumerate(items(section.get("enabled"), f"{path}.enabled", "plugins", problems)):
        name = item.get("name") if isinstance(item, Mapping) else None
        weight = item.get("weight", 0) if isinstance(item, Mapping) else 0
        if not isinstance(name, str) or name not in allowed:
            problems.append(invalid(f"{path}.enabled[{i}].name", name, f"unknown {kind} plugin"))
            continue
        if not is_int(weight) or weight < 0:
            problems.append(invalid(f"{path}.enabled[{i}].weight", weight, "must be a non-negative integer"))
            continue
        if weight > INT32_MAX:
            problems.append(invalid(f"{path}.enabled[{i}].weight", weight, f"must be at most {INT32_MAX} (int32)"))
            continue
        out = [(n, w) for n, w in out if n != name] + [(name, weight or 1)]
    return out


def parse_config(doc: Any, registry: tuple[Registered, ...] | None = None) -> SchedulerConfig:
    """Validate a parsed KubeSchedulerConfiguration document; raise ConfigError with all problems.
    registry: the plugins to offer (default: berth's REGISTRY)."""
    known = DEFAULT_PLUGINS if registry is None else Plugins.of(registry)
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
        [(n, 0) for n in known.filters],
        known.filter_names,
        "filter",
        problems,
    )
    scores = _plugin_set(
        plugins.get("score"), "profiles[0].plugins.score", list(known.scores), known.score_names, "score", problems
    )
    post_filters = _plugin_set(
        plugins.get("postFilter"),
        "profiles[0].plugins.postFilter",
        [(n, 0) for n in known.post_filters],
        known.post_filter_names,
        "postFilter",
        problems,
    )
    args: dict[str, Any] = {}
    for i, pc in enumerate(items(prof.get("pluginConfig"), "profiles[0].pluginConfig", "plugin args", problems)):
        path = f"profiles[0].pluginConfig[{i}]"
        name = pc.get("name") if isinstance(pc, Mapping) else None
        module = known.modules.get(name) if isinstance(name, str) else None
        if module is None or module.Args is None:
            problems.append(invalid(f"{path}.name", name, "no plugin with configurable args by that name"))
            continue
        raw = pc.get("args") or {}
        if not isinstance(raw, Mapping):
            problems.append(invalid(f"{path}.args", raw, "must be an object"))
            continue
        args[module.NAME] = module.Args.parse(raw, f"{path}.args", problems)
    if problems:
        raise ConfigError(problems)
    return SchedulerConfig(
        filters=tuple(n for n, _ in filters),
        scores=tuple(scores),
        args=args,
        plugins=known,
        post_filters=tuple(n for n, _ in post_filters),
    )
