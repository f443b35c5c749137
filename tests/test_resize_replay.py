"""In-place resize end to end: `berth replay` on a log where a bound pod was downsized in its spec
(cpu 3 -> 1) and the kubelet has allocated but not yet actuated it (status says 3). kube-scheduler's
cache counts 3 (PodRequests with UseStatusResources), so a pending pod asking for 2 of the node's 4
cpus does not fit; with the spec's figure alone it would."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from berth_cli.main import main

LOG = Path(__file__).parent / "data" / "resize" / "downsized.jsonl"


def _decide(log: Path, out: Path, capsys: pytest.CaptureFixture[str]) -> dict:
    assert main(["replay", str(log), "--no-progress", "--decisions", str(out)]) == 0
    capsys.readouterr()
    (record,) = [json.loads(line) for line in out.read_text().splitlines()]
    return record


def test_a_downsize_not_yet_in_status_still_holds_the_old_requests(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    record = _decide(LOG, tmp_path / "d.jsonl", capsys)
    assert (record["pod"], record["status"], record["node"]) == ("shop/batch-0", "Unschedulable", None)
    assert record["message"].startswith("0/1 nodes are available: 1 Insufficient cpu.")
    assert record["reasons"] == {"Insufficient cpu": 1}


def test_the_same_log_without_container_statuses_fits(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    lines = [json.loads(line) for line in LOG.read_text().splitlines()]
    for line in lines:
        line["object"].get("status", {}).pop("containerStatuses", None)
    spec_only = tmp_path / "spec-only.jsonl"
    spec_only.write_text("".join(json.dumps(line) + "\n" for line in lines))
    record = _decide(spec_only, tmp_path / "d.jsonl", capsys)
    assert (record["pod"], record["status"], record["node"]) == ("shop/batch-0", "Scheduled", "n1")
