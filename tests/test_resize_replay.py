"""In-place resize end to end: `berth replay` on a log where a bound pod was downsized in its spec
(cpu 3 -> 1) and the kubelet has allocated but not yet actuated it (status says 3). kube-scheduler's
cache counts 3 (PodRequests with UseStatusResources), so a pending pod asking for 2 of the node's 4
cpus does not fit; with the spec's figure alone it would. Once the kubelet actuates the downsize
(status says 1), that update scales web-0 down and batch-0 is retried (kube: UpdatePodScaleDown)."""

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


def _with(extra: dict, tmp_path: Path) -> Path:
    """The log, then a MODIFIED line of web-0 at 10:00:10 (batch-0's backoff is over by then)."""
    log = tmp_path / "resized.jsonl"
    log.write_text(LOG.read_text() + json.dumps(extra) + "\n")
    return log


def _web(status_cpu: str, rv: str) -> dict:
    """web-0 with its spec's 1 cpu allocated and `status_cpu` actuated."""
    web = json.loads(LOG.read_text().splitlines()[1])
    web["ts"], web["type"] = "2026-11-01T10:00:10Z", "MODIFIED"
    web["object"]["metadata"]["resourceVersion"] = rv
    (status,) = web["object"]["status"]["containerStatuses"]
    status["resources"]["requests"]["cpu"] = status_cpu
    if status_cpu == "1":
        web["object"]["status"]["conditions"] = []
    return web


def _decisions(log: Path, out: Path, capsys: pytest.CaptureFixture[str]) -> list[tuple[str, str, str | None]]:
    assert main(["replay", str(log), "--no-progress", "--decisions", str(out)]) == 0
    capsys.readouterr()
    records = [json.loads(line) for line in out.read_text().splitlines()]
    return [(r["pod"], r["status"], r["node"]) for r in records]


def test_the_kubelet_actuating_the_downsize_retries_the_waiting_pod(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """kube: the update scales web-0's requests down (UpdatePodScaleDown), NodeResourcesFit's hint
    queues batch-0, which asks for cpu: it now fits n1."""
    got = _decisions(_with(_web("1", "201"), tmp_path), tmp_path / "d.jsonl", capsys)
    assert got == [("shop/batch-0", "Unschedulable", None), ("shop/batch-0", "Scheduled", "n1")]


def test_an_update_that_scales_nothing_down_retries_nothing(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """The same pod's update with its status unchanged: no scale-down, no retry (kube: no event
    NodeResourcesFit registered)."""
    got = _decisions(_with(_web("3", "201"), tmp_path), tmp_path / "d.jsonl", capsys)
    assert got == [("shop/batch-0", "Unschedulable", None)]
