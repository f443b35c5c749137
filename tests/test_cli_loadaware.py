"""`berth evaluate` on a snapshot that mixes PVs and Koordinator NodeMetrics."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from berth.core.config.kubeschedulerconfig import parse_config
from berth_cli.main import main

SNAPSHOT = str(Path(__file__).parent / "data" / "snapshots" / "load-aware.yaml")
NOW = "2026-11-01T12:00:30Z"


def evaluate(capsys: pytest.CaptureFixture[str], *extra: str) -> list[dict]:
    assert main(["evaluate", "--snapshot", SNAPSHOT, "--now", NOW, *extra]) == 0
    return json.loads(capsys.readouterr().out)["decisions"]


def test_both_plugins_score_and_every_filter_reason_is_listed(capsys: pytest.CaptureFixture[str]) -> None:
    first = evaluate(capsys)[0]
    assert (first["pod"], first["node"]) == ("db/db-0", "node-cold")
    assert first["volumeBindings"] == [{"claim": "db/data-0", "pv": "pv-node-cold-100g"}]
    assert first["nodes"]["node-hot"] == {"feasible": False, "reasons": ["node(s) cpu usage exceed threshold"]}
    cold = first["nodes"]["node-cold"]
    assert {"VolumeBinding", "LoadAwareScheduling"} <= set(cold["scores"])
    assert cold["total"] == sum(w * cold["scores"].get(n, 0) for n, w in parse_config(None).scores)
    assert cold["scores"]["LoadAwareScheduling"] > first["nodes"]["node-warm"]["scores"]["LoadAwareScheduling"]


def test_a_burst_does_not_all_land_on_the_cold_node(capsys: pytest.CaptureFixture[str]) -> None:
    burst = [d for d in evaluate(capsys) if d["pod"].startswith("web/burst-")]
    placed = [d["node"] for d in burst if d["status"] == "Scheduled"]
    assert placed.count("node-cold") < len(burst)
    assert "node-warm" in placed
    # once estimated load fills every node, later pods are turned away with upstream's reason
    assert burst[-1]["status"] == "Unschedulable"
    assert "cpu usage exceed threshold" in burst[-1]["message"]


def test_without_load_awareness_the_burst_piles_up(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    cfg = tmp_path / "no-load.yaml"
    cfg.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n"
        "- plugins:\n    filter: {disabled: [{name: LoadAwareScheduling}]}\n"
        "    score: {disabled: [{name: LoadAwareScheduling}]}\n"
    )
    burst = [d for d in evaluate(capsys, "--config", str(cfg)) if d["pod"].startswith("web/burst-")]
    assert all(d["status"] == "Scheduled" for d in burst)
    assert "LoadAwareScheduling" not in json.dumps(burst)


def test_metrics_expire_by_the_injected_clock(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    later = ["--now", "2026-11-01T13:00:00Z", "--pod", "web/burst-0"]
    assert main(["evaluate", "--snapshot", SNAPSHOT, *later]) == 0
    d = json.loads(capsys.readouterr().out)["decisions"][0]
    assert d["message"] == (
        "0/3 nodes are available: 3 node(s) nodeMetric expired. no new claims to deallocate, "
        "preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod."
    )
    cfg = tmp_path / "lenient.yaml"
    cfg.write_text(
        "profiles:\n- pluginConfig:\n  - name: LoadAwareScheduling\n"
        "    args: {enableScheduleWhenNodeMetricsExpired: true}\n"
    )
    assert main(["evaluate", "--snapshot", SNAPSHOT, "--config", str(cfg), *later]) == 0
    d = json.loads(capsys.readouterr().out)["decisions"][0]
    assert d["status"] == "Scheduled"
    assert {n: r["scores"]["LoadAwareScheduling"] for n, r in d["nodes"].items()} == {
        "node-cold": 0,
        "node-hot": 0,
        "node-warm": 0,
    }


def test_bad_load_aware_args_are_all_reported(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    cfg = tmp_path / "bad.yaml"
    cfg.write_text(
        "profiles:\n- pluginConfig:\n  - name: LoadAwareScheduling\n"
        "    args: {usageThresholds: {cpu: 120}, nodeMetricExpirationSeconds: -5}\n"
    )
    assert main(["evaluate", "--snapshot", SNAPSHOT, "--config", str(cfg)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2 and all(
        line.startswith("berth evaluate: config: profiles[0].pluginConfig[0].args.") for line in err
    )
