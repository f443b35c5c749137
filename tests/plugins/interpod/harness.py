"""Run one plugin's Filter or Score on its own, as upstream's unit tests do (no other plugin involved)."""

from __future__ import annotations

from typing import Any

import numpy as np

from berth.core.api.kinds import convert
from berth.core.cache.state import ClusterState
from berth.core.framework.cycle import Cycle
from berth.core.framework.interface import KeepsState, PreFilterPlugin, PreScorePlugin
from berth.core.framework.status import Code
from tests.builders import NOW


def knode(name: str, taints: list[dict[str, str]] | None = None, **labels: str) -> dict[str, Any]:
    """A node with exactly these labels (upstream's st.MakeNode())."""
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "spec": {"taints": taints or []},
        "status": {"allocatable": {"cpu": "8", "memory": "8Gi", "pods": "110"}},
    }


def kpod(
    name: str,
    node: str = "",
    ns: str = "default",
    labels: dict[str, str] | None = None,
    owner: tuple[str, str, str] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    """A pod without requests (upstream's st.MakePod()); terminating=True sets a deletionTimestamp;
    owner: its controller (apiVersion, kind, name), as st.MakePod().OwnerReference."""
    meta: dict[str, Any] = {"name": name, "namespace": ns, "uid": f"uid-{ns}-{name}", "labels": labels or {}}
    if owner is not None:
        api, kind, owner_name = owner
        meta["ownerReferences"] = [{"apiVersion": api, "kind": kind, "name": owner_name, "controller": True}]
    if spec.pop("terminating", False):
        meta["deletionTimestamp"] = "2026-11-01T11:00:00Z"
    body = {"containers": [{"name": "c"}], **spec}
    if node:
        body["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": body, "status": {"phase": "Running"}}


def setup(
    module: Any,
    objs: list[dict[str, Any]],
    args: Any = None,
    deletions: list[dict[str, Any]] = (),  # type: ignore[assignment]
) -> tuple[ClusterState, Any]:
    """The plugin's state kept from the start; objects applied in order, then the deletions."""
    state = ClusterState()
    plugin = module.new(args, state)
    assert isinstance(plugin, KeepsState)
    state.attach(plugin.extension())
    for raw in objs:
        state.apply(convert(raw))
    for raw in deletions:
        state.apply(convert(raw), deleted=True)
    return state, plugin


def filter_codes(
    module: Any,
    pod: dict[str, Any],
    objs: list[dict[str, Any]],
    args: Any = None,
    deletions: tuple[dict[str, Any], ...] = (),
) -> dict[str, str]:
    """Each node's status code name (SUCCESS, UNSCHEDULABLE, UNRESOLVABLE) and reason, upstream's way."""
    state, plugin = setup(module, objs, args, deletions)
    cycle = Cycle(convert(pod), state, NOW)
    out = {n: "SUCCESS" for n in state.nodes.slot}
    if isinstance(plugin, PreFilterPlugin):
        status = plugin.pre_filter(cycle)
        if status.code is Code.SKIP:
            return out
        if status.rejects:  # on every node
            return {n: f"{status.code.name}: {status.message}" for n in out}
    for f in plugin.filter(cycle):
        for slot in np.flatnonzero(f.mask):
            out[state.nodes.names[slot] or ""] = f"{f.code.name}: {f.reason}"
    return out


def scores(
    module: Any, pod: dict[str, Any], objs: list[dict[str, Any]], feasible: list[str] | None = None, args: Any = None
) -> dict[str, int] | None:
    """Normalised scores of the feasible nodes (default: every node); None when PreScore skips."""
    state, plugin = setup(module, objs, args)
    cycle = Cycle(convert(pod), state, NOW)
    mask = np.zeros(len(state.nodes.valid), dtype=bool)
    for n in feasible if feasible is not None else state.nodes.slot:
        mask[state.nodes.slot[n]] = True
    if isinstance(plugin, PreScorePlugin) and plugin.pre_score(cycle, mask).code is Code.SKIP:
        return None
    got = plugin.score(cycle, mask)
    plugin.normalize_score(cycle, got, mask)
    return {n: int(got[s]) for n, s in state.nodes.slot.items() if mask[s]}
