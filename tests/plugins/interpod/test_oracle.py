"""Both plugins' Filter against a brute-force oracle written from the reference rules, on random small
clusters built up and changed step by step (pods bound, deleted, terminating; nodes relabelled and removed),
so the pod index's incremental counts are checked too."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from berth.core.api.core.model import Node, Pod
from berth.core.api.kinds import convert
from berth.core.cache.state import ClusterState
from berth.core.plugins import interpodaffinity, podtopologyspread
from tests.plugins.interpod.builders import affinity, spread, term
from tests.plugins.interpod.harness import filter_codes, knode, kpod

HOST, ZONE = "kubernetes.io/hostname", "topology.kubernetes.io/zone"
SPREAD = "UNSCHEDULABLE: node(s) didn't match pod topology spread constraints"
MISSING = "UNRESOLVABLE: node(s) didn't match pod topology spread constraints (missing required label)"
AFF = "UNRESOLVABLE: node(s) didn't match pod affinity rules"
ANTI = "UNSCHEDULABLE: node(s) didn't match pod anti-affinity rules"
EXISTING = "UNSCHEDULABLE: node(s) didn't satisfy existing pods anti-affinity rules"

apps = st.sampled_from(["a", "b"])
keys = st.sampled_from([HOST, ZONE])


@st.composite
def nodes(draw: Any) -> list[dict[str, Any]]:
    out = []
    for i in range(draw(st.integers(1, 6))):
        labels = {HOST: f"n{i}"}
        zone = draw(st.sampled_from(["z1", "z2", "z3", None]))
        if zone is not None:
            labels[ZONE] = zone
        out.append(knode(f"n{i}", **labels))
    return out


@st.composite
def pods(draw: Any, count: int) -> list[dict[str, Any]]:
    out = []
    for i in range(draw(st.integers(0, 10))):
        app = draw(apps)
        anti = draw(st.booleans())
        spec: dict[str, Any] = {"affinity": affinity(anti=[term({"app": draw(apps)}, draw(keys))])} if anti else {}
        ns = draw(st.sampled_from(["default", "default", "other"]))
        node = f"n{draw(st.integers(0, count))}"  # n{count} does not exist
        out.append(kpod(f"e{i}", node=node, ns=ns, labels={"app": app}, terminating=draw(st.booleans()), **spec))
    return out


@st.composite
def incoming(draw: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    constraints = [
        spread(draw(keys), {"app": draw(apps)}, draw(st.integers(1, 2)), minDomains=draw(st.integers(1, 3)))
        for _ in range(draw(st.integers(0, 2)))
    ]
    if constraints:
        spec["topologySpreadConstraints"] = constraints
    req = [term({"app": draw(apps)}, draw(keys)) for _ in range(draw(st.integers(0, 2)))]
    anti = [term({"app": draw(apps)}, draw(keys)) for _ in range(draw(st.integers(0, 1)))]
    if req or anti:
        spec["affinity"] = affinity(required=req or None, anti=anti or None)
    return kpod("incoming", labels={"app": draw(apps)}, **spec)


@st.composite
def clusters(draw: Any) -> tuple[list[dict[str, Any]], list[tuple[str, dict[str, Any]]]]:
    """Objects, then changes (("delete", obj) or ("apply", obj))."""
    ns = draw(nodes())
    ps = draw(pods(len(ns)))
    changes: list[tuple[str, dict[str, Any]]] = []
    for p in ps:
        if draw(st.booleans()) and draw(st.booleans()):
            changes.append(("delete", p))
    for n in ns:
        if draw(st.booleans()) and draw(st.booleans()):
            zone = draw(st.sampled_from(["z1", "z2"]))
            relabelled = knode(n["metadata"]["name"], **{**n["metadata"]["labels"], ZONE: zone})
            changes.append(("apply", relabelled))
    if len(ns) > 1 and draw(st.booleans()):
        changes.append(("delete", ns[-1]))
    return [*ns, *ps], changes


def final(objs: list[dict[str, Any]], changes: list[tuple[str, dict[str, Any]]]) -> ClusterState:
    state = ClusterState()
    for raw in objs:
        state.apply(convert(raw))
    for what, raw in changes:
        state.apply(convert(raw), deleted=what == "delete")
    return state


# ---- the oracle: every node, every pod, as the reference describes -----------------------------------


def placed(state: ClusterState) -> list[tuple[Pod, Node]]:
    out = []
    for p in state.pods.values():
        node = state.nodes.get(p.node_name) if p.node_name else None
        if node is not None and not p.terminated:
            out.append((p, node))
    return out


def spread_oracle(state: ClusterState, pod: Pod) -> dict[str, str]:
    hard = [c for c in pod.spread if c.when_unsatisfiable == "DoNotSchedule"]
    verdict = {n.name: "SUCCESS" for n in state.nodes.all()}
    if not hard:
        return verdict
    counts: list[dict[str, int]] = []
    for c in hard:
        per_domain: dict[str, int] = {}
        for n in state.nodes.all():
            if all(x.topology_key in n.labels for x in hard):
                per_domain.setdefault(n.labels[c.topology_key], 0)
        for p, n in placed(state):
            if (
                all(x.topology_key in n.labels for x in hard)
                and not p.deleting
                and p.namespace == pod.namespace
                and c.selector is not None
                and c.selector.matches(p.labels)
            ):
                per_domain[n.labels[c.topology_key]] += 1
        counts.append(per_domain)
    for n in state.nodes.all():
        for c, per_domain in zip(hard, counts, strict=True):
            if c.topology_key not in n.labels:
                verdict[n.name] = MISSING
                break
            low = 0 if len(per_domain) < c.min_domains else min(per_domain.values())
            mine = per_domain.get(n.labels[c.topology_key], 0)
            self_match = int(c.selector is not None and c.selector.matches(pod.labels))
            if mine + self_match - low > c.max_skew:
                verdict[n.name] = SPREAD
                break
    return verdict


def term_matches(t: Any, owner_ns: str, p: Pod) -> bool:
    return p.namespace in (t.namespaces or (owner_ns,)) and t.selector is not None and t.selector.matches(p.labels)


def affinity_oracle(state: ClusterState, pod: Pod) -> dict[str, str]:
    a = pod.pod_affinity
    req = a.required if a else ()
    anti = a.required_anti if a else ()
    others = placed(state)
    verdict = {}
    matching_anywhere = any(
        all(term_matches(t, pod.namespace, p) for t in req) and any(t.topology_key in n.labels for t in req)
        for p, n in others
    )
    self_ok = all(term_matches(t, pod.namespace, pod) for t in req)
    for node in state.nodes.all():

        def same(n: Node, key: str, node: Node = node) -> bool:
            return key in n.labels and key in node.labels and n.labels[key] == node.labels[key]

        ok_aff = all(t.topology_key in node.labels for t in req) and (
            all(any(same(n, t.topology_key) and all(term_matches(u, pod.namespace, p) for u in req)
                    for p, n in others) for t in req)
            or (not matching_anywhere and self_ok)
        )  # fmt: skip
        if not ok_aff:
            verdict[node.name] = AFF
        elif any(same(n, t.topology_key) and term_matches(t, pod.namespace, p) for t in anti for p, n in others):
            verdict[node.name] = ANTI
        elif any(
            same(n, t.topology_key) and term_matches(t, p.namespace, pod)
            for p, n in others
            if p.pod_affinity
            for t in p.pod_affinity.required_anti
        ):
            verdict[node.name] = EXISTING
        else:
            verdict[node.name] = "SUCCESS"
    return verdict


@settings(max_examples=300, deadline=None)
@given(clusters(), incoming())
def test_both_filters_agree_with_the_oracle(cluster: Any, pod_raw: dict[str, Any]) -> None:
    objs, changes = cluster
    changed = [*objs, *[raw for _, raw in changes]]
    state = final(objs, changes)
    pod = convert(pod_raw)
    for module, oracle in ((podtopologyspread, spread_oracle), (interpodaffinity, affinity_oracle)):
        got = run(module, pod_raw, objs, changes)
        assert got == oracle(state, pod), (module.NAME, changed)


def run(module: Any, pod_raw: dict[str, Any], objs: list[dict[str, Any]], changes: list[Any]) -> dict[str, str]:
    deleted = [raw for what, raw in changes if what == "delete"]
    applied = [raw for what, raw in changes if what == "apply"]
    return filter_codes(module, pod_raw, [*objs, *applied], deletions=tuple(deleted))
