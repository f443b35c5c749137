"""Adding a plugin touches its own module and one registry line: the example plugin, enabled and
configured through a KubeSchedulerConfiguration, decides with the built-in ones."""

from __future__ import annotations

from typing import Any

import pytest

from berth.core.config.kubeschedulerconfig import parse_config
from berth.core.errors import ConfigError
from berth.core.plugins.registry import REGISTRY, Registered
from berth.core.scheduler.schedule_one import Scheduler
from tests.builders import NOW, cluster, node, pod
from tests.framework import example_plugin

# the one registry line (here added to berth's list for the test, not by default enabled)
WITH_EXAMPLE = (*REGISTRY, Registered(example_plugin))


def config(args: dict[str, Any]) -> dict[str, Any]:
    return {
        "profiles": [
            {
                "plugins": {
                    "filter": {"enabled": [{"name": "NodeLabelGate"}]},
                    "score": {"enabled": [{"name": "NodeLabelGate", "weight": 3}]},
                },
                "pluginConfig": [{"name": "NodeLabelGate", "args": args}],
            }
        ]
    }


def test_the_example_plugin_runs_in_a_profile_enabled_and_configured_by_config() -> None:
    cfg = parse_config(config({"requiredLabel": "team", "preferredLabel": "fast"}), WITH_EXAMPLE)
    state = cluster(
        node("n-none"),
        node("n-team", labels={"team": "true"}),
        node("n-fast", labels={"team": "true", "fast": "true"}),
        pod("p"),
    )
    scheduler = Scheduler(cfg.build(state))
    d = scheduler.decide(state.pods["default/p"], NOW).decision
    assert d.status == "Scheduled" and d.node == "n-fast"
    assert d.nodes["n-none"].reasons == ["node(s) didn't have label team"]
    assert d.nodes["n-fast"].scores["NodeLabelGate"] == 100
    assert d.nodes["n-fast"].total - d.nodes["n-team"].total == 300  # weight 3; the nodes differ in nothing else
    assert d.nodes["n-team"].scores["NodeLabelGate"] == 0


def test_its_reason_is_counted_in_the_unschedulable_message() -> None:
    cfg = parse_config(config({"requiredLabel": "team"}), WITH_EXAMPLE)
    state = cluster(node("n1"), node("n2"), pod("p"))
    scheduler = Scheduler(cfg.build(state))
    outcome = scheduler.decide(state.pods["default/p"], NOW)
    assert outcome.decision.message == (
        "0/2 nodes are available: 2 node(s) didn't have label team. "
        "no new claims to deallocate, preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
    )
    assert outcome.rejected_by == {"NodeLabelGate"}
    assert outcome.statuses is not None
    assert [(n, s.plugin) for n, s in outcome.statuses.items()] == [("n1", "NodeLabelGate"), ("n2", "NodeLabelGate")]


def test_its_args_are_validated_with_every_problem_at_once() -> None:
    doc = config({"requiredLabel": "", "preferredLabel": 3, "typo": 1})
    with pytest.raises(ConfigError) as e:
        parse_config(doc, WITH_EXAMPLE)
    at = "profiles[0].pluginConfig[0].args"
    assert e.value.problems == [
        f'{at}: unknown field "typo"',
        f"{at}.requiredLabel: Invalid value: '': must be a non-empty label key",
        f"{at}.preferredLabel: Invalid value: 3: must be a non-empty label key",
    ]


def test_without_its_registry_line_the_plugin_is_ignored_with_a_warning() -> None:
    cfg = parse_config(config({}))
    assert cfg.warnings == (
        "profiles[0].plugins: 'NodeLabelGate' (filter, score) ignored: berth does not run it; "
        "pods are decided without it",
        "profiles[0].pluginConfig[0]: args of 'NodeLabelGate' ignored: berth does not run it; "
        "pods are decided without it",
    )
    assert "NodeLabelGate" not in cfg.filters


def test_defaults_come_from_the_registry_line() -> None:
    on = (*REGISTRY, Registered(example_plugin, default=True, weight=2))
    cfg = parse_config(None, on)
    assert cfg.filters[-1] == "NodeLabelGate" and ("NodeLabelGate", 2) in cfg.scores
    filters = cfg.default.plugins.points
    assert parse_config(None).filters == tuple(
        r.module.NAME for r in REGISTRY if r.default and "filter" in filters[r.module.NAME]
    )
