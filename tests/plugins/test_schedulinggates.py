"""SchedulingGates (kube's PreEnqueue plugin, first in kube's default profile): a pod with
spec.schedulingGates is held back, not decided, until an update removes every gate."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from berth.core.api.kinds import convert
from berth.core.cache.state import ClusterState
from berth.core.config.kubeschedulerconfig import parse_config
from berth.core.framework.status import OK, Code, Status
from berth.core.pipeline.scorer import ScorerEngine
from berth.core.plugins import schedulinggates
from tests.builders import node, pod
from tests.pipeline.test_engine import Log, replay
from tests.test_cli_profiles import run, write


def gates(*names: str) -> dict[str, Any]:
    return {"schedulingGates": [{"name": n} for n in names]}


# upstream: pkg/scheduler/framework/plugins/schedulinggates/scheduling_gates_test.go TestPreEnqueue
PRE_ENQUEUE: list[tuple[str, dict[str, Any], Status]] = [
    ("TestPreEnqueue/pod does not carry scheduling gates", pod("p"), OK),
    (
        "TestPreEnqueue/pod carries scheduling gates",
        pod("p", **gates("foo", "bar")),
        Status(Code.UNRESOLVABLE, "waiting for scheduling gates: [foo bar]", "SchedulingGates"),
    ),
]


@pytest.mark.parametrize(("raw", "want"), [c[1:] for c in PRE_ENQUEUE], ids=[c[0] for c in PRE_ENQUEUE])
def test_pre_enqueue_as_upstream(raw: dict[str, Any], want: Status) -> None:
    plugin = schedulinggates.new(None, ClusterState())
    assert plugin.pre_enqueue(convert(raw)) == want


def test_it_is_first_in_the_default_profile_and_can_be_disabled() -> None:
    assert parse_config(None).default.points["preEnqueue"] == ("SchedulingGates",)
    off = {"profiles": [{"plugins": {"multiPoint": {"disabled": [{"name": "SchedulingGates"}]}}}]}
    assert parse_config(off).default.points.get("preEnqueue", ()) == ()
    at_point = {"profiles": [{"plugins": {"preEnqueue": {"disabled": [{"name": "*"}]}}}]}
    assert parse_config(at_point).default.points.get("preEnqueue", ()) == ()


def test_a_gated_pod_is_decided_once_its_gates_are_removed() -> None:
    log = Log().add(node("n1"))
    log.add(pod("db-0", **gates("example.com/quota")), at=1)
    log.add(pod("db-0", metadata={"resourceVersion": "2"}, **gates("example.com/quota")), kind="MODIFIED", at=2)
    log.add(pod("db-0", metadata={"resourceVersion": "3"}), kind="MODIFIED", at=3)  # the gate removed
    engine, records = replay(log)
    assert [(r.pod, r.status, r.node, r.position) for r in records] == [("default/db-0", "Scheduled", "n1", 4)]
    assert engine.stats.gated == 1


def test_with_the_plugin_disabled_a_gated_pod_is_decided_at_once() -> None:
    off = {"profiles": [{"plugins": {"multiPoint": {"disabled": [{"name": "SchedulingGates"}]}}}]}
    _, records = replay(Log().add(node("n1")).add(pod("db-0", **gates("g"))), ScorerEngine(parse_config(off)))
    assert [(r.pod, r.status) for r in records] == [("default/db-0", "Scheduled")]


def test_evaluate_lists_gated_pods_apart(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    snapshot = write(tmp_path, "snap.yaml", [node("n1"), pod("web"), pod("db-0", **gates("a", "b"))])
    code, out, err = run(capsys, "evaluate", "--snapshot", snapshot, "--now", "2026-11-01T10:00:00Z")
    assert (code, err) == (0, "")
    got = json.loads(out)
    assert [d["pod"] for d in got["decisions"]] == ["default/web"]
    assert got["gated"] == [
        {"pod": "default/db-0", "plugin": "SchedulingGates", "message": "waiting for scheduling gates: [a b]"}
    ]
