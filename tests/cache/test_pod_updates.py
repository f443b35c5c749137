"""A pod updated on its node (status churn) is replaced in place where nothing a store counts changed:
the node table's usage, NonZeroRequested's totals, PreemptionStore's pods and priority sources and
PodIndex's pods, matcher counts and terms stay what a plain count over the pods gives, whatever
the updates change."""

from __future__ import annotations

from collections import Counter
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from berth.core.api.core.model import Node, Pod, PodAffinity, PodAffinityTerm
from berth.core.api.core.resources import CPU, MEMORY, PODS
from berth.core.api.meta.selectors import LabelSelector
from berth.core.cache.state import ClusterState
from berth.core.config.kubeschedulerconfig import parse_config
from berth.core.pipeline.scorer import ScorerEngine
from berth.core.plugins.defaultpreemption import PreemptionStore
from berth.core.plugins.helper.podindex import GROUP_LISTS, PodIndex, assigned, matches
from berth.core.plugins.noderesources.allocation import NonZeroRequested

HOST = "kubernetes.io/hostname"
NODES = ("n0", "n1")
REQUESTS = ({CPU: 100, MEMORY: 1 << 20}, {CPU: 200, MEMORY: 1 << 20}, {CPU: 100, MEMORY: 2 << 20})
NONZERO = ({}, {CPU: 300, MEMORY: 1 << 20})
ANTI = PodAffinity(required_anti=(PodAffinityTerm(HOST, LabelSelector((("app", "a0"),))),))
PREFERRED = PodAffinity(preferred=(PodAffinityTerm(HOST, LabelSelector((("app", "a1"),)), weight=5),))
MATCHERS = tuple(((None, LabelSelector((("app", f"a{i}"),))),) for i in range(2))

# (pod, node: -1 none, labels, requests, nonzero requests, priority, affinity, deleting, finished, deleted)
STEPS = st.tuples(
    st.sampled_from(("p0", "p1", "p2")),
    st.integers(-1, len(NODES) - 1),
    st.integers(0, 1),
    st.integers(0, len(REQUESTS) - 1),
    st.integers(0, len(NONZERO) - 1),
    st.sampled_from((None, 0, 1000)),
    st.sampled_from((None, ANTI, PREFERRED)),
    st.booleans(),
    st.sampled_from((False, False, False, True)),  # mostly on their nodes: updates there are the point
    st.sampled_from((False, False, False, True)),
)


def _ext(state: ClusterState, kind: type) -> Any:
    return next(e for e in state.extensions if isinstance(e, kind))


def _check(state: ClusterState) -> None:
    on = [p for p in state.pods.values() if p.node_name and not p.terminated]
    nodes = state.nodes
    for n in NODES:
        here = [p for p in on if p.node_name == n]
        s = nodes.slot[n]
        for r in (CPU, MEMORY):
            assert nodes.requested(r)[s] == sum(p.requests.get(r, 0) for p in here)
            nonzero = _ext(state, NonZeroRequested).read(nodes, r)
            assert nonzero[s] == sum((p.nonzero_requests or p.requests).get(r, 0) for p in here)
        assert nodes.requested(PODS)[s] == len(here)
    store = _ext(state, PreemptionStore)
    placed = {k: v for k, v in store.pods_on.items() if v}
    assert placed.keys() == {p.node_name for p in on}
    for n, pods in placed.items():
        assert pods.keys() == {p.key for p in on if p.node_name == n}
        assert all(pods[k] is state.pods[k] for k in pods)
    assert store._sources == Counter((p.priority, p.priority_class_name) for p in on)
    index = _ext(state, PodIndex)
    live = [p for p in state.pods.values() if assigned(p)]
    assert index._assigned.keys() == {p.key for p in live}
    assert all(index._assigned[k] is state.pods[k] for k in index._assigned)
    for m in MATCHERS:
        for live_only in (False, True):
            want = [
                sum(1 for p in live if p.node_name == n and matches(m, p) and not (live_only and p.deleting))
                for n in NODES
            ]
            got = index.counts(state, m, live_only)
            assert [int(got[nodes.slot[n]]) for n in NODES] == want
    terms: dict[Any, Counter[int]] = {}
    for p in live:
        for w in GROUP_LISTS:
            for t in getattr(p.pod_affinity, w, ()):
                terms.setdefault((w, p.namespace, t), Counter())[nodes.slot[p.node_name]] += 1
    assert index._groups == {g: dict(c) for g, c in terms.items()}


@given(st.lists(STEPS, max_size=40), st.booleans())
@settings(max_examples=200, deadline=None)
def test_pod_updates_keep_every_count_a_plain_count_gives(steps: list[Any], watch: bool) -> None:
    state = ScorerEngine(parse_config(None)).state
    for n in NODES:
        state.apply(Node(name=n, labels={HOST: n}, allocatable={CPU: 8000, MEMORY: 1 << 34, PODS: 110}))
    if watch:  # matchers counted from the start: a change of liveness moves their counts
        index = _ext(state, PodIndex)
        for m in MATCHERS:
            index.counts(state, m, True)
    for rv, (name, n, labels, req, nonzero, priority, affinity, deleting, finished, deleted) in enumerate(steps, 1):
        p = Pod(
            namespace="default",
            name=name,
            uid=name,
            resource_version=str(rv),
            labels={"app": f"a{labels}"},
            node_name=NODES[n] if n >= 0 else "",
            phase="Succeeded" if finished else "Running",
            deleting=deleting,
            priority=priority,
            requests=REQUESTS[req],
            nonzero_requests=NONZERO[nonzero],
            pod_affinity=affinity,
        )
        state.apply(p, deleted=deleted)
        if watch:
            _check(state)
    _check(state)
