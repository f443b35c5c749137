"""`python -m bench kube` runs at a tiny size: 20 nodes, 20 pods, SchedulingBasic, kube's default profile.
What it prints are figures, never checked; that both sides place every pod is."""

from __future__ import annotations

from pathlib import Path

import pytest
from bench.kube import run

pytestmark = pytest.mark.e2e


def test_the_kube_bench_runs_at_a_tiny_size(
    kube_assets: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.setenv("KUBEBUILDER_ASSETS", str(kube_assets))
    argv = ["--nodes", "20", "--pods", "20", "--workloads", "basic", "--configs", "default", "--keep", str(tmp_path)]
    argv += ["--repeat", "1", "--settle", "0"]
    [result] = run(argv)
    [kube] = result.kube
    assert (kube.bound, kube.unschedulable, kube.timed_out) == (20, 0, False)
    assert kube.cpu.keys() == {"kube-apiserver", "etcd", "kube-scheduler", "kube-controller-manager"}
    assert [(b.label, b.scheduled) for b in result.berth] == [("berth replay", 20), ("berth evaluate", 20)]
    out = capsys.readouterr().out
    assert "SchedulingBasic, 20 nodes, 20 pods" in out and "berth replay pods/s: " in out
