"""KubeSchedulerConfiguration, validated with every problem reported at once.

Every profile is read (one per schedulerName). Each profile's plugins are kube's v1 defaults (one
multiPoint list, berth.core.plugins.registry.REGISTRY) merged with the config as kube merges them
(mergePluginSet), then expanded per extension point as kube's framework does
(expandMultiPointPlugins). Plugins berth does not implement are warnings, not refusals; strict
makes them errors.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from berth.core.api.meta.validation import INT32_MAX, Problems, invalid, is_int, items, unknown_fields
from berth.core.cache.state import ClusterState
from berth.core.errors import ConfigError
from berth.core.framework.interface import (
    FilterPlugin,
    Plugin,
    PluginModule,
    PostFilterPlugin,
    PreEnqueuePlugin,
    PreFilterPlugin,
    PreScorePlugin,
    ReservePlugin,
    ScorePlugin,
)
from berth.core.framework.runtime.profile import BERTH_DEFAULT_PERCENTAGE, Profile
from berth.core.plugins.registry import REGISTRY, Registered

API_VERSIONS = (
    "kubescheduler.config.k8s.io/v1",
    "kubescheduler.config.k8s.io/v1beta3",
    "kubescheduler.config.k8s.io/v1beta2",
)
# kube removed v1beta2 in 1.28; configs shipped with it (Koordinator's) are read with v1's defaults
OLD_API = {"kubescheduler.config.k8s.io/v1beta2": "read with v1's default plugins and args (kube removed v1beta2)"}
DEFAULT_SCHEDULER = "default-scheduler"

# the extension points berth runs, with the Protocol a plugin implements for each (kube's type name)
POINTS: dict[str, tuple[type, str]] = {
    "preEnqueue": (PreEnqueuePlugin, "PreEnqueuePlugin"),
    "preFilter": (PreFilterPlugin, "PreFilterPlugin"),
    "filter": (FilterPlugin, "FilterPlugin"),
    "postFilter": (PostFilterPlugin, "PostFilterPlugin"),
    "preScore": (PreScorePlugin, "PreScorePlugin"),
    "score": (ScorePlugin, "ScorePlugin"),
    "reserve": (ReservePlugin, "ReservePlugin"),
}
# kube's other extension points: read, but berth runs none of them
OTHER_POINTS = ("queueSort", "permit", "preBind", "bind", "postBind")
IGNORED = "berth does not run it; pods are decided without it"


def default_args(module: PluginModule) -> Any:
    return None if module.Args is None else module.Args()


@dataclass(frozen=True)
class Plugins:
    """What a registry offers the config: modules by name, the points each implements, the defaults."""

    modules: dict[str, PluginModule]
    points: dict[str, frozenset[str]]  # plugin name -> the extension points it implements
    defaults: tuple[tuple[str, int | None], ...]  # kube's default multiPoint list: name, weight

    @classmethod
    def of(cls, registry: tuple[Registered, ...]) -> Plugins:
        """What each plugin implements is read from its Protocols, on an instance made with its
        default args (kube's framework checks the same when a profile is built)."""
        probe = ClusterState()
        modules = {r.module.NAME: r.module for r in registry}
        made = {name: m.new(default_args(m), probe) for name, m in modules.items()}
        points = {
            name: frozenset(point for point, (proto, _) in POINTS.items() if isinstance(p, proto))
            for name, p in made.items()
        }
        defaults = tuple((r.module.NAME, r.weight) for r in registry if r.default)
        return cls(modules=modules, points=points, defaults=defaults)


DEFAULT_PLUGINS = Plugins.of(REGISTRY)

Entry = tuple[str, int | None]  # a plugin in a config's enabled list: name, weight (None: not given)


def merge_set(defaults: list[Entry], enabled: list[Entry], disabled: list[str]) -> list[Entry]:
    """kube's mergePluginSet: the defaults not disabled (none with "*"), each replaced in place by
    the custom entry of the same name; then the custom entries that replaced nothing, in order."""
    off = set(disabled)
    custom = {e[0]: (i, e) for i, e in enumerate(enabled)}
    out: list[Entry] = []
    replaced: set[int] = set()
    if "*" not in off:
        for entry in defaults:
            if entry[0] in off:
                continue
            if entry[0] in custom:
                i, entry = custom[entry[0]]
                replaced.add(i)
            out.append(entry)
    return out + [e for i, e in enumerate(enabled) if i not in replaced]


def expand(
    point: str, specific: list[str], disabled: list[str], multi_point: list[Entry], points: dict[str, frozenset[str]]
) -> tuple[list[str], str | None]:
    """kube's expandMultiPointPlugins for one extension point: the plugins enabled at the point
    that multiPoint also enables (in the point's order), then multiPoint's other plugins that
    implement the point and are not disabled there, then the point's remaining plugins. "*"
    disabled at the point keeps multiPoint out of it. Returns the order and an error, if any."""
    if "*" in disabled:
        return specific, None
    overrides: list[str] = []
    from_multi: list[str] = []
    for name, _ in multi_point:
        if point not in points.get(name, frozenset()) or name in disabled:
            continue
        if name in specific:
            overrides.append(name)
            continue
        if name in from_multi:
            return [], f'plugin "{name}" already registered as "{POINTS[point][1]}"'
        from_multi.append(name)
    first = [n for n in specific if n in overrides]
    rest = [n for n in specific if n not in overrides]
    return first + from_multi + rest, None


@dataclass(frozen=True)
class ProfileConfig:
    """One profile: its schedulerName, its plugins per extension point (in run order), score weights and args."""

    scheduler_name: str = DEFAULT_SCHEDULER
    points: dict[str, tuple[str, ...]] = field(default_factory=dict)
    weights: dict[str, int] = field(default_factory=dict)
    args: dict[str, Any] = field(default_factory=dict)
    plugins: Plugins = DEFAULT_PLUGINS
    percentage_of_nodes_to_score: int = BERTH_DEFAULT_PERCENTAGE  # 0: kube's adaptive rule

    @property
    def filters(self) -> tuple[str, ...]:
        return self.points.get("filter", ())

    @property
    def scores(self) -> tuple[tuple[str, int], ...]:
        return tuple((n, self.weights[n]) for n in self.points.get("score", ()))

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

        at = {point: [get(n) for n in names] for point, names in self.points.items()}
        return Profile.of(
            state,
            at.get("filter", []),
            [(get(n), w) for n, w in self.scores],
            pre_enqueues=at.get("preEnqueue", []),
            pre_filters=at.get("preFilter", []),
            pre_scores=at.get("preScore", []),
            post_filters=at.get("postFilter", []),
            reservers=at.get("reserve", []),
            percentage_of_nodes_to_score=self.percentage_of_nodes_to_score,
        )


@dataclass(frozen=True)
class SchedulerConfig:
    """Every profile of a configuration, in config order, and the warnings parsing it gave."""

    profiles: tuple[ProfileConfig, ...] = ()
    warnings: tuple[str, ...] = ()

    @property
    def default(self) -> ProfileConfig:
        """The first profile (kube's default-scheduler unless the config names it otherwise)."""
        return self.profiles[0]

    @property
    def filters(self) -> tuple[str, ...]:
        return self.default.filters

    @property
    def scores(self) -> tuple[tuple[str, int], ...]:
        return self.default.scores

    @property
    def args(self) -> dict[str, Any]:
        return self.default.args

    @property
    def plugins(self) -> Plugins:
        return self.default.plugins

    def build(self, state: ClusterState) -> Profile:
        """The first profile, built against this state."""
        return self.default.build(state)

    def names(self) -> tuple[str, ...]:
        return tuple(p.scheduler_name for p in self.profiles)


def _entries(
    section: Mapping[str, Any], key: str, path: str, known: Plugins, unknown: dict[str, list[str]], problems: Problems
) -> list[tuple[int, Entry]]:
    """An enabled list's entries; names berth does not implement are left out, with the point
    they were enabled at noted in unknown (one warning per plugin, made by the caller). Each entry
    comes with its index in the list."""
    out: list[tuple[int, Entry]] = []
    for i, item in enumerate(items(section.get(key), f"{path}.{key}", "plugins", problems)):
        here = f"{path}.{key}[{i}]"
        if not isinstance(item, Mapping):
            problems.append(invalid(here, item, "must be an object with name and weight"))
            continue
        name, weight = item.get("name"), item.get("weight")
        if not isinstance(name, str) or not name:
            problems.append(invalid(f"{here}.name", name, "must be a plugin name"))
            continue
        if weight is not None:
            if not is_int(weight) or weight < 0:
                problems.append(invalid(f"{here}.weight", weight, "must be a non-negative integer"))
                continue
            if weight > INT32_MAX:
                problems.append(invalid(f"{here}.weight", weight, f"must be at most {INT32_MAX} (int32)"))
                continue
        if key == "disabled":
            out.append((i, (name, None)))
        elif name not in known.modules:
            unknown.setdefault(name, []).append(path.rsplit(".", 1)[1])
        else:
            out.append((i, (name, weight)))
    return out


def _percentage(doc: Mapping[str, Any], path: str, default: int, problems: Problems) -> int:
    """percentageOfNodesToScore, validated as kube's validatePercentageOfNodesToScore."""
    value = doc.get("percentageOfNodesToScore")
    if value is None:
        return default
    if not is_int(value) or not 0 <= value <= 100:
        problems.append(invalid(f"{path}percentageOfNodesToScore", value, "not in valid range [0-100]"))
        return default
    return int(value)


def _profile(
    prof: Mapping[str, Any], path: str, known: Plugins, warnings: list[str], problems: Problems, percentage: int
) -> ProfileConfig:
    unknown_fields(prof, {"schedulerName", "plugins", "pluginConfig", "percentageOfNodesToScore"}, path, problems)
    name = prof.get("schedulerName", DEFAULT_SCHEDULER)
    if not isinstance(name, str) or not name:
        problems.append(f"{path}.schedulerName: Required value")
        name = DEFAULT_SCHEDULER
    plugins = prof.get("plugins") or {}
    if not isinstance(plugins, Mapping):
        problems.append(invalid(f"{path}.plugins", plugins, "must be an object"))
        plugins = {}
    unknown_fields(plugins, {"multiPoint", *POINTS, *OTHER_POINTS}, f"{path}.plugins", problems)
    sets: dict[str, tuple[list[tuple[int, Entry]], list[str]]] = {}
    unknown: dict[str, list[str]] = {}  # plugins berth does not implement -> the points naming them
    for point in ("multiPoint", *POINTS, *OTHER_POINTS):
        section = plugins.get(point)
        here = f"{path}.plugins.{point}"
        if section is None:
            sets[point] = ([], [])
            continue
        if not isinstance(section, Mapping):
            problems.append(invalid(here, section, "must be an object with enabled and disabled"))
            sets[point] = ([], [])
            continue
        unknown_fields(section, {"enabled", "disabled"}, here, problems)
        enabled = _entries(section, "enabled", here, known, unknown, problems)
        disabled = [n for _, (n, _) in _entries(section, "disabled", here, known, unknown, problems)]
        sets[point] = (enabled, disabled)
    for plugin, at in unknown.items():
        warnings.append(f"{path}.plugins: {plugin!r} ({', '.join(dict.fromkeys(at))}) ignored: {IGNORED}")
    multi_enabled, multi_disabled = sets["multiPoint"]
    multi_point = merge_set(list(known.defaults), [e for _, e in multi_enabled], multi_disabled)
    points: dict[str, tuple[str, ...]] = {}
    for point, (_, type_name) in POINTS.items():
        enabled, disabled = sets[point]
        specific: list[str] = []
        for i, (n, _) in enabled:
            if point not in known.points[n]:
                # kube refuses this; out-of-tree builds of a plugin (Koordinator's LoadAwareScheduling
                # reserves) extend points berth's does not, so it is a warning
                warnings.append(
                    f'{path}.plugins.{point}.enabled[{i}]: plugin "{n}" does not extend {type_name} plugin: '
                    f"ignored at {point}"
                )
            elif n in specific:
                problems.append(
                    f'{path}.plugins.{point}.enabled[{i}]: plugin "{n}" already registered as "{type_name}"'
                )
            else:
                specific.append(n)
        order, error = expand(point, specific, disabled, multi_point, known.points)
        if error is not None:
            problems.append(f"{path}.plugins.multiPoint: {error}")
        points[point] = tuple(order)
    # kube's getScoreWeights: the score point's weight first, then multiPoint's; 0 or none is 1
    weights: dict[str, int] = {}
    for n, w in [*(e for _, e in sets["score"][0]), *multi_point]:
        weights.setdefault(n, w or 1)
    args: dict[str, Any] = {}
    for i, pc in enumerate(items(prof.get("pluginConfig"), f"{path}.pluginConfig", "plugin args", problems)):
        here = f"{path}.pluginConfig[{i}]"
        pname = pc.get("name") if isinstance(pc, Mapping) else None
        if not isinstance(pname, str) or not pname:
            problems.append(invalid(f"{here}.name", pname, "must be a plugin name"))
            continue
        module = known.modules.get(pname)
        if module is None:
            warnings.append(f"{here}: args of {pname!r} ignored: {IGNORED}")
            continue
        if module.Args is None:
            problems.append(invalid(f"{here}.name", pname, "no plugin with configurable args by that name"))
            continue
        raw = pc.get("args") or {}
        if not isinstance(raw, Mapping):
            problems.append(invalid(f"{here}.args", raw, "must be an object"))
            continue
        # args may carry their own type (as kube's v1beta2/v1beta3 configs write them)
        kind = raw.get("kind", f"{pname}Args")
        if kind != f"{pname}Args":
            problems.append(invalid(f"{here}.args.kind", kind, f"want {pname}Args"))
        if raw.get("apiVersion", API_VERSIONS[0]) not in API_VERSIONS:
            problems.append(
                invalid(f"{here}.args.apiVersion", raw["apiVersion"], f"want one of {', '.join(API_VERSIONS)}")
            )
        raw = {k: v for k, v in raw.items() if k not in ("apiVersion", "kind")}
        args[module.NAME] = module.Args.parse(raw, f"{here}.args", problems)
    return ProfileConfig(
        scheduler_name=name,
        points=points,
        weights=weights,
        args=args,
        plugins=known,
        percentage_of_nodes_to_score=_percentage(prof, f"{path}.", percentage, problems),
    )


def parse_config(doc: Any, registry: tuple[Registered, ...] | None = None, strict: bool = False) -> SchedulerConfig:
    """Validate a parsed KubeSchedulerConfiguration document; raise ConfigError with all problems.
    registry: the plugins to offer (default: berth's REGISTRY). strict: warnings are problems too."""
    known = DEFAULT_PLUGINS if registry is None else Plugins.of(registry)
    if doc is None:
        doc = {}
    problems: Problems = []
    warnings: list[str] = []
    if not isinstance(doc, Mapping):
        raise ConfigError(["config: expected a KubeSchedulerConfiguration object"])
    if doc.get("kind", "KubeSchedulerConfiguration") != "KubeSchedulerConfiguration":
        problems.append(invalid("kind", doc.get("kind"), "want KubeSchedulerConfiguration"))
    if "apiVersion" in doc and doc["apiVersion"] not in API_VERSIONS:
        problems.append(invalid("apiVersion", doc["apiVersion"], f"want one of {', '.join(API_VERSIONS)}"))
    elif doc.get("apiVersion") in OLD_API:
        warnings.append(f"apiVersion: {doc['apiVersion']!r} {OLD_API[doc['apiVersion']]}")
    raw = doc.get("profiles") or [{}]
    if not isinstance(raw, list) or not all(isinstance(p, Mapping) for p in raw):
        raise ConfigError([*problems, invalid("profiles", raw, "must be a list of profiles")])
    profiles: list[ProfileConfig] = []
    seen: dict[str, int] = {}
    # berth's default is 100 (kube's is 0, adaptive); a profile's own value wins over the top level's
    percentage = _percentage(doc, "", BERTH_DEFAULT_PERCENTAGE, problems)
    for i, prof in enumerate(raw):
        profile = _profile(prof, f"profiles[{i}]", known, warnings, problems, percentage)
        if profile.scheduler_name in seen:
            # kube's field.Duplicate (kube prints the earlier path as a Go struct; berth prints it as a path)
            first = f"profiles[{seen[profile.scheduler_name]}].schedulerName"
            problems.append(f'profiles[{i}].schedulerName: Duplicate value: "{first}"')
        seen.setdefault(profile.scheduler_name, i)
        profiles.append(profile)
    if strict:
        problems.extend(warnings)
    if problems:
        raise ConfigError(problems)
    return SchedulerConfig(profiles=tuple(profiles), warnings=tuple(warnings))
