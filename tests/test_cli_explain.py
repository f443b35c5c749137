"""`berth explain` run the way users run it: on the snapshot samples and on a replay's decisions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from berth_cli.main import main

DATA = Path(__file__).parent / "data" / "snapshots"
STS = str(DATA / "statefulset.yaml")
LOCAL = str(DATA / "local-pvs.yaml")
LOG = str(Path(__file__).parent / "data" / "logs" / "scarce-pvs.jsonl")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def decisions(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, dict]:
    code, out, _ = run(capsys, "evaluate", *argv)
    assert code == 0
    return {d["pod"]: d for d in json.loads(out)["decisions"]}


@pytest.mark.parametrize("snapshot", [STS, LOCAL])
def test_the_decision_is_evaluates(capsys: pytest.CaptureFixture[str], snapshot: str) -> None:
    """Each pending pod's decision, as berth evaluate decides them all in its queue, and alone as
    berth evaluate --pod decides it."""
    every = decisions(capsys, "--snapshot", snapshot)
    assert every
    for pod, decided in every.items():
        code, out, _ = run(capsys, "explain", "--snapshot", snapshot, pod, "-o", "json")
        assert code == 0 and json.loads(out)["decision"] == decided
        alone = decisions(capsys, "--snapshot", snapshot, "--pod", pod)[pod]
        code, out, _ = run(capsys, "explain", "--snapshot", snapshot, pod, "--alone", "-o", "json")
        assert code == 0 and json.loads(out)["decision"] == alone


def test_text_on_the_statefulset_sample(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "explain", "--snapshot", STS, "-n", "db", "pg-3")
    assert (code, err) == (0, "")
    assert "\x1b" not in out  # not a terminal: no escapes
    for line in [
        "Unschedulable: 0/8 nodes are available: 1 Insufficient cpu,",
        "    InterPodAffinity: node(s) didn't match pod anti-affinity rules",
        "      anti-affinity term 1 (topologyKey kubernetes.io/hostname, selector app=pg): db/pg-0 in kubernetes.io/hostname=node-1",
        "      claim db/data-pg-3 wants 50Gi of class local: PVs of the class on the node: pv-5 10Gi (too small)",
        "      cpu: the pod requests 2; 3 of 4 allocatable is requested already, 1 free: 1 short",
        "  nominated node node-7; victims: jobs/batch-0",
        "  - node-5 fits if PV pv-5 had 50Gi (it has 10Gi)",
        "  - node-4 fits if db/pg-2 leaves",
    ]:
        assert any(got.startswith(line) for got in out.splitlines()), line


def test_json_and_yaml_carry_the_same_facts(capsys: pytest.CaptureFixture[str]) -> None:
    _, as_json, _ = run(capsys, "explain", "--snapshot", STS, "db/pg-3", "-o", "json")
    _, as_yaml, _ = run(capsys, "explain", "--snapshot", STS, "db/pg-3", "-o", "yaml")
    got = json.loads(as_json)
    assert yaml.safe_load(as_yaml) == got
    node7 = next(r for r in got["rejected"] if r["node"] == "node-7")["plugins"][0]
    assert node7["plugin"] == "NodeResourcesFit"
    assert node7["details"][0]["facts"] == {
        "resource": "cpu",
        "requested": 2000,
        "used": 3000,
        "allocatable": 4000,
        "short": 1000,
    }
    assert {
        "node": "node-7",
        "text": "node-7 fits if it had 1 cpu more allocatable (or that much freed)",
        "more": {"cpu": 1000},
    } in got["suggestions"]


def test_load_aware_names_the_metric(capsys: pytest.CaptureFixture[str]) -> None:
    snapshot = str(DATA / "load-aware.yaml")
    code, out, _ = run(capsys, "explain", "--snapshot", snapshot, "db/db-0", "--now", "2026-11-01T13:00:00Z")
    assert code == 0
    assert "NodeMetric updated 3600 s before --now, over nodeMetricExpirationSeconds 180" in out


def test_decisions_of_a_replay(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    every, top = tmp_path / "all.jsonl", tmp_path / "top.jsonl"
    assert run(capsys, "replay", LOG, "--all-nodes", "--decisions", str(every))[0] == 0
    assert run(capsys, "replay", LOG, "--decisions", str(top))[0] == 0
    code, out, _ = run(capsys, "explain", "--decisions", str(every), "p6", "--attempt", "1", "-o", "json")
    got = json.loads(out)
    assert code == 0 and got["decision"]["status"] == "Unschedulable"
    line = next(json.loads(x) for x in every.read_text().splitlines() if '"default/p6"' in x)
    by_node = {r["node"]: {p["plugin"]: p["reasons"] for p in r["plugins"]} for r in got["rejected"]}
    assert by_node and {n: [r for rs in v.values() for r in rs] for n, v in by_node.items()} == {
        n: r["reasons"] for n, r in line["nodes"].items() if not r["feasible"]
    }
    assert all(
        reasons == ["Insufficient cpu"] for v in by_node.values() for p, reasons in v.items() if p == "NodeResourcesFit"
    )
    assert any("need a snapshot" in n for n in got["notes"])
    code, out, _ = run(capsys, "explain", "--decisions", str(top), "p6", "--attempt", "1")
    assert code == 0 and "only kube's counts" in out and "berth replay --all-nodes" in out
    code, out, _ = run(capsys, "explain", "--decisions", str(every), "p6", "-o", "json")  # its last: Scheduled
    got = json.loads(out)
    assert got["decision"]["node"] == "n0" and got["scores"][0]["node"] == "n0"
    assert all(sum(p["weighted"] for p in s["parts"]) == s["total"] for s in got["scores"])


@pytest.mark.parametrize(
    ("argv", "error", "hint"),
    [
        (["--snapshot", STS, "pg-3"], "Pod pg-3: not found in namespace default; did you mean db/pg-3?", None),
        (["--snapshot", STS, "db/pg-0"], "Pod db/pg-0: is not pending (node node-1, phase Running)", None),
        (["--snapshot", LOG, "p6"], f"{LOG}: line 2: invalid JSON", "looks like an event log"),
        (["--decisions", STS, "db/pg-3"], f"{STS}: line 1: not a decision record", f"give it as --snapshot {STS}"),
        (["--decisions", LOG, "p6"], f"{LOG}: line 1: not a decision record", "replay it first"),
        (["--decisions", "/no/such.jsonl", "p6"], "/no/such.jsonl: No such file or directory", None),
    ],
)
def test_bad_input_is_one_line_exit_2(
    capsys: pytest.CaptureFixture[str], argv: list[str], error: str, hint: str | None
) -> None:
    code, out, err = run(capsys, "explain", *argv)
    assert code == 2 and out == ""
    first, *rest = err.splitlines()
    assert first.startswith("berth explain: error: ") and error in first
    assert rest == ([] if hint is None else [rest[0]]) and (hint is None or hint in rest[0])
