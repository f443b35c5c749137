"""`berth evaluate` on a snapshot with PriorityClasses and a PodDisruptionBudget, and `berth replay
--preemption-grace` with its summary, run as users run them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from berth.core.api.watch import encode_event
from berth_cli.main import main
from tests.plugins.defaultpreemption.helpers import knode, kpod, pdb, priority_class
from tests.plugins.defaultpreemption.test_replay_story import story_log

SLOT = {"cpu": "1", "memory": "1Gi"}


def snapshot(tmp_path: Path) -> str:
    items: list[dict[str, Any]] = [
        priority_class("batch", 0, default=True),
        priority_class("serving", 1000),
        pdb({"app": "db"}, allowed=0, name="db"),
        knode("n1", {"cpu": "2", "memory": "2Gi"}),
        knode("n2", {"cpu": "2", "memory": "2Gi"}),
        kpod("db-0", "n1", req=SLOT, labels={"app": "db"}),
        kpod("db-1", "n1", req=SLOT, labels={"app": "db"}),
        kpod("job-0", "n2", req=SLOT),
        kpod("job-1", "n2", req=SLOT),
        kpod("web-0", req=SLOT, priorityClassName="serving", metadata={"creationTimestamp": "2026-11-01T10:00:00Z"}),
        kpod("web-1", req=SLOT, priorityClassName="serving", metadata={"creationTimestamp": "2026-11-01T10:00:01Z"}),
    ]
    path = tmp_path / "snapshot.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    return str(path)


def test_evaluate_names_the_nominated_node_and_victims(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code = main(["evaluate", "--snapshot", snapshot(tmp_path), "-o", "json", "--now", "2026-11-01T12:00:00Z"])
    out, err = capsys.readouterr()
    assert (code, err) == (0, "")
    got = [(d["pod"], d["status"], d.get("nominatedNode"), d.get("victims")) for d in json.loads(out)["decisions"]]
    # the PDB spares the db pods while the jobs can go; the second pod sees the first on n2. The
    # jobs tie on priority and start time: job-0 (namespace/name first) is reprieved first
    assert got == [
        ("default/web-0", "Unschedulable", "n2", ["default/job-1"]),
        ("default/web-1", "Unschedulable", "n2", ["default/job-0"]),
    ]


def test_invalid_args_exit_2_naming_the_field(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n"
        "  - pluginConfig:\n      - name: DefaultPreemption\n        args: {minCandidateNodesAbsolute: -1}\n"
    )
    code = main(["evaluate", "--snapshot", snapshot(tmp_path), "--config", str(config)])
    _, err = capsys.readouterr()
    assert code == 2
    assert "profiles[0].pluginConfig[0].args.minCandidateNodesAbsolute: Invalid value: -1" in err


def test_replay_counts_preemptions_and_victims_by_priority(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    log = tmp_path / "story.jsonl"
    log.write_bytes(b"".join(encode_event(ev) + b"\n" for ev in story_log()))
    summary = tmp_path / "summary.json"
    code = main(["replay", str(log), "--preemption-grace", "2", "--summary", str(summary), "--no-progress"])
    out, _ = capsys.readouterr()
    assert code == 0
    run = json.loads(summary.read_text())["runs"][0]
    assert (run["preemptions"], run["victims"], run["victimsByPriority"]) == (8, 8, {"0": 8})
    assert "of priority 0" in out
