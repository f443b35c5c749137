"""multiPoint and kube's merge rules: mergePluginSet (the config over the defaults) and the
framework's expansion of multiPoint per extension point. Tables from upstream's own tests."""

from __future__ import annotations

from typing import Any

import pytest

from berth.core.config.kubeschedulerconfig import Entry, expand, merge_set, parse_config
from berth.core.errors import ConfigError

# upstream: pkg/scheduler/apis/config/v1/default_plugins_test.go TestMergePlugins (one PluginSet each)
MERGE: list[tuple[str, list[Entry], list[Entry], list[str], list[Entry]]] = [
    # name, defaults, custom enabled, custom disabled, merged
    ("AppendCustomPlugin", [("D1", None), ("D2", None)], [("C", None)], [], [("D1", None), ("D2", None), ("C", None)]),
    (
        "InsertAfterDefaultPlugins2",
        [("D1", None), ("D2", None)],
        [("C", None), ("D2", None)],
        ["D2"],
        [("D1", None), ("C", None), ("D2", None)],
    ),
    (
        "InsertBeforeAllPlugins",
        [("D1", None), ("D2", None)],
        [("C", None), ("D1", None), ("D2", None)],
        ["*"],
        [("C", None), ("D1", None), ("D2", None)],
    ),
    (
        "ReorderDefaultPlugins",
        [("D1", None), ("D2", None)],
        [("D2", None), ("D1", None)],
        ["*"],
        [("D2", None), ("D1", None)],
    ),
    ("ApplyNilCustomPlugin", [("D1", None), ("D2", None)], [], [], [("D1", None), ("D2", None)]),
    (
        "CustomPluginOverrideDefaultPlugin",
        [("P1", None), ("P2", None), ("P3", None)],
        [("P1", 2), ("P3", 3)],
        [],
        [("P1", 2), ("P2", None), ("P3", 3)],
    ),
    (
        "OrderPreserveAfterOverride",
        [("P1", None), ("P2", None), ("P3", None)],
        [("P2", 2), ("P1", 1)],
        [],
        [("P1", 1), ("P2", 2), ("P3", None)],
    ),
    (
        "RepeatedCustomPlugin",
        [("P1", None), ("P2", None), ("P3", None)],
        [("P1", None), ("P2", 2), ("P3", None), ("P2", 4)],
        [],
        [("P1", None), ("P2", 4), ("P3", None), ("P2", 2)],
    ),
    (
        "Append custom MultiPoint plugin",
        [("D1", None), ("D2", None)],
        [("C", None)],
        [],
        [("D1", None), ("D2", None), ("C", None)],
    ),
    (
        "Append disabled Multipoint plugins",
        [("D1", None), ("D2", None)],
        [("C", None), ("C2", None)],
        ["D2"],
        [("D1", None), ("C", None), ("C2", None)],
    ),
    ("override default MultiPoint plugins with custom value", [("D", None)], [("D", 5)], [], [("D", 5)]),
    ("multipoint with only disabled gets merged", [("D", None)], [], ["D"], []),
]


@pytest.mark.parametrize(("defaults", "enabled", "disabled", "want"), [c[1:] for c in MERGE], ids=[c[0] for c in MERGE])
def test_merge_set(defaults: list[Entry], enabled: list[Entry], disabled: list[str], want: list[Entry]) -> None:
    assert merge_set(defaults, enabled, disabled) == want


# upstream: pkg/scheduler/framework/runtime/framework_test.go TestNewFrameworkMultiPointExpansion
# (filter point; plugin A implements filter and score, B filter only, C score only)
IMPLEMENTS = {"A": frozenset({"filter", "score"}), "B": frozenset({"filter"}), "C": frozenset({"score"})}
EXPAND: list[tuple[str, list[str], list[str], list[Entry], list[str] | str]] = [
    # name, enabled at the point, disabled at the point, multiPoint, expanded (or the error)
    ("plugin expansion", [], [], [("A", None), ("B", None), ("C", None)], ["A", "B"]),
    ("disable MultiPoint plugin at some extension points", [], ["B"], [("A", None), ("B", None)], ["A"]),
    (
        "Reorder MultiPoint plugins (specific extension takes precedence)",
        ["B"],
        [],
        [("A", None), ("B", None)],
        ["B", "A"],
    ),
    ("Override MultiPoint plugins weights", ["A"], [], [("A", 5), ("B", None)], ["A", "B"]),
    ("disable all MultiPoint plugins at a point with '*'", ["B"], ["*"], [("A", None), ("B", None)], ["B"]),
    (
        "duplicate MultiPoint plugin",
        [],
        [],
        [("A", None), ("A", None)],
        'plugin "A" already registered as "FilterPlugin"',
    ),
]


@pytest.mark.parametrize(("specific", "disabled", "multi", "want"), [c[1:] for c in EXPAND], ids=[c[0] for c in EXPAND])
def test_expand(specific: list[str], disabled: list[str], multi: list[Entry], want: list[str] | str) -> None:
    order, error = expand("filter", specific, disabled, multi, IMPLEMENTS)
    assert (error if isinstance(want, str) else order) == want


def plugins(**sets: Any) -> dict[str, Any]:
    return {"profiles": [{"plugins": sets}]}


def test_multipoint_disabled_is_removed_from_every_point() -> None:
    cfg = parse_config(plugins(multiPoint={"disabled": [{"name": "VolumeBinding"}]}))
    assert all("VolumeBinding" not in names for names in cfg.default.points.values())


def test_multipoint_star_disables_every_default() -> None:
    cfg = parse_config(
        plugins(multiPoint={"disabled": [{"name": "*"}], "enabled": [{"name": "NodeResourcesFit", "weight": 4}]})
    )
    assert cfg.filters == ("NodeResourcesFit",) and cfg.scores == (("NodeResourcesFit", 4),)


def test_multipoint_weight_and_score_point_weight_takes_precedence() -> None:
    cfg = parse_config(plugins(multiPoint={"enabled": [{"name": "ImageLocality", "weight": 7}]}))
    assert dict(cfg.scores)["ImageLocality"] == 7
    cfg = parse_config(
        plugins(
            multiPoint={"enabled": [{"name": "ImageLocality", "weight": 7}]},
            score={"enabled": [{"name": "ImageLocality", "weight": 9}]},
        )
    )
    assert dict(cfg.scores)["ImageLocality"] == 9


def test_a_default_enabled_at_a_point_moves_to_its_front_as_in_kube() -> None:
    cfg = parse_config(plugins(filter={"enabled": [{"name": "InterPodAffinity"}]}))
    assert cfg.filters[0] == "InterPodAffinity" and cfg.filters.count("InterPodAffinity") == 1


def test_a_plugin_at_a_point_it_does_not_implement_is_kubes_message_as_a_warning() -> None:
    cfg = parse_config(plugins(filter={"enabled": [{"name": "ImageLocality"}]}))
    assert cfg.warnings == (
        'profiles[0].plugins.filter.enabled[0]: plugin "ImageLocality" does not extend FilterPlugin plugin: '
        "ignored at filter",
    )
    assert "ImageLocality" not in cfg.filters
    with pytest.raises(ConfigError):
        parse_config(plugins(filter={"enabled": [{"name": "ImageLocality"}]}), strict=True)


def test_unknown_plugins_under_multipoint_or_a_point_are_warnings() -> None:
    cfg = parse_config(
        plugins(multiPoint={"enabled": [{"name": "NodeNUMAResource"}]}, filter={"enabled": [{"name": "Reservation"}]})
    )
    assert cfg.warnings == (
        "profiles[0].plugins: 'NodeNUMAResource' (multiPoint) ignored: berth does not run it; "
        "pods are decided without it",
        "profiles[0].plugins: 'Reservation' (filter) ignored: berth does not run it; pods are decided without it",
    )
    with pytest.raises(ConfigError) as e:
        parse_config(plugins(multiPoint={"enabled": [{"name": "NodeNUMAResource"}]}), strict=True)
    assert len(e.value.problems) == 1 and "'NodeNUMAResource' (multiPoint) ignored" in e.value.problems[0]


def test_paths_count_the_ignored_entries() -> None:
    cfg = parse_config(plugins(reserve={"enabled": [{"name": "Reservation"}, {"name": "ImageLocality"}]}))
    assert cfg.warnings[1].startswith('profiles[0].plugins.reserve.enabled[1]: plugin "ImageLocality"')
