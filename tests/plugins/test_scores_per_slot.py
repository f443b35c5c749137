"""NodeResourcesFit's and NodeResourcesBalancedAllocation's score_on over a few slots works slot by slot in
Python (allocation.FEW_SLOTS); it must give what the plugins' numpy pass over every node gives there,
values near int64's edge included (those go back to numpy)."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from berth.core.api.kinds import convert
from berth.core.cache.state import ClusterState
from berth.core.config.kubeschedulerconfig import parse_config
from berth.core.framework.cycle import Cycle
from berth.core.framework.interface import KeepsState
from berth.core.plugins.noderesources.allocation import FEW_SLOTS
from tests.builders import NOW
from tests.plugins.helpers import knode, kpod

GPU = "example.com/gpu"
# mostly everyday sizes; now and then 0 or the largest a quantity may be (kube's int64 milli-value):
# a few such pods on a node add up past allocation.SAFE_INT
LARGEST = 9_223_372_036_854_775
amounts = st.one_of(st.integers(0, 64_000), st.sampled_from([0, 1, 2**53, LARGEST]))
resources = st.lists(
    st.tuples(st.sampled_from(["cpu", "memory", "ephemeral-storage", GPU, "pods"]), st.integers(1, 100)),
    min_size=1,
    max_size=4,
    unique_by=lambda r: r[0],
)
fit_args = st.builds(
    lambda kind, rs: {"scoringStrategy": {"type": kind, "resources": [{"name": n, "weight": w} for n, w in rs]}},
    st.sampled_from(["LeastAllocated", "MostAllocated"]),
    resources,
)
balanced_args = st.one_of(
    st.none(),
    st.builds(lambda rs: {"resources": [{"name": n, "weight": 1} for n, _ in rs]}, resources),
)


def requests(draw: st.DrawFn) -> dict[str, Any]:
    return {
        "cpu": f"{draw(amounts)}m",
        "memory": str(draw(amounts)),
        **({GPU: str(draw(st.integers(0, 4)))} if draw(st.booleans()) else {}),
    }


@st.composite
def clusters(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any]]:
    nodes = []
    for i in range(draw(st.integers(1, 12))):
        alloc = {"cpu": f"{draw(amounts)}m", "memory": draw(amounts), "pods": 110}
        if draw(st.booleans()):
            alloc["ephemeral_storage"] = draw(amounts)
        if draw(st.booleans()):
            alloc[GPU] = draw(st.integers(0, 8))
        nodes.append(knode(f"n{i}", **{k: v for k, v in alloc.items() if k != GPU}, **{GPU: alloc.get(GPU, 0)}))
    pods = [
        kpod(f"p{j}", requests(draw), node=f"n{draw(st.integers(0, len(nodes) - 1))}")
        for j in range(draw(st.integers(0, 10)))
    ]
    return nodes, pods, kpod("pending", requests(draw))


def _both(name: str, args: dict[str, Any] | None, cluster: Any, picked: list[int]) -> tuple[list[int], list[int]]:
    """score_on over the picked slots, and the full pass's scores there."""
    nodes, pods, pending = cluster
    cfg = parse_config({"profiles": [{"pluginConfig": [{"name": name, "args": args}]}]} if args else None)
    state = ClusterState()
    plugin = cfg.plugins.modules[name].new(cfg.args.get(name), state)
    if isinstance(plugin, KeepsState):
        state.attach(plugin.extension())
    for raw in [*nodes, *pods]:
        state.apply(convert(raw))
    cycle = Cycle(convert(pending), state, NOW)
    slots = np.array(sorted({p % len(nodes) for p in picked}), dtype=np.intp)
    assert len(slots) <= FEW_SLOTS
    full = plugin.score(cycle, state.nodes.valid.copy())
    return plugin.score_on(cycle, slots).tolist(), full[slots].tolist()


@settings(max_examples=300, deadline=None)
@given(clusters(), fit_args, st.lists(st.integers(0, 11), min_size=1, max_size=FEW_SLOTS))
def test_fit_scores_few_slots_as_its_full_pass(cluster: Any, args: dict[str, Any], picked: list[int]) -> None:
    got, want = _both("NodeResourcesFit", args, cluster, picked)
    assert got == want


@settings(max_examples=300, deadline=None)
@given(clusters(), balanced_args, st.lists(st.integers(0, 11), min_size=1, max_size=FEW_SLOTS))
def test_balanced_allocation_scores_few_slots_as_its_full_pass(
    cluster: Any, args: dict[str, Any] | None, picked: list[int]
) -> None:
    got, want = _both("NodeResourcesBalancedAllocation", args, cluster, picked)
    assert got == want
