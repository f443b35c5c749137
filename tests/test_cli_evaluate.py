"""`berth evaluate` run the way users run it, on snapshot files checked into tests/data."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from berth.core.config.kubeschedulerconfig import parse_config
from berth_cli.main import main

DATA = Path(__file__).parent / "data" / "snapshots"
LOCAL = str(DATA / "local-pvs.yaml")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def placements(out: str) -> list[tuple[str, str, str | None, list[tuple[str, str]]]]:
    return [
        (d["pod"], d["status"], d["node"], [(b["claim"], b.get("pv")) for b in d["volumeBindings"]])
        for d in json.loads(out)["decisions"]
    ]


EXPECTED = [
    ("db/small-0", "Scheduled", "node-b", [("db/small-0", "pv-b-10g")]),
    ("db/small-1", "Scheduled", "node-c", [("db/small-1", "pv-c-10g")]),
    ("db/large-0", "Scheduled", "node-a", [("db/large-0", "pv-a-1t")]),
    ("db/medium-0", "Scheduled", "node-a", [("db/medium-0", "pv-a-100g")]),
]


def test_small_claims_take_small_pvs(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "evaluate", "--snapshot", LOCAL)
    assert (code, err) == (0, "")
    assert placements(out) == EXPECTED
    first = json.loads(out)["decisions"][0]
    b = first["nodes"]["node-b"]
    assert b["feasible"] and b["reasons"] == [] and b["scores"]["VolumeBinding"] == 100
    assert b["total"] == sum(w * b["scores"].get(n, 0) for n, w in parse_config(None).scores)


@pytest.mark.parametrize("name", ["local-pvs.json", "typed-lists.yaml"])
def test_json_and_api_server_lists_read_the_same(capsys: pytest.CaptureFixture[str], name: str) -> None:
    code, out, err = run(capsys, "evaluate", "--snapshot", str(DATA / name))
    assert code == 0
    assert placements(out) == EXPECTED
    if name.endswith(".json"):
        assert err == f"warning: {DATA / name}: skipped 2 object(s) of kind ConfigMap (core): berth does not read it\n"


def stdin(data: bytes) -> io.TextIOWrapper:
    """Standard input as a process has it: text over a byte buffer."""
    return io.TextIOWrapper(io.BytesIO(data), encoding="utf-8")


@pytest.mark.parametrize("name", ["local-pvs.yaml", "local-pvs.json"])
def test_stdin(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """`kubectl get -o yaml|json ... | berth evaluate --snapshot -`: read as the file would be."""
    monkeypatch.setattr(sys, "stdin", stdin((DATA / name).read_bytes()))
    code, out, _ = run(capsys, "evaluate", "--snapshot", "-")
    assert code == 0 and placements(out) == EXPECTED


def test_stdin_that_is_not_utf8_is_one_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "stdin", stdin(b"\xff\xfe{}"))
    code, out, err = run(capsys, "evaluate", "--snapshot", "-")
    assert (code, out, err) == (2, "", "berth evaluate: error: <stdin>: not UTF-8 text\n")


def test_pod_order_changes_the_outcome(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "evaluate", "--snapshot", LOCAL, "--pod", "db/large-0", "--pod", "db/small-0")
    assert code == 0
    assert [(p, n) for p, _, n, _ in placements(out)] == [("db/large-0", "node-a"), ("db/small-0", "node-b")]


def test_config_changes_the_shape(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    cfg = tmp_path / "sched.yaml"
    cfg.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n"
        "- pluginConfig:\n  - name: VolumeBinding\n    args:\n      shape: [{utilization: 0, score: 10}, {utilization: 100, score: 0}]\n"
    )
    code, out, _ = run(capsys, "evaluate", "--snapshot", LOCAL, "--config", str(cfg), "--pod", "db/small-0")
    assert code == 0
    # kube >= 1.33 default shape: the node with the most room left wins; per node the smallest PV is still taken
    assert placements(out)[0][2:] == ("node-a", [("db/small-0", "pv-a-100g")])


def test_table(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "evaluate", "--snapshot", LOCAL, "-o", "table")
    assert code == 0
    assert "db/small-0" in out and "pv-b-10g" in out and "Scheduled" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--snapshot", str(DATA / "bad-quantity.yaml")],
            "berth evaluate: error: {}: PersistentVolume pv-b-10g: spec.capacity.storage: quantities must match".format(
                DATA / "bad-quantity.yaml"
            ),
        ),
        (
            ["--snapshot", str(DATA / "bad-yaml.yaml")],
            "berth evaluate: error: {}: line 5: invalid YAML".format(DATA / "bad-yaml.yaml"),
        ),
        (["--snapshot", "/no/such/file.yaml"], "berth evaluate: error: /no/such/file.yaml: No such file or directory"),
        (
            ["--snapshot", LOCAL, "--pod", "db/nope"],
            f"berth evaluate: error: {LOCAL}: Pod db/nope: not found in the snapshot",
        ),
    ],
)
def test_bad_input_is_one_line_exit_2(capsys: pytest.CaptureFixture[str], argv: list[str], message: str) -> None:
    code, out, err = run(capsys, "evaluate", *argv)
    assert code == 2 and out == ""
    assert err.startswith(message)
    assert err.count("\n") == 1


def test_bad_config_lists_every_problem(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    cfg = tmp_path / "sched.yaml"
    cfg.write_text(
        "profiles:\n- pluginConfig:\n  - name: VolumeBinding\n    args: {bindTimeoutSeconds: -1, shape: []}\n"
    )
    code, _, err = run(capsys, "evaluate", "--snapshot", LOCAL, "--config", str(cfg))
    assert code == 2
    assert err.splitlines() == [
        "berth evaluate: config: profiles[0].pluginConfig[0].args.bindTimeoutSeconds: Invalid value: -1: invalid BindTimeoutSeconds, should not be a negative value",
        "berth evaluate: config: profiles[0].pluginConfig[0].args.shape: Required value: at least one point must be specified",
    ]


def test_console_script_has_help_on_every_command() -> None:
    berth = Path(sys.executable).parent / "berth"
    for argv in ([], ["evaluate"]):
        res = subprocess.run([str(berth), *argv, "--help"], capture_output=True, text=True, check=False)
        assert res.returncode == 0 and "usage: berth" in res.stdout


def test_console_script_bad_input_has_no_traceback() -> None:
    berth = Path(sys.executable).parent / "berth"
    res = subprocess.run(
        [str(berth), "evaluate", "--snapshot", str(DATA / "bad-quantity.yaml")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert res.returncode == 2 and "Traceback" not in res.stderr


# issue 20's reproducers for snapshot files: one line naming the file, exit 2.
_TEXT = Path(LOCAL).read_text()
SNAPSHOTS = [
    ("JSON nested deeply", "s.json", "[" * 5000 + "]" * 5000, "invalid JSON: nested too deeply"),
    ("YAML nested deeply", "s.yaml", "a: " + "[" * 5000 + "]" * 5000, "invalid YAML: nested too deeply"),
    ("a JSON integer of 5,000 digits", "s.json", '{"kind": 1' + "0" * 5000 + "}", "invalid JSON: Exceeds the limit"),
    ("a YAML integer of 5,000 digits", "s.yaml", "kind: 1" + "0" * 5000, "invalid YAML: Exceeds the limit"),
    ("a quantity of nan", "s.yaml", _TEXT.replace("storage: 1Ti", "storage: .nan", 1), "finite numbers"),
    ("a cpu of 1e30", "s.yaml", _TEXT.replace("cpu: '8'", "cpu: 1e30", 1), "kube's int64 milli-value"),
    (
        "a priority past int32",
        "s.yaml",
        _TEXT.replace(
            "    schedulerName: default-scheduler", "    schedulerName: default-scheduler\n    priority: 2147483648", 1
        ),
        "Pod db/small-0: spec.priority: 2147483648 is out of range: kube's int32 is at most 2147483647",
    ),
    (
        "a quantity of 4,301 digits",
        "s.yaml",
        _TEXT.replace("storage: 1Ti", "storage: '1" + "0" * 4300 + "'", 1),
        "quantities are at most 100 characters",
    ),
    (
        "a creationTimestamp at year 9999 less an offset",
        "s.yaml",
        _TEXT.replace("2026-11-01T10:00:00Z", "9999-12-31T23:59:59-23:59", 1),
        "outside years 0001..9999",
    ),
    (
        "a time before year 1 in UTC",
        "s.yaml",
        _TEXT.replace("2026-11-01T10:00:00Z", "0001-01-01T00:00:00+01:00", 1),
        "outside years 0001..9999",
    ),
    (  # it crashed the PV index (an int64 array); the API server rejects a negative size
        "a PV capacity of -1e30",
        "s.yaml",
        _TEXT.replace("storage: 1Ti", "storage: '-1e30'", 1),
        "spec.capacity.storage: '-1e30' must be greater than or equal to 0",
    ),
    (  # issue 34: it crashed newer() (Python's int-string limit)
        "a resourceVersion of 5,002 digits",
        "s.yaml",
        _TEXT.replace("resourceVersion: '100'", "resourceVersion: '1" + "0" * 5001 + "'", 1),
        "Node node-a: metadata.resourceVersion: '10000000000000000000'... (5,002 characters) is not a decimal uint64",
    ),
    (
        "a resourceVersion that is not a number",
        "s.yaml",
        _TEXT.replace("resourceVersion: '100'", "resourceVersion: v100", 1),
        "Node node-a: metadata.resourceVersion: 'v100' is not a decimal uint64",
    ),
]


@pytest.mark.parametrize(("name", "text", "problem"), [c[1:] for c in SNAPSHOTS], ids=[c[0] for c in SNAPSHOTS])
def test_bounded_snapshots(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, name: str, text: str, problem: str
) -> None:
    path = tmp_path / name
    path.write_text(text)
    code, out, err = run(capsys, "evaluate", "--snapshot", str(path))
    assert (code, out) == (2, "")
    assert err.startswith(f"berth evaluate: error: {path}: ") and problem in err, err
    assert err.count("\n") == 1


def test_no_nodes_is_kubes_no_nodes_available(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    snapshot = tmp_path / "pods-only.yaml"
    snapshot.write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: default, uid: u1}\n"
        "spec:\n  containers: [{name: c, image: x}]\n"
    )
    code, out, _ = run(capsys, "evaluate", "--snapshot", str(snapshot), "--now", "2026-01-01T00:00:00Z")
    assert code == 0
    (d,) = json.loads(out)["decisions"]
    assert (d["status"], d["message"]) == ("Unschedulable", "no nodes available to schedule pods")


def _big(n: int) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{n}", "annotations": {"a": "x" * n}}}


BOMB = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n"
    for p, c in zip("abcdefgh", "bcdefghi", strict=True)
)


@pytest.mark.parametrize(
    ("name", "text", "what"),
    [
        ("s.json", json.dumps({"kind": "List", "items": [_big(10), _big(3 << 20)]}), "Pod p3145728"),
        ("s.yaml", yaml.safe_dump({"kind": "List", "items": [_big(10), _big(3 << 20)]}), "Pod p3145728"),
        ("s.yaml", "kind: ConfigMap\nmetadata: {name: bomb}\ndata:\n  " + BOMB.replace("\n", "\n  "), "ConfigMap bomb"),
    ],
    ids=["JSON List", "YAML List", "YAML aliases"],
)
def test_an_object_over_the_size_limit_is_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, name: str, text: str, what: str
) -> None:
    """As for a log line: one object is at most 3 MiB as JSON, however the file spells it."""
    path = tmp_path / name
    path.write_text(text)
    code, out, err = run(capsys, "evaluate", "--snapshot", str(path))
    assert (code, out) == (2, "")
    assert err == f"berth evaluate: error: {path}: {what}: larger than 3145728 bytes as JSON\n"


def test_an_object_just_within_the_size_limit_is_read(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"kind": "List", "items": [_big((3 << 20) - 200)]}))  # its JSON is under the limit
    code, _, err = run(capsys, "evaluate", "--snapshot", str(path))
    assert code == 0, err


# ---- issue 35: kubectl habits, more output forms, hints -------------------------------------------


def test_bare_pod_name_resolves_in_namespace(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "evaluate", "--snapshot", LOCAL, "-n", "db", "--pod", "small-0")
    assert code == 0 and [d["pod"] for d in json.loads(out)["decisions"]] == ["db/small-0"]


def test_pod_not_found_hints_ns_name_and_close_matches(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "evaluate", "--snapshot", LOCAL, "--pod", "small-0")
    assert code == 2 and out == ""
    assert "not found in namespace default" in err and "db/small-0" in err and "NS/NAME" in err and "-n" in err


def test_namespace_limits_listing_and_all_namespaces_is_default(capsys: pytest.CaptureFixture[str]) -> None:
    _, every, _ = run(capsys, "evaluate", "--snapshot", LOCAL)
    _, all_ns, _ = run(capsys, "evaluate", "--snapshot", LOCAL, "-A")
    assert every == all_ns
    code, out, err = run(capsys, "evaluate", "--snapshot", LOCAL, "-n", "web")
    assert code == 0 and json.loads(out)["decisions"] == []
    assert err.count("\n") == 1 and "hint: " in err and "no pending pod in namespace web" in err


def test_yaml_output_carries_the_json_decisions(capsys: pytest.CaptureFixture[str]) -> None:
    _, as_json, _ = run(capsys, "evaluate", "--snapshot", LOCAL)
    code, as_yaml, _ = run(capsys, "evaluate", "--snapshot", LOCAL, "-o", "yaml")
    assert code == 0 and yaml.safe_load(as_yaml) == json.loads(as_json)


def test_wide_names_plugins_scores_and_victims(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys, "evaluate", "--snapshot", str(DATA / "load-aware.yaml"), "-o", "wide", "--pod", "db/db-0"
    )
    assert code == 0
    assert "LoadAwareScheduling: node(s) nodeMetric expired" in out and "nominated" in out and "victims" in out


def test_wide_shows_nomination_and_victims() -> None:
    from berth.core.scheduler.results import Decision, RejectedGroup
    from berth_cli.show import render_table

    d = Decision("ns/p", "Unschedulable", None, "0/2 nodes are available", nominated_node="a", victims=["ns/low-1"])
    groups = [
        RejectedGroup(("Insufficient cpu",), 1, ["a"]),
        RejectedGroup(("node(s) had untolerated taint(s)", "Too many pods"), 1, ["b"]),
    ]
    buf = io.StringIO()
    import contextlib

    with contextlib.redirect_stdout(buf):
        render_table([d], [groups], wide=True)
    text = buf.getvalue()
    assert "ns/low-1" in text and "NodeResourcesFit: Insufficient cpu" in text
    assert "TaintToleration: node(s) had untolerated taint(s)" in text


def test_plugin_of_knows_every_filter_reason() -> None:
    from berth_cli.show import plugin_of

    assert plugin_of("node(s) didn't match pod anti-affinity rules") == "InterPodAffinity"
    assert plugin_of("node(s) didn't find available persistent volumes to bind") == "VolumeBinding"
    assert plugin_of("node(s) cpu usage exceed threshold") == "LoadAwareScheduling"
    assert plugin_of("something new") is None


def test_expired_metrics_hint_now(capsys: pytest.CaptureFixture[str]) -> None:
    snap = str(DATA / "load-aware.yaml")
    code, _, err = run(capsys, "evaluate", "--snapshot", snap, "-o", "table")
    assert code == 0 and err.count("\n") == 1 and "hint:" in err and "--now 2026-11-01T12:00:00Z" in err
    code, _, err = run(capsys, "evaluate", "--snapshot", snap, "--now", "2026-11-01T12:00:30Z")
    assert (code, err) == (0, "")


def test_event_log_given_to_evaluate_points_at_replay(capsys: pytest.CaptureFixture[str]) -> None:
    log = str(Path(__file__).parent.parent / "examples" / "cold-burst.jsonl")
    code, out, err = run(capsys, "evaluate", "--snapshot", log)
    assert code == 2 and out == ""
    assert err.splitlines()[1] == (
        f"berth evaluate: hint: {log} looks like an event log (JSON Lines, one watch event per line): "
        f"replay it with `berth replay {log}`"
    )


def test_empty_snapshot_says_what_it_found(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    empty = tmp_path / "empty.yaml"
    empty.write_text("apiVersion: v1\nkind: List\nitems: []\n")
    code, out, err = run(capsys, "evaluate", "--snapshot", str(empty), "-o", "table")
    assert code == 0 and "0 pending pod(s)" in out
    assert "found 0 nodes and 0 pending pods" in err and "kubectl get" in err and err.count("\n") == 1


def test_compare_lists_the_pods_each_config_places_differently(capsys: pytest.CaptureFixture[str]) -> None:
    examples = Path(__file__).parents[1] / "examples"
    configs = [str(examples / "most-free.yaml"), str(examples / "capacity-priority-off.yaml")]
    code, out, _ = run(capsys, "evaluate", "--snapshot", LOCAL, "--compare", *configs)
    assert code == 0
    got = json.loads(out)
    assert got["compare"]["runs"] == ["default", "most-free", "capacity-priority-off"]
    # the oracle: each config's run alone
    alone = []
    for config in [None, *configs]:
        code, single, _ = run(capsys, "evaluate", "--snapshot", LOCAL, *(["--config", config] if config else []))
        assert code == 0
        decisions = json.loads(single)["decisions"]
        alone.append({d["pod"]: (d["node"], [b["pv"] for b in d["volumeBindings"]]) for d in decisions})
    assert got["decisions"] == json.loads(run(capsys, "evaluate", "--snapshot", LOCAL)[1])["decisions"]
    differ = {d["pod"]: [(r["node"], r["pvs"]) for r in d["runs"]] for d in got["compare"]["differ"]}
    for pod in alone[0]:
        placed = [a[pod] for a in alone]
        assert (pod in differ) == any(p != placed[0] for p in placed[1:]), pod
        if pod in differ:
            assert differ[pod] == placed
    assert differ  # the sample's configs do disagree
    code, table, _ = run(capsys, "evaluate", "--snapshot", LOCAL, "-o", "table", "--compare", *configs)
    assert f"placed differently under default, most-free, capacity-priority-off: {len(differ)} of" in table


def test_compare_needs_the_snapshot_as_a_file(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "evaluate", "--snapshot", "-", "--compare", "examples/most-free.yaml")
    assert code == 2 and "--compare reads the snapshot once per config: give it as a file" in err


def _rejected_oracle(groups: dict[tuple[str, ...], list[str]]) -> str:
    """-o wide's rejected nodes as show._rejected first wrote them, from every node's reasons."""
    from berth_cli.show import NODES_SHOWN, named

    lines = []
    for reasons, names in sorted(groups.items(), key=lambda g: (-len(g[1]), g[0])):
        more = f" +{len(names) - NODES_SHOWN} more" if len(names) > NODES_SHOWN else ""
        lines.append(f"{len(names)} node(s) ({', '.join(names[:NODES_SHOWN])}{more}):")
        lines += [f"  {named(reason)}" for reason in reasons] or ["  (no reason given)"]
    return "\n".join(lines)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 4), max_size=60), st.randoms(use_true_random=False))
def test_rejected_groups_are_written_as_every_node_grouped(picks: list[int], rnd: Any) -> None:
    """Groups in any order, of any size, with reasons or none: most nodes first, then by reasons."""
    from berth.core.scheduler.results import RejectedGroup
    from berth_cli.show import NODES_SHOWN, _rejected

    reasons = [("Insufficient cpu",), (), ("a", "b"), ("Too many pods",), ("b", "a")]
    names = [f"n-{i:02}" for i in range(len(picks))]
    by_reasons: dict[tuple[str, ...], list[str]] = {}
    for name, k in zip(sorted(names), picks, strict=True):
        by_reasons.setdefault(reasons[k], []).append(name)
    groups = [RejectedGroup(why, len(got), got[:NODES_SHOWN]) for why, got in by_reasons.items()]
    rnd.shuffle(groups)
    assert _rejected(groups) == _rejected_oracle(by_reasons)
