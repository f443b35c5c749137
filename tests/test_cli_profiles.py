"""Every profile counts: pods are decided by the profile their schedulerName names, other
schedulers' pods are left alone and counted; configs real clusters ship load with warnings."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from berth.core.config.kubeschedulerconfig import parse_config
from berth.core.errors import ConfigError
from berth.core.pipeline.scorer import ScorerEngine
from berth_cli.main import main
from tests.builders import node, pod
from tests.pipeline.test_engine import Log

DATA = Path(__file__).parent / "data"
KOORD = str(DATA / "configs" / "koord-scheduler.yaml")
LOAD_AWARE = str(DATA / "snapshots" / "load-aware.yaml")

TWO_PROFILES: dict[str, Any] = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "profiles": [
        {"schedulerName": "default-scheduler"},
        {
            "schedulerName": "binpack",
            "plugins": {"multiPoint": {"enabled": [{"name": "NodeResourcesFit", "weight": 10}]}},
            "pluginConfig": [{"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "MostAllocated"}}}],
        },
    ],
}


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def write(tmp_path: Path, name: str, docs: list[dict[str, Any]]) -> str:
    path = tmp_path / name
    path.write_text(yaml.safe_dump_all(docs))
    return str(path)


def test_koordinators_shipped_configuration_loads_with_one_warning_per_plugin(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = run(
        capsys, "evaluate", "--snapshot", LOAD_AWARE, "--config", KOORD, "--now", "2026-01-01T00:00:00Z"
    )
    assert code == 0
    lines = err.splitlines()
    assert all(line.startswith(f"warning: {KOORD}: ") for line in lines)
    named = [line.split("'")[1] for line in lines if "ignored: berth does not run it" in line]
    assert named == [
        "Reservation",
        "NodeNUMAResource",
        "DeviceShare",
        "Coscheduling",
        "ElasticQuota",
        "DefaultPreBind",
        "DefaultBinder",
        "ElasticQuota",  # its args
    ]
    assert any("'kubescheduler.config.k8s.io/v1beta2' read with v1's default" in line for line in lines)
    assert any('"LoadAwareScheduling" does not extend ReservePlugin plugin' in line for line in lines)
    # its one profile is koord-scheduler's: the snapshot's default-scheduler pods are left alone
    got = json.loads(out)
    assert got["decisions"] == []
    assert {s["schedulerName"] for s in got["skipped"]} == {"default-scheduler"} and len(got["skipped"]) > 0


def test_its_args_parse_as_kubes() -> None:
    cfg = parse_config(yaml.safe_load(Path(KOORD).read_text()))
    assert cfg.names() == ("koord-scheduler",)
    fit = cfg.args["NodeResourcesFit"]
    assert [r.name for r in fit.scoring_strategy.resources] == [
        "cpu",
        "memory",
        "kubernetes.io/batch-cpu",
        "kubernetes.io/batch-memory",
    ]
    assert cfg.filters[0] == "LoadAwareScheduling"  # enabled at filter: kube moves it to the front


def test_strict_config_makes_the_warnings_errors(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "evaluate", "--snapshot", LOAD_AWARE, "--config", KOORD, "--strict-config")
    assert code == 2 and out == ""
    assert "'Reservation' (preFilter, filter, postFilter, preScore, score, preBind, bind) ignored" in err
    assert "Traceback" not in err


def test_pods_are_decided_by_their_profile_and_others_skipped(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    config = write(tmp_path, "config.yaml", [TWO_PROFILES])
    snapshot = write(
        tmp_path,
        "snap.yaml",
        [
            node("big", cpu="16"),
            node("small", cpu="4"),
            pod("spread", cpu="2"),
            pod("packed", cpu="2", schedulerName="binpack"),
            pod("gang", schedulerName="volcano"),
        ],
    )
    code, out, err = run(
        capsys, "evaluate", "--snapshot", snapshot, "--config", config, "--now", "2026-01-01T00:00:00Z"
    )
    assert (code, err) == (0, "")
    got = json.loads(out)
    # LeastAllocated (default-scheduler) picks the big node, MostAllocated (binpack) the small one
    assert [(d["pod"], d["node"]) for d in got["decisions"]] == [("default/packed", "small"), ("default/spread", "big")]
    assert got["skipped"] == [{"pod": "default/gang", "schedulerName": "volcano"}]


def test_duplicate_profile_names_are_kubes_error() -> None:
    doc = {"profiles": [{"schedulerName": "a"}, {"schedulerName": "b"}, {"schedulerName": "a"}]}
    with pytest.raises(ConfigError) as e:
        parse_config(doc)
    assert e.value.problems == ['profiles[2].schedulerName: Duplicate value: "profiles[0].schedulerName"']


def test_the_engine_skips_other_schedulers_pods_and_counts_them_once() -> None:
    engine = ScorerEngine(parse_config(TWO_PROFILES))
    log = Log().add(node("n1"))
    log.add(pod("gang", schedulerName="volcano")).add(
        pod("gang", schedulerName="volcano", metadata={"labels": {"a": "b"}})
    )
    log.add(pod("web")).add(pod("packed", schedulerName="binpack"))
    records = [r for ev in log.events for r in engine.handle(ev)]
    assert [(r.pod, r.status) for r in records] == [("default/web", "Scheduled"), ("default/packed", "Scheduled")]
    assert engine.stats.skipped == 1
