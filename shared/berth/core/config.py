"""KubeSchedulerConfiguration-style config, validated with every problem reported at once.

Only profiles[0] is read. Supported: plugins.{filter,score}.{enabled,disabled}
(with "*" to disable the defaults) and pluginConfig args per plugin.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from berth.core.errors import ConfigError
from berth.core.framework import FilterPlugin, ScorePlugin
from berth.core.plugins import FILTERS, PLUGIN_TYPES, SCORES
from berth.core.plugins.volumebinding import VolumeBinding, VolumeBindingArgs
from berth.core.scheduler import Profile

Problems = list[str]
ArgsParser = Callable[[Mapping[str, Any], str, Problems], Any]
API_VERSIONS = ("kubescheduler.config.k8s.io/v1", "kubescheduler.config.k8s.io/v1beta3")


def invalid(path: str, value: Any, detail: str) -> str:
    return f"{path}: Invalid value: {value!r}: {detail}"


def is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def unknown_fields(args: Mapping[str, Any], known: set[str], path: str, problems: Problems) -> None:
    for k in args:
        if k not in known:
            problems.append(f'{path}: unknown field "{k}"')


def parse_volume_binding_args(args: Mapping[str, Any], path: str, problems: Problems) -> VolumeBindingArgs:
    unknown_fields(args, {"bindTimeoutSeconds", "shape", "storageClassWeights"}, path, problems)
    timeout = args.get("bindTimeoutSeconds", 600)
    if not is_int(timeout) or timeout < 0:
        problems.append(
            invalid(
                f"{path}.bindTimeoutSeconds",
                timeout,
                "invalid BindTimeoutSeconds, should not be a negative value",
            )
        )
        timeout = 600
    shape = _shape(args.get("shape"), f"{path}.shape", problems)
    weights = []
    raw_weights = args.get("storageClassWeights", {})
    if not isinstance(raw_weights, Mapping):
        problems.append(
            invalid(
                f"{path}.storageClassWeights",
                raw_weights,
                "must be a map of storage class to weight",
            )
        )
        raw_weights = {}
    for cls, w in raw_weights.items():
        if not is_int(w) or w < 1:
            problems.append(invalid(f"{path}.storageClassWeights[{cls}]", w, "must be a positive integer"))
        else:
            weights.append((str(cls), w))
    base = VolumeBindingArgs()
    return VolumeBindingArgs(
        bind_timeout_seconds=timeout,
        shape=shape if shape is not None else base.shape,
        storage_class_weights=tuple(sorted(weights)),
    )


def _shape(raw: Any, path: str, problems: Problems) -> tuple[tuple[int, int], ...] | None:
    if raw is None:
        return None
    if not isinstance(raw, list) or not raw:
        problems.append(f"{path}: Required value: at least one point must be specified")
        return None
    points: list[tuple[int, int]] = []
    ok = True
    for i, p in enumerate(raw):
        if not isinstance(p, Mapping):
            problems.append(invalid(f"{path}[{i}]", p, "must be {utilization, score}"))
            ok = False
            continue
        unknown_fields(p, {"utilization", "score"}, f"{path}[{i}]", problems)
        u, s = p.get("utilization", 0), p.get("score", 0)
        if not is_int(u) or not 0 <= u <= 100:
            problems.append(invalid(f"{path}[{i}].utilization", u, "not in valid range [0, 100]"))
            ok = False
        if not is_int(s) or not 0 <= s <= 10:
            problems.append(invalid(f"{path}[{i}].score", s, "not in valid range [0, 10]"))
            ok = False
        points.append((u, s) if is_int(u) and is_int(s) else (0, 0))
    for i in range(1, len(points)):
        if (
            is_int(raw[i].get("utilization", 0) if isinstance(raw[i], Mapping) else None)
            and points[i][0] <= points[i - 1][0]
        ):
            problems.append(
                invalid(
                    f"{path}[{i}].utilization",
                    points[i][0],
                    "values must be sorted in increasing order",
                )
            )
            ok = False
            break
    return tuple(points) if ok else None


# Plugin name -> parser of its pluginConfig args. Later policies register here.
ARG_PARSERS: dict[str, ArgsParser] = {VolumeBinding.name: parse_volume_binding_args}
# Plugin name -> factory from parsed args (None means defaults).
FACTORIES: dict[str, Callable[[Any], Any]] = {
    VolumeBinding.name: lambda a: VolumeBinding(a),
}


@dataclass(frozen=True)
class SchedulerConfig:
    filters: tuple[str, ...] = FILTERS
    scores: tuple[tuple[str, int], ...] = tuple(SCORES.items())
    args: dict[str, Any] = field(default_factory=dict)

    def profile(self) -> Profile:
        instances: dict[str, Any] = {}

        def get(name: str) -> Any:
            if name not in instances:
                make = FACTORIES.get(name)
                instances[name] = make(self.args.get(name)) if make else PLUGIN_TYPES[name]()
            return instances[name]

        filters: tuple[FilterPlugin, ...] = tuple(get(n) for n in self.filters)
        scorers: tuple[tuple[ScorePlugin, int], ...] = tuple((get(n), w) for n, w in self.scores)
        return Profile(filters=filters, scorers=scorers)


def _plugin_set(
    section: Any, path: str, defaults: list[tuple[str, int]], kind: str, problems: Problems
) -> list[tuple[str, int]]:
    if section is None:
        return defaults
    if not isinstance(section, Mapping):
        problems.append(invalid(path, section, "must be an object with enabled and disabled"))
        return defaults
    unknown_fields(section, {"enabled", "disabled"}, path, problems)
    allowed = ALL_SCORES if kind == "score" else ALL_FILTERS
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


# Plugins that can be enabled at each extension point. Later policies register here.
ALL_FILTERS: list[str] = list(FILTERS)
ALL_SCORES: list[str] = list(SCORES)


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
        parser = ARG_PARSERS.get(name or "")
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
