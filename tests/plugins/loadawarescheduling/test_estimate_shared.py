"""The store's estimates, shared by pods whose inputs are equal, against estimating each pod afresh."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from berth.core.api.kinds import convert
from berth.core.plugins.loadawarescheduling.args import parse_args
from berth.core.plugins.loadawarescheduling.estimator import PROD, Estimator, priority_class
from berth.core.plugins.loadawarescheduling.store import NodeMetricStore
from berth.core.plugins.loadawarescheduling.vectors import Resources

from .builders import pod

_CLASS = "koordinator.sh/priority-class"
_QOS = "koordinator.sh/qosClass"
_FACTORS = "scheduling.koordinator.sh/load-estimated-scaling-factors"

# small alphabets, so that pods often differ in one input only
_amount = st.sampled_from([None, "10m", "2"])
_memory = st.sampled_from([None, "1Gi"])
_labels = st.fixed_dictionaries(
    {},
    optional={
        _CLASS: st.sampled_from(["koord-batch", "koord-free", "other"]),
        _QOS: st.sampled_from(["LS", "BE"]),
        "app": st.sampled_from(["a", "b"]),
    },
)
_annotations = st.fixed_dictionaries({}, optional={_FACTORS: st.sampled_from(['{"cpu": 50}', "null"])})
_FIELDS = {
    "cpu": _amount,
    "memory": _memory,
    "limits": _amount.map(lambda v: {"cpu": v} if v else None),
    "requests": st.sampled_from([None, {"kubernetes.io/batch-cpu": "100"}]),
    "labels": _labels,
    "annotations": _annotations,
    "priority": st.sampled_from([None, 5500, 9500]),
}
# a walk: each pod differs from the one before in one field, so that pods often differ in one input
_walk = st.tuples(
    st.fixed_dictionaries(_FIELDS),
    st.lists(st.one_of(*(st.tuples(st.just(k), v) for k, v in _FIELDS.items())), max_size=30),
)


def _pods(walk: tuple[dict[str, Any], list[tuple[str, Any]]]) -> list[dict[str, Any]]:
    fields, steps = walk
    out = [pod("p0", **fields)]
    for i, (k, v) in enumerate(steps, start=1):
        fields = {**fields, k: v}
        out.append(pod(f"p{i}", **fields))
    return out


@settings(max_examples=300, deadline=None)
@given(walk=_walk, allow=st.booleans(), cpu=st.sampled_from([85, 60]))
def test_shared_estimates_are_each_pods_own(
    walk: tuple[dict[str, Any], list[tuple[str, Any]]], allow: bool, cpu: int
) -> None:
    args = parse_args({"allowCustomizeEstimation": allow, "estimatedScalingFactors": {"cpu": cpu, "memory": 70}})
    store = NodeMetricStore(args)
    oracle = Estimator(args, Resources.of(args))
    for raw in _pods(walk):
        p = convert(raw)
        est, prod = store.estimate(p)
        assert np.array_equal(est, oracle.estimate(p))
        assert prod == (priority_class(p) == PROD)


def test_pods_alike_share_one_estimate() -> None:
    store = NodeMetricStore(parse_args({}))
    a, b = convert(pod("a", cpu="1")), convert(pod("b", cpu="1", labels={"app": "x"}))
    c = convert(pod("c", cpu="2"))
    assert store.estimate(a)[0] is store.estimate(b)[0]
    assert store.estimate(a)[0] is not store.estimate(c)[0]
