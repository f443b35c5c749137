"""Upstream's scoring-test shapes: nodes with given allocatable, pods as lists of container requests,
a plugin run at PreScore and Score over every node (as upstream's unit tests call them)."""

from __future__ import annotations

from typing import Any

import pytest

from berth.core.api.kinds import convert
from berth.core.cache.state import ClusterState
from berth.core.config.kubeschedulerconfig import parse_config
from berth.core.errors import ConfigError
from berth.core.framework.cycle import Cycle
from berth.core.framework.interface import FilterPlugin, KeepsState, PreFilterPlugin, PreScorePlugin, ScorePlugin
from berth.core.framework.status import OK, SKIP, Code, Status
from tests.builders import NOW


def knode(name: str, **alloc: Any) -> dict[str, Any]:
    """A node as st.MakeNode().Capacity(...): only the given allocatable (names with '/' via a dict)."""
    res = {k.replace("_", "-"): str(v) for k, v in alloc.items()}
    meta = {"name": name, "labels": {"kubernetes.io/hostname": name}}
    return {"kind": "Node", "apiVersion": "v1", "metadata": meta, "status": {"allocatable": res, "capacity": res}}


def kpod(name: str, *containers: dict[str, Any], node: str = "", **spec: Any) -> dict[str, Any]:
    """A pod as st.MakePod().Req(...).Req(...): one container per requests map."""
    body: dict[str, Any] = {
        "containers": [
            {"name": f"c{i}", "image": "app", "resources": {"requests": {k: str(v) for k, v in c.items()}}}
            for i, c in enumerate(containers)
        ],
        **spec,
    }
    if node:
        body["nodeName"] = node
    meta = {"name": name, "namespace": "default", "uid": f"uid-{name}"}
    status = {"phase": "Running" if node else "Pending"}
    return {"kind": "Pod", "apiVersion": "v1", "metadata": meta, "spec": body, "status": status}


def scores(
    plugin_name: str,
    args: dict[str, Any] | None,
    pod: dict[str, Any],
    nodes: list[dict[str, Any]],
    pods: list[dict[str, Any]] = (),  # type: ignore[assignment]
) -> dict[str, int] | None:
    """The plugin's scores per node (None: PreScore skipped), made through a KubeSchedulerConfiguration."""
    cfg = parse_config(
        {"profiles": [{"pluginConfig": [{"name": plugin_name, "args": args}]}]} if args is not None else None
    )
    state = ClusterState()
    module = cfg.plugins.modules[plugin_name]
    plugin = module.new(cfg.args.get(plugin_name), state)
    if isinstance(plugin, KeepsState):
        state.attach(plugin.extension())
    for raw in [*nodes, *pods]:
        state.apply(convert(raw))
    cycle = Cycle(convert(pod), state, NOW)
    feasible = state.nodes.valid.copy()
    if isinstance(plugin, PreScorePlugin) and plugin.pre_score(cycle, feasible) == SKIP:
        return None
    assert isinstance(plugin, ScorePlugin)
    got = plugin.score(cycle, feasible)
    return {n["metadata"]["name"]: int(got[state.nodes.slot[n["metadata"]["name"]]]) for n in nodes}


def config_problems(plugin_name: str, args: dict[str, Any]) -> list[str]:
    with pytest.raises(ConfigError) as e:
        parse_config({"profiles": [{"pluginConfig": [{"name": plugin_name, "args": args}]}]})
    return [p.removeprefix("profiles[0].pluginConfig[0].args.") for p in e.value.problems]


def filter_run(
    plugin_name: str, pod: dict[str, Any], objects: list[dict[str, Any]]
) -> tuple[Status, dict[str, list[tuple[str, Code]]]]:
    """The plugin's PreFilter status, then (unless it skipped or rejected) each node's Filter
    reasons and codes, as upstream's filter tests call them."""
    state = ClusterState()
    plugin = parse_config(None).plugins.modules[plugin_name].new(None, state)
    if isinstance(plugin, KeepsState):
        state.attach(plugin.extension())
    for raw in objects:
        state.apply(convert(raw))
    cycle = Cycle(convert(pod), state, NOW)
    status = plugin.pre_filter(cycle) if isinstance(plugin, PreFilterPlugin) else OK
    out: dict[str, list[tuple[str, Code]]] = {}
    if status.code is Code.SUCCESS:
        assert isinstance(plugin, FilterPlugin)
        failures = plugin.filter(cycle)
        for name, slot in state.nodes.slot.items():
            out[name] = [(f.reason, f.code) for f in failures if f.mask[slot]]
    return status, out
