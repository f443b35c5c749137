"""The nominator's kept answers (Nominator.view), changed in place as nominations are held, forgotten
and cleared, against a plain oracle worked out from its nominations alone at each query: by node,
in namespace/name order, the nominations of at least the pod's priority but the pod itself (kube's
addGENominatedPods), with each node's amounts, their columns and the pods' keys."""

from __future__ import annotations

from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from berth.core.api.core.model import Pod
from berth.core.api.core.resources import PODS
from berth.core.api.kinds import convert
from berth.core.scheduler.nominator import Nominated, Nominator
from tests.plugins.defaultpreemption.helpers import HIGH, LOW, MID, Harness, knode, kpod

NODES = ["n0", "n1", "n2"]
POOL = 6  # pods p0..p5
CPU = ["100m", "200m", "300m"]


def pool_pod(i: int, priority: int, uid: int, **extra: Any) -> Pod:
    raw = kpod(f"p{i}", priority=priority, req={"cpu": CPU[i % 3], "memory": "100"}, **extra)
    raw["metadata"]["uid"] = f"uid{uid}"
    pod: Pod = convert(raw)
    return pod


def oracle(nominator: Nominator, pod: Pod) -> list[tuple[str, list[str]]]:
    """By node in the order of its first pod, the keys of the nominations the pod's filters see."""
    every = sorted({**nominator._waiting, **nominator._held}.items())
    mine = nominator.state.priority(pod)
    by_node: dict[str, list[str]] = {}
    for key, other in every:
        if key == pod.key or (pod.uid and other.uid == pod.uid):
            continue
        if nominator.state.priority(other) >= mine:
            by_node.setdefault(other.nominated_node, []).append(key)
    return list(by_node.items())


def check(nominator: Nominator, view: Nominated, pod: Pod) -> None:
    assert [(node, [p.key for p in pods]) for node, pods in view.by_node.items()] == oracle(nominator, pod)
    assert view.keys() == {p.key for pods in view.by_node.values() for p in pods}
    amounts = view.amounts(nominator)
    want = {}
    for node, pods in view.by_node.items():
        total: dict[str, int] = {}
        for p in pods:
            for name, v in {**p.requests, PODS: 1}.items():
                total[name] = total.get(name, 0) + v
        want[node] = total
    assert amounts == want
    rows, columns = view.columns(nominator)
    for name, column in columns.items():
        for node, row in rows.items():  # a node whose nominations all left keeps its row, at zero
            assert column[row] == want.get(node, {}).get(name, 0)
    assert {name for total in want.values() for name in total} <= columns.keys()


OP = st.one_of(
    st.tuples(st.just("hold"), st.integers(0, POOL - 1), st.sampled_from(NODES)),
    st.tuples(st.just("waiting"), st.integers(0, POOL - 1), st.sampled_from(NODES)),
    st.tuples(st.just("forget"), st.integers(0, POOL - 1)),
    st.tuples(st.just("clear"), st.integers(0, POOL - 1)),
    st.tuples(st.just("bound"), st.integers(0, POOL - 1)),
    st.tuples(st.just("query"), st.integers(0, POOL + 2), st.booleans()),
)


@settings(max_examples=300, deadline=None)
@given(
    priorities=st.lists(st.sampled_from([LOW, MID, HIGH]), min_size=POOL, max_size=POOL),
    uids=st.lists(st.integers(0, POOL), min_size=POOL, max_size=POOL),  # now and then two pods share one
    ops=st.lists(OP, max_size=30),
)
# pods held in name order, each query of a pod of the same priority answered from what is kept,
# then the first of a node's two pods forgotten (its node moves in the order)
@example(
    priorities=[MID] * POOL,
    uids=list(range(POOL)),
    ops=[
        ("hold", 0, "n0"),
        ("query", 7, True),
        ("hold", 1, "n1"),
        ("hold", 2, "n0"),
        ("query", 7, True),
        ("query", 1, False),
        ("forget", 0),
        ("query", 7, True),
        ("hold", 3, "n2"),
        ("query", 3, True),
    ],
)
def test_the_kept_answers_are_the_nominations_seen_now(
    priorities: list[int], uids: list[int], ops: list[tuple[Any, ...]]
) -> None:
    h = Harness().add(*(knode(n, {"cpu": "4", "memory": "4Gi"}) for n in NODES))
    nominator = h.scheduler.nominator
    pods = [pool_pod(i, priorities[i], uids[i]) for i in range(POOL)]
    outsiders = [pool_pod(POOL + k, p, 100 + k) for k, p in enumerate([LOW, MID, HIGH])]
    version = 0
    for op in ops:
        if op[0] == "hold":
            nominator.hold(pods[op[1]], op[2])
        elif op[0] in ("waiting", "bound"):  # the pod's own object: nominated, or bound to a node
            version += 1
            i = op[1]
            meta = {"uid": f"uid{uids[i]}", "resourceVersion": str(version)}
            raw = kpod(f"p{i}", priority=priorities[i], req={"cpu": CPU[i % 3], "memory": "100"}, metadata=meta)
            if op[0] == "waiting":
                raw["status"]["nominatedNodeName"] = op[2]
            else:
                raw["spec"]["nodeName"] = NODES[i % 3]
                raw["status"]["phase"] = "Running"
            h.add(raw)
        elif op[0] == "forget":
            nominator.forget(pods[op[1]].key)
        elif op[0] == "clear":
            nominator.clear(pods[op[1]].key)
        else:
            pod = pods[op[1]] if op[1] < POOL else outsiders[op[1] - POOL]
            view = nominator.view(pod)
            if op[2]:  # amounts and columns made now, so that later changes carry them
                view.amounts(nominator)
                view.columns(nominator)
            check(nominator, view, pod)
    for pod in [*pods, *outsiders]:
        check(nominator, nominator.view(pod), pod)
