"""PodIndex.groups: the existing pods' terms a pod may match, filed by their selector's first matchLabels pair."""

from __future__ import annotations

import pytest

from berth.core.api.core.model import Node, Pod, PodAffinity, PodAffinityTerm
from berth.core.api.meta.selectors import LabelSelector, Requirement
from berth.core.cache.state import ClusterState
from berth.core.plugins.helper.podindex import PodIndex

HOST = "kubernetes.io/hostname"
BY_APP = LabelSelector((("app", "db"), ("tier", "x")))
BY_EXPRESSION = LabelSelector((), (Requirement("app", "In", ("db", "web")),))
NO_SELECTOR = None


def holder(name: str, selector: LabelSelector | None) -> Pod:
    anti = PodAffinity(required_anti=(PodAffinityTerm(HOST, selector),))
    return Pod(namespace="ns", name=name, uid=name, node_name="n1", phase="Running", pod_affinity=anti)


@pytest.mark.parametrize(
    ("case", "labels", "want"),
    [
        ("the first matchLabels pair held", {"app": "db"}, {"by-app", "by-expression", "no-selector"}),
        ("another value of that key", {"app": "web"}, {"by-expression", "no-selector"}),
        ("no labels", {}, {"by-expression", "no-selector"}),
    ],
)
def test_groups_may_match(case: str, labels: dict[str, str], want: set[str]) -> None:
    state = ClusterState()
    index = PodIndex()
    state.attach(index)
    state.apply(Node(name="n1", labels={HOST: "n1"}, allocatable={"pods": 110}))
    pods = {"by-app": BY_APP, "by-expression": BY_EXPRESSION, "no-selector": NO_SELECTOR}
    for name, selector in pods.items():
        state.apply(holder(name, selector))
    got = {name for name, sel in pods.items() for _, t, _ in index.groups("required_anti", labels) if t.selector == sel}
    assert got == want
    assert index.groups("required", labels) == []


def test_a_term_leaves_with_its_last_pod() -> None:
    state = ClusterState()
    index = PodIndex()
    state.attach(index)
    state.apply(Node(name="n1", labels={HOST: "n1"}, allocatable={"pods": 110}))
    state.apply(holder("a", BY_APP))
    state.apply(holder("b", BY_APP))
    assert len(index.groups("required_anti", {"app": "db"})) == 1
    state.apply(holder("a", BY_APP), deleted=True)
    assert len(index.groups("required_anti", {"app": "db"})) == 1
    state.apply(holder("b", BY_APP), deleted=True)
    assert index.groups("required_anti", {"app": "db"}) == []
