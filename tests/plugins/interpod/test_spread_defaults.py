"""PodTopologySpread's default constraints (defaultingType System and List) and the selector kube deduces
for them from Services and controllers, against upstream's tables (podtopologyspread filtering_test.go
TestPreFilterState, scoring_test.go TestPreScoreSkip, TestPreScoreStateEmptyNodes, TestPodTopologySpreadScore)."""

from __future__ import annotations

from typing import Any

import pytest

from berth.core.api.kinds import convert
from berth.core.api.meta.selectors import LabelSelector
from berth.core.api.meta.validation import Problems
from berth.core.framework.cycle import Cycle
from berth.core.framework.status import Code
from berth.core.plugins import podtopologyspread
from berth.core.plugins.podtopologyspread import DO_NOT_SCHEDULE, SCHEDULE_ANYWAY, Args, PodTopologySpread
from tests.builders import NOW
from tests.plugins.interpod.builders import controller, service, spread
from tests.plugins.interpod.harness import filter_codes, knode, kpod, scores, setup

HOST, ZONE = "kubernetes.io/hostname", "topology.kubernetes.io/zone"
FOO = {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}
RS1 = ("apps/v1", "ReplicaSet", "rs1")


def args_of(raw: dict[str, Any]) -> Args:
    problems: Problems = []
    got = Args.parse(raw, "args", problems)
    assert problems == []
    return got


def listed(*constraints: tuple[int, str, str]) -> Args:
    return args_of(
        {
            "defaultingType": "List",
            "defaultConstraints": [{"maxSkew": s, "topologyKey": k, "whenUnsatisfiable": w} for s, k, w in constraints],
        }
    )


def shown(sel: LabelSelector | None) -> list[str]:
    """A selector as text, to compare with upstream's: `k=v` for labels, `k Op [values]` for expressions."""
    assert sel is not None
    return [f"{k}={v}" for k, v in sel.match_labels] + [
        f"{r.key} {r.operator} {list(r.values)}" for r in sel.match_expressions
    ]


# (upstream test/case, args, the pod, objects, mode, the constraints: (maxSkew, key, selector) or [] for Skip)
CASES: list[tuple[str, Args, dict[str, Any], list[dict[str, Any]], str, list[tuple[int, str, list[str]]]]] = [
    (
        "TestPreFilterState/default constraints and a service",
        listed((3, "node", DO_NOT_SCHEDULE), (2, "node", SCHEDULE_ANYWAY), (5, "rack", DO_NOT_SCHEDULE)),
        kpod("p", labels={"foo": "bar", "baz": "kar"}),
        [service("s", {"foo": "bar"})],
        DO_NOT_SCHEDULE,
        [(3, "node", ["foo=bar"]), (5, "rack", ["foo=bar"])],
    ),
    (
        "TestPreFilterState/default constraints and a service that doesn't match",
        listed((3, "node", DO_NOT_SCHEDULE)),
        kpod("p", labels={"foo": "bar"}),
        [service("s", {"baz": "kep"})],
        DO_NOT_SCHEDULE,
        [],
    ),
    (
        "TestPreFilterState/default constraints and a service, but pod has constraints",
        listed((2, "node", DO_NOT_SCHEDULE)),
        kpod(
            "p",
            labels={"foo": "bar", "baz": "tar"},
            topologySpreadConstraints=[
                spread("zone", {"baz": "tar"}, 1, DO_NOT_SCHEDULE),
                spread("planet", {"fot": "rok"}, 2, SCHEDULE_ANYWAY),
            ],
        ),
        [service("s", {"foo": "bar"})],
        DO_NOT_SCHEDULE,
        [(1, "zone", ["baz=tar"])],
    ),
    (
        "TestPreFilterState/default soft constraints and a service",
        listed((2, "node", SCHEDULE_ANYWAY)),
        kpod("p", labels={"foo": "bar"}),
        [service("s", {"foo": "bar"})],
        DO_NOT_SCHEDULE,
        [],
    ),
    (
        "TestPreScoreSkip/the pod doesn't have soft topology spread Constraints",
        args_of({"defaultingType": "List"}),
        kpod("p"),
        [],
        SCHEDULE_ANYWAY,
        [],
    ),
    (
        "TestPreScoreSkip/default constraints and a replicaset that doesn't match",
        listed((2, "planet", SCHEDULE_ANYWAY)),
        kpod("p", labels={"foo": "bar", "baz": "sup"}, owner=("apps/v1", "ReplicaSet", "rs2")),
        [controller("ReplicaSet", "rs1", {"matchExpressions": [{"key": "tar", "operator": "Exists"}]})],
        SCHEDULE_ANYWAY,
        [],
    ),
    (
        "TestPreScoreStateEmptyNodes/system default constraints and a replicaset",
        Args(),
        kpod("p", labels={"foo": "tar", "baz": "sup"}, owner=RS1),
        [controller("ReplicaSet", "rs1", FOO)],
        SCHEDULE_ANYWAY,
        [(3, HOST, ["foo Exists []"]), (5, ZONE, ["foo Exists []"])],
    ),
    (
        "TestPreScoreStateEmptyNodes/default constraints and a replicaset",
        listed((1, HOST, SCHEDULE_ANYWAY), (2, "rack", DO_NOT_SCHEDULE), (2, "planet", SCHEDULE_ANYWAY)),
        kpod("p", labels={"foo": "tar", "baz": "sup"}, owner=RS1),
        [controller("ReplicaSet", "rs1", FOO)],
        SCHEDULE_ANYWAY,
        [(1, HOST, ["foo Exists []"]), (2, "planet", ["foo Exists []"])],
    ),
    (
        "TestPreScoreStateEmptyNodes/default constraints and a replicaset, but pod has constraints",
        listed((2, "galaxy", SCHEDULE_ANYWAY)),
        kpod(
            "p",
            labels={"foo": "bar", "baz": "sup"},
            owner=RS1,
            topologySpreadConstraints=[
                spread("zone", None, 1, DO_NOT_SCHEDULE)
                | {"labelSelector": {"matchExpressions": [{"key": "bar", "operator": "Exists"}]}},
                spread("planet", {"baz": "sup"}, 2, SCHEDULE_ANYWAY),
            ],
        ),
        [controller("ReplicaSet", "rs1", FOO)],
        SCHEDULE_ANYWAY,
        [(2, "planet", ["baz=sup"])],
    ),
]


@pytest.mark.parametrize(("args", "pod", "objs", "mode", "want"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_constraints_as_upstream(
    args: Args, pod: dict[str, Any], objs: list[dict[str, Any]], mode: str, want: list[tuple[int, str, list[str]]]
) -> None:
    _, plugin = setup(podtopologyspread, objs, args)
    assert isinstance(plugin, PodTopologySpread)
    got = plugin.constraints(convert(pod), mode)
    assert [(c.max_skew, c.topology_key, shown(sel)) for c, sel in got] == want


def test_pre_score_and_pre_filter_skip_without_a_default_selector() -> None:
    """TestPreScoreSkip/"default constraints and a replicaset that doesn't match": PreScore is Skip."""
    pod = kpod("p", labels={"foo": "bar"}, owner=("apps/v1", "ReplicaSet", "rs2"))
    objs = [knode("node-a", planet="mars"), controller("ReplicaSet", "rs1", FOO)]
    assert scores(podtopologyspread, pod, objs, args=listed((2, "planet", SCHEDULE_ANYWAY))) is None


# (how the pod is owned or selected, the objects that select it, the selector kube deduces)
SELECTORS: list[tuple[str, tuple[str, str, str] | None, list[dict[str, Any]], list[str] | None]] = [
    ("services merge", None, [service("a", {"app": "db"}), service("b", {"tier": "x"})], ["app=db", "tier=x"]),
    ("a service without a selector selects nothing", None, [service("a", None)], None),
    ("a service of another namespace", None, [service("a", {"app": "db"}, ns="other")], None),
    (
        "a replication controller's map",
        ("v1", "ReplicationController", "rc"),
        [controller("ReplicationController", "rc", {"app": "db"})],
        ["app=db"],
    ),
    (
        "a statefulset's requirements after the services'",
        ("apps/v1", "StatefulSet", "ss"),
        [service("a", {"tier": "x"}), controller("StatefulSet", "ss", {"matchLabels": {"app": "db"}})],
        ["tier=x", "app=db"],
    ),
    (
        "an owner of another API version is not read",
        ("extensions/v1beta1", "ReplicaSet", "rs"),
        [controller("ReplicaSet", "rs", {"matchLabels": {"app": "db"}})],
        None,
    ),
]


@pytest.mark.parametrize(("owner", "objs", "want"), [s[1:] for s in SELECTORS], ids=[s[0] for s in SELECTORS])
def test_default_selector(
    owner: tuple[str, str, str] | None, objs: list[dict[str, Any]], want: list[str] | None
) -> None:
    _, plugin = setup(podtopologyspread, objs)
    pod = convert(kpod("p", labels={"app": "db", "tier": "x"}, owner=owner))
    got = plugin.index.owners.selector(pod)
    assert (None if got is None else shown(got)) == want


def test_a_deleted_service_no_longer_selects() -> None:
    svc = service("a", {"app": "db"})
    _state, plugin = setup(podtopologyspread, [svc], deletions=[svc])
    assert plugin.index.owners.selector(convert(kpod("p", labels={"app": "db"}))) is None


def hosts(*counts: int) -> list[dict[str, Any]]:
    names = [f"node-{n}" for n in "abcd"[: len(counts)]]
    nodes = [knode(n, **{HOST: n}) for n in names]
    pods = [kpod(f"p-{n}{i}", node=n, labels={"foo": ""}) for n, k in zip(names, counts, strict=True) for i in range(k)]
    return [*nodes, *pods]


def test_system_defaulting_nodes_without_zone_pods_match_a_service() -> None:
    """TestPodTopologySpreadScore/"system defaulting, nodes don't have zone, pods match service":
    4/3/2/1 matching pods, no zone label: the zone constraint adds nothing, the hostname one scores."""
    objs = [*hosts(4, 3, 2, 1), service("s", {"foo": ""})]
    got = scores(podtopologyspread, kpod("p", labels={"foo": ""}), objs)
    assert got == {"node-a": 44, "node-b": 66, "node-c": 77, "node-d": 100}


def test_without_a_service_the_pod_gets_no_default_constraints() -> None:
    assert scores(podtopologyspread, kpod("p", labels={"foo": ""}), hosts(4, 3, 2, 1)) is None


def test_system_defaulting_counts_nodes_without_a_zone_as_one_domain() -> None:
    """As TestPreScoreStateEmptyNodes/"system default constraints and a replicaset": nodes without a zone
    take part (domain ""), but only nodes with the label add the zone term. mars: a, b (2 pods on a);
    c, d no zone (1 pod on c). Zone weight ln(2 + 2), hostname ln(4 + 2).
    a: 2·ln6 + 2 + 2·ln4 + 4 = 12.35 -> 12; b: 0 + 2 + 2·ln4 + 4 = 8.77 -> 9; c: ln6 + 2 = 3.79 -> 4;
    d: 2 -> 2. Normalised 100·(12 + 2 − s) // 12."""
    pods = [kpod(f"x{i}", node=n, labels={"foo": "tar"}) for i, n in enumerate(["node-a", "node-a", "node-c"])]
    nodes = [
        knode("node-a", **{HOST: "node-a", ZONE: "mars"}),
        knode("node-b", **{HOST: "node-b", ZONE: "mars"}),
        knode("node-c", **{HOST: "node-c"}),
        knode("node-d", **{HOST: "node-d"}),
    ]
    pod = kpod("p", labels={"foo": "tar"}, owner=RS1)
    got = scores(podtopologyspread, pod, [*nodes, *pods, controller("ReplicaSet", "rs1", FOO)])
    assert got == {"node-a": 16, "node-b": 41, "node-c": 83, "node-d": 100}


def test_list_defaulting_ignores_nodes_without_every_key() -> None:
    """List defaulting requires every key (kube's requireAllTopologies): node-c lacks `rack` and scores 0."""
    nodes = [knode("node-a", rack="r1"), knode("node-b", rack="r2"), knode("node-c")]
    pods = [kpod("x", node="node-a", labels={"foo": "tar"})]
    pod = kpod("p", labels={"foo": "tar"}, owner=RS1)
    args = listed((1, "rack", SCHEDULE_ANYWAY))
    got = scores(podtopologyspread, pod, [*nodes, *pods, controller("ReplicaSet", "rs1", FOO)], args=args)
    assert got == {"node-a": 0, "node-b": 100, "node-c": 0}


def test_list_defaulting_hard_constraints_filter() -> None:
    """A List DoNotSchedule default constraint filters as the pod's own would: rack r1 holds 2, r2 none."""
    nodes = [knode("node-a", rack="r1"), knode("node-b", rack="r2"), knode("node-c")]
    pods = [kpod(f"x{i}", node="node-a", labels={"foo": "bar"}) for i in range(2)]
    pod = kpod("p", labels={"foo": "bar"})
    args = listed((1, "rack", DO_NOT_SCHEDULE))
    got = filter_codes(podtopologyspread, pod, [*nodes, *pods, service("s", {"foo": "bar"})], args=args)
    assert got == {
        "node-a": "UNSCHEDULABLE: node(s) didn't match pod topology spread constraints",
        "node-b": "SUCCESS",
        "node-c": "UNRESOLVABLE: node(s) didn't match pod topology spread constraints (missing required label)",
    }


def test_system_defaults_never_filter() -> None:
    state, plugin = setup(podtopologyspread, [knode("node-a"), service("s", {"foo": ""})])
    assert plugin.pre_filter(Cycle(convert(kpod("p", labels={"foo": ""})), state, NOW)).code is Code.SKIP
