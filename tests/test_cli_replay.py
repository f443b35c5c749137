"""`berth replay` run the way users run it, on logs checked into tests/data/logs."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from berth.adapters.files.eventlog import read_events
from berth.core.api.watch import Event
from berth.core.errors import InputError
from berth.core.framework.status import fit_error
from berth.core.pipeline.scorer import ScorerEngine
from berth_cli import replay as cli_replay
from berth_cli.main import main

LOGS = Path(__file__).parent / "data" / "logs"
LOCAL = str(LOGS / "local-pvs.jsonl")


def replay(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["replay", *argv, "--no-progress"])
    out, err = capsys.readouterr()
    return code, out, err


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_decisions_file_and_rejects(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out = tmp_path / "d.jsonl"
    code, stdout, err = replay(capsys, LOCAL, "--decisions", str(out))
    assert code == 0
    records = lines(out)
    assert [(r["pod"], r["status"], r["node"]) for r in records] == [
        ("db/small-0", "Scheduled", "node-b"),
        ("db/small-1", "Scheduled", "node-c"),
        ("db/large-0", "Scheduled", "node-a"),
        ("db/medium-0", "Scheduled", "node-a"),
    ]
    first = records[0]
    assert set(first) >= {"ts", "decisionId", "position", "pod", "status", "node", "message", "volumeBindings", "nodes"}
    assert first["volumeBindings"] == [{"claim": "db/small-0", "pv": "pv-b-10g"}]
    rejects = lines(tmp_path / "d.rejects.jsonl")
    assert [(r["line"], r["reason"].split(":")[0]) for r in rejects] == [
        (12, "invalid JSON"),
        (13, "PersistentVolume pv-bad"),
    ]
    assert "2 rejected line(s)" in err
    assert "rejected lines" in stdout and "Scheduled" in stdout


def test_two_replays_give_the_same_bytes(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    for name in ("a", "b"):
        assert (
            replay(capsys, LOCAL, str(LOGS / "buffers.jsonl"), "--decisions", str(tmp_path / f"{name}.jsonl"))[0] == 0
        )
    assert (tmp_path / "a.jsonl").read_bytes() == (tmp_path / "b.jsonl").read_bytes()


def test_strict_stops_at_the_first_bad_line(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = replay(capsys, LOCAL, "--strict")
    assert code == 2
    assert err.startswith(f"berth replay: error: {LOCAL}: line 12: invalid JSON")
    assert err.count("\n") == 1


def test_until_stops_reading(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out = tmp_path / "d.jsonl"
    assert replay(capsys, LOCAL, "--until", "2026-11-01T10:00:15Z", "--decisions", str(out))[0] == 0
    assert [r["pod"] for r in lines(out)] == ["db/small-0", "db/small-1"]


def test_buffers_follow_the_pods_over_time(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out = tmp_path / "d.jsonl"
    assert replay(capsys, str(LOGS / "buffers.jsonl"), "--decisions", str(out))[0] == 0
    ready = [(r["position"], r["readyReplicas"]) for r in lines(out) if r["kind"] == "BufferStatus"]
    assert ready == [(4, 4), (6, 2), (7, 4)]  # two busy pods leave room for 2 chunks; freed again


def test_compare_replays_under_two_configs(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    flipped = tmp_path / "most-free.yaml"
    flipped.write_text(
        "profiles:\n- pluginConfig:\n  - name: VolumeBinding\n"
        "    args: {shape: [{utilization: 0, score: 10}, {utilization: 100, score: 0}]}\n"
    )
    out = tmp_path / "d.jsonl"
    code, stdout, _ = replay(capsys, LOCAL, "--compare", str(flipped), "--decisions", str(out))
    assert code == 0
    assert "default" in stdout and "most-free" in stdout
    mine = {r["pod"]: r["volumeBindings"][0]["pv"] for r in lines(out)}
    theirs = {r["pod"]: r["volumeBindings"][0]["pv"] for r in lines(tmp_path / "d.most-free.jsonl")}
    assert mine["db/small-0"] == "pv-b-10g"
    assert theirs["db/small-0"] != "pv-b-10g"


def test_missing_log_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = replay(capsys, "/no/such.jsonl")
    assert code == 2 and err == "berth replay: error: /no/such.jsonl: No such file\n"


def test_a_bookmark_moves_the_clock_and_refreshes_readiness(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """busy-1 leaves 30 s after the last refresh; the log ends with a BOOKMARK 89 s later: past the 60 s resync."""
    src = (LOGS / "buffers.jsonl").read_text().splitlines()
    gone = json.loads(src[7])
    gone["ts"] = "2026-11-01T10:10:30Z"
    bookmark = {"ts": "2026-11-01T10:11:59Z", "type": "BOOKMARK", "object": {"kind": "Pod", "metadata": {}}}
    log = tmp_path / "log.jsonl"
    log.write_text("\n".join([*src[:6], json.dumps(gone), json.dumps(bookmark)]) + "\n")
    out = tmp_path / "d.jsonl"
    assert replay(capsys, str(log), "--decisions", str(out))[0] == 0
    statuses = [r for r in lines(out) if r["kind"] == "BufferStatus"]
    assert statuses[-1]["position"] == 8 and statuses[-1]["ts"] == "2026-11-01T10:11:59Z"
    assert statuses[-1]["readyReplicas"] > statuses[-2]["readyReplicas"]


def test_positions_run_on_across_logs(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """A log cut in two gives the decisions of the whole, positions included."""
    whole, cut = tmp_path / "whole.jsonl", tmp_path / "cut.jsonl"
    text = Path(LOCAL).read_text().splitlines(keepends=True)
    (tmp_path / "a.jsonl").write_text("".join(text[:9]))
    (tmp_path / "b.jsonl").write_text("".join(text[9:]))
    assert replay(capsys, LOCAL, "--decisions", str(whole))[0] == 0
    assert replay(capsys, str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl"), "--decisions", str(cut))[0] == 0
    positions = [r["position"] for r in lines(cut)]
    assert max(positions) > 9 and lines(cut) == lines(whole)


@pytest.mark.parametrize(
    ("text", "hint"),
    [
        ('{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a"}}\n', True),  # bare objects
        ("not json\n", False),
    ],
)
def test_a_run_with_every_line_rejected_exits_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, text: str, hint: bool
) -> None:
    log = tmp_path / "log.json"
    log.write_text(text)
    code, _, err = replay(capsys, str(log), "--rejects", str(tmp_path / "r.jsonl"))
    assert code == 2
    assert "every line of" in err and "--output-watch-events" in err
    assert ("berth watcher --record" in err) == hint


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("snap.json", '{\n  "apiVersion": "v1",\n  "items": [],\n  "kind": "List"\n}\n'),  # kubectl get -o json
        ("snap.yaml", "apiVersion: v1\nkind: List\nitems: []\n"),  # kubectl get -o yaml
        ("snap.txt", "---\nkind: Node\nmetadata:\n  name: a\n"),
    ],
)
def test_a_snapshot_given_to_replay_points_at_evaluate(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, text: str
) -> None:
    snap = tmp_path / name
    snap.write_text(text)
    monkeypatch.chdir(tmp_path)
    code, out, err = replay(capsys, str(snap))
    assert (code, out) == (2, "")
    error, hint = err.splitlines()
    assert error.startswith(f"berth replay: error: {snap}: is ")
    assert hint.startswith("berth replay: hint: ") and f"berth evaluate --snapshot {snap}" in hint
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]  # no ./berth-rejects.jsonl


SCARCE = str(LOGS / "scarce-pvs.jsonl")


def test_decisions_are_compact_by_default_and_complete_with_all_nodes(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    compact, full = tmp_path / "c.jsonl", tmp_path / "f.jsonl"
    assert replay(capsys, SCARCE, "--decisions", str(compact))[0] == 0
    assert replay(capsys, SCARCE, "--decisions", str(full), "--all-nodes")[0] == 0
    short, long = lines(compact), lines(full)
    assert [(r["pod"], r["status"], r["node"], r["message"]) for r in short] == [
        (r["pod"], r["status"], r["node"], r["message"]) for r in long
    ]
    for s, f in zip(short, long, strict=True):
        feasible = sorted(((n, r) for n, r in f["nodes"].items() if r["feasible"]), key=lambda kv: -kv[1]["total"])
        assert [(n, r["total"]) for n, r in s["nodes"].items()] == [(n, r["total"]) for n, r in feasible[:3]]
        if s["status"] == "Unschedulable":
            # kube's counts: each node's first failing plugin, whose first reason leads the node's report
            assert s["reasons"] == f["reasons"]
            # then DefaultPreemption's tail (kube's FitError with its PostFilter message)
            assert s["message"].startswith(
                fit_error(len(f["nodes"]), s["reasons"]) + " no new claims to deallocate, preemption: "
            )
            assert {r["reasons"][0] for r in f["nodes"].values()} <= s["reasons"].keys()
            assert sum(s["reasons"].values()) <= sum(len(r["reasons"]) for r in f["nodes"].values())
    assert any(r["status"] == "Unschedulable" for r in short)
    assert compact.stat().st_size < full.stat().st_size


@pytest.mark.timeout(300)  # seven replays of the sample: past the default 60 s on a busy 2-CPU machine
def test_n_way_compare_in_processes_gives_what_one_process_gives(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    most_free = str(Path(__file__).parent.parent / "examples" / "most-free.yaml")
    outs = {}
    for jobs in ("1", "3"):
        d = tmp_path / jobs
        argv = [LOCAL, "--compare", most_free, most_free, "--jobs", jobs, "--decisions", str(d / "d.jsonl")]
        argv += ["--summary", str(d / "s.json"), "--diff", str(d / "diff.jsonl"), "--report", str(d / "report")]
        code, _, _ = replay(capsys, *argv)
        assert code == 0
        outs[jobs] = d
    one, three = outs["1"], outs["3"]
    for name in ("d.jsonl", "d.most-free-1.jsonl", "d.most-free-2.jsonl", "diff.jsonl"):
        assert (one / name).read_bytes() == (three / name).read_bytes()
    runs = json.loads((three / "s.json").read_text())["runs"]
    assert [r["label"] for r in runs] == ["default", "most-free #1", "most-free #2"]
    assert {**runs[1], "label": ""} == {**runs[2], "label": ""}
    diff = lines(three / "diff.jsonl")
    default = {r["pod"]: r for r in lines(three / "d.jsonl") if r["kind"] == "Decision"}
    other = {r["pod"]: r for r in lines(three / "d.most-free-1.jsonl") if r["kind"] == "Decision"}
    differ = sorted(p for p in default.keys() | other.keys() if _placed(default.get(p)) != _placed(other.get(p)))
    assert [d["pod"] for d in diff] == differ and differ
    assert diff[0]["runs"][0]["label"] == "default"
    page = (three / "report" / "index.html").read_text()
    assert "Pods placed differently" in page and differ[0] in page
    # each run in its own process gives what a replay of that config alone gives
    alone = tmp_path / "alone"
    code, _, _ = replay(capsys, LOCAL, "--config", most_free, "--decisions", str(alone / "d.jsonl"),
                        "--summary", str(alone / "s.json"))  # fmt: skip
    assert code == 0
    assert (alone / "d.jsonl").read_bytes() == (three / "d.most-free-2.jsonl").read_bytes()
    assert {**json.loads((alone / "s.json").read_text())["runs"][0], "label": ""} == {**runs[2], "label": ""}


@pytest.mark.parametrize("jobs", ["1", "2", "3"])
def test_each_run_of_a_compare_writes_what_its_config_writes_alone(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, jobs: str
) -> None:
    """A compare decodes the logs once and its replays share them (in this process, or inherited by
    forked ones): each run's decisions and summary are what a replay under its config alone writes,
    over several logs, rejected lines included."""
    examples = Path(__file__).parent.parent / "examples"
    configs = [str(examples / "most-free.yaml"), str(examples / "capacity-priority-off.yaml")]
    logs = [LOCAL, str(LOGS / "buffers.jsonl"), str(LOGS / "scarce-pvs.jsonl")]
    both = tmp_path / "compare"
    argv = [*logs, "--compare", *configs, "--jobs", jobs, "--decisions", str(both / "d.jsonl")]
    read: list[str] = []
    monkeypatch.setattr(cli_replay, "read_events", lambda path, *a: read.append(path) or read_events(path, *a))
    assert replay(capsys, *argv, "--summary", str(both / "s.json"))[0] == 0
    assert read == logs  # each log decoded once, here, whatever the replays
    monkeypatch.undo()
    runs = json.loads((both / "s.json").read_text())["runs"]
    for i, (config, name) in enumerate(
        zip([None, *configs], ["d", "d.most-free", "d.capacity-priority-off"], strict=True)
    ):
        alone = tmp_path / f"alone{i}"
        argv = [*logs, *(["--config", config] if config else []), "--decisions", str(alone / "d.jsonl")]
        assert replay(capsys, *argv, "--summary", str(alone / "s.json"))[0] == 0
        assert (alone / "d.jsonl").read_bytes() == (both / f"{name}.jsonl").read_bytes()
        assert json.loads((alone / "s.json").read_text())["runs"] == [runs[i]]
        assert (alone / "d.rejects.jsonl").read_bytes() == (both / "d.rejects.jsonl").read_bytes()
    assert len({(both / f"{name}.jsonl").read_bytes() for name in ("d", "d.most-free", "d.capacity-priority-off")}) > 1


def _placed(r: dict | None) -> tuple[str, list[str]] | None:
    if r is None or r["status"] != "Scheduled":
        return None
    return r["node"], [b["pv"] for b in r["volumeBindings"] if b.get("pv")]


def _bad(change: str) -> bytes:
    """A Pod line late in time, claiming position 1, made bad by one change."""
    good = json.loads(Path(LOCAL).read_text().splitlines()[16])
    good["ts"], good["position"] = "2026-11-01T23:00:00Z", 1
    text = json.dumps(good)
    swaps = {
        "invalid quantity": ('"cpu": "500m"', '"cpu": "lots"'),
        "metadata as a string": ('"metadata": {', '"metadata": "x", "m": {'),
        "nested deeply": ('"cpu": "500m"', '"cpu": ' + "[" * 3000 + "]" * 3000),
        "ts past year 9999": ('"2026-11-01T23:00:00Z"', '"9999-12-31T23:59:59-23:59"'),
        "not UTF-8": ('"cpu": "500m"', '"cpu": "\udcff"'),
    }
    old, new = swaps[change]
    assert old in text
    return text.replace(old, new, 1).encode("utf-8", "surrogateescape")


BAD = ["invalid quantity", "metadata as a string", "nested deeply", "ts past year 9999", "not UTF-8"]


@pytest.mark.parametrize("change", BAD)
def test_a_rejected_line_changes_nothing(capsys: pytest.CaptureFixture[str], tmp_path: Path, change: str) -> None:
    """Not the clock (its ts is later than every valid line's), not the decisions; it is rejected at
    its real line whatever position it claims, and --strict stops there."""
    lines = Path(LOCAL).read_bytes().splitlines()
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b"\n".join([*lines[:5], _bad(change), *lines[5:]]) + b"\n")
    clean = tmp_path / "clean.jsonl"
    clean.write_bytes(b"\n".join([*lines[:5], b"", *lines[5:]]) + b"\n")
    code, _, _ = replay(capsys, str(bad), "--decisions", str(tmp_path / "bad.d.jsonl"))
    assert code == 0
    replay(capsys, str(clean), "--decisions", str(tmp_path / "clean.d.jsonl"))
    assert (tmp_path / "bad.d.jsonl").read_bytes() == (tmp_path / "clean.d.jsonl").read_bytes()
    rejected = [r["line"] for r in lines_of(tmp_path / "bad.d.rejects.jsonl")]
    assert 6 in rejected and 1 not in rejected
    code, out, err = replay(capsys, str(bad), "--strict")
    assert code == 2 and out == ""
    assert err.startswith(f"berth replay: error: {bad}: line 6: ") and err.count("\n") == 1, err


def lines_of(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_bytes().splitlines()]


def test_an_event_the_engine_finds_bad_is_rejected_and_fatal_when_strict(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The worker dead-letters bad input the engine finds (an InputError) rather than stopping; the
    replay rejects it at its line, and --strict makes it fatal like any other bad line."""
    original = ScorerEngine.handle

    def handle(self: ScorerEngine, ev: Event) -> object:
        if ev.position == 17:
            raise InputError("Pod default/x", "spec", "boom")
        return original(self, ev)

    monkeypatch.setattr(ScorerEngine, "handle", handle)
    log = tmp_path / "log.jsonl"
    log.write_bytes(
        b"\n".join(b"" if n in (12, 13) else line for n, line in enumerate(Path(LOCAL).read_bytes().splitlines(), 1))
    )
    code, _, _ = replay(capsys, str(log), "--decisions", str(tmp_path / "d.jsonl"))
    assert code == 0
    assert [r["line"] for r in lines_of(tmp_path / "d.rejects.jsonl") if "boom" in r["reason"]] == [17]
    code, out, err = replay(capsys, str(log), "--strict", "--decisions", str(tmp_path / "s.jsonl"))
    assert (code, out) == (2, "")
    assert err == f"berth replay: error: {log}: line 17: cannot handle: Pod default/x: spec: boom\n"


def test_a_bug_in_the_engine_ends_the_replay(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Any other error is not the line's: it is raised, not rejected."""
    original = ScorerEngine.handle

    def handle(self: ScorerEngine, ev: Event) -> object:
        if ev.position == 17:
            raise ZeroDivisionError("a bug")
        return original(self, ev)

    monkeypatch.setattr(ScorerEngine, "handle", handle)
    with pytest.raises(ZeroDivisionError, match="a bug"):
        replay(capsys, LOCAL, "--decisions", str(tmp_path / "d.jsonl"))


def test_a_resource_version_that_is_not_a_decimal_uint64_rejects_its_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """issue 20: `int()` took some Unicode digits and not others. issue 34: a resourceVersion the API server
    could not have written (ParseResourceVersion: a decimal uint64) rejects its line, and the others decide
    as before; a 5,002-digit one crashed `newer`."""
    lines = Path(LOCAL).read_text().splitlines()
    marked = [i for i, line in enumerate(lines) if '"name":"pv-a-1t","resourceVersion":"' in line]
    marked += [i for i, line in enumerate(lines) if '"name":"node-c","resourceVersion":"' in line]
    assert len(marked) == 2
    odd = list(lines)
    odd[marked[0]] = odd[marked[0]].replace('"resourceVersion":"', '"resourceVersion":"\u00b2', 1)
    odd[marked[1]] = odd[marked[1]].replace('"resourceVersion":"', '"resourceVersion":"1' + "0" * 5001, 1)
    blanked = ["" if i in marked else line for i, line in enumerate(lines)]
    got = {}
    for name, text in (("odd", odd), ("blanked", blanked)):
        path = tmp_path / f"{name}.jsonl"
        path.write_text("\n".join(text) + "\n")
        code, _, err = replay(capsys, str(path), "--decisions", str(tmp_path / f"{name}.d.jsonl"),
                              "--rejects", str(tmp_path / f"{name}.r.jsonl"))  # fmt: skip
        assert code == 0, err
        got[name] = (tmp_path / f"{name}.d.jsonl").read_text()
    rejects = [json.loads(r) for r in (tmp_path / "odd.r.jsonl").read_text().splitlines()]
    ours = [r for r in rejects if "metadata.resourceVersion" in r["reason"]]  # the log has bad lines of its own
    assert [r["line"] for r in ours] == sorted(i + 1 for i in marked)
    assert len(rejects) - len(ours) == len((tmp_path / "blanked.r.jsonl").read_text().splitlines())
    assert got["odd"] == got["blanked"] and got["odd"].count("Scheduled") > 0


@pytest.mark.parametrize("value", ["1e-300", "0.0001", "1e7", "nan"])
def test_speed_outside_its_range_is_a_clean_error(value: str, capsys: pytest.CaptureFixture[str]) -> None:
    """issue 34: `--speed 1e-300` slept for ever."""
    with pytest.raises(SystemExit) as e:
        main(["replay", str(LOGS / "local-pvs.jsonl"), "--speed", value])
    assert e.value.code == 2
    assert "argument --speed: want a" in capsys.readouterr().err


def test_diff_covers_every_run_against_the_first() -> None:
    a = {"p1": ("n1", []), "p2": ("n1", []), "p3": None}
    b = {"p1": ("n1", []), "p2": ("n2", []), "p3": None}
    c = {"p1": ("n3", ["pv"]), "p2": ("n1", []), "p3": None}
    diff = cli_replay.placement_diff(["default", "b", "c"], [a, b, c])
    assert [d["pod"] for d in diff] == ["p1", "p2"]
    assert [r["label"] for r in diff[0]["runs"]] == ["default", "b", "c"]
    assert diff[0]["runs"][2] == {"label": "c", "node": "n3", "pvs": ["pv"]}


def test_a_pod_with_resource_claims_is_an_error_in_the_summary(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """issue 34: dynamic resource allocation is not modelled: the pod's decision is an Error, counted as such
    (never a placement), its message in the table's Decisions section."""
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
            "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}  # fmt: skip

    def pod(name: str, **spec: object) -> dict:
        return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
                "spec": {"containers": [{"name": "c", "image": "x"}], **spec}}  # fmt: skip

    objs = [node, pod("gpu", resourceClaims=[{"name": "gpu", "resourceClaimTemplateName": "t"}]), pod("plain")]
    log = tmp_path / "dra.jsonl"
    log.write_text("".join(json.dumps({"ts": f"2026-01-01T00:00:0{i}Z", "type": "ADDED", "object": o}) + "\n"
                           for i, o in enumerate(objs)))  # fmt: skip
    summary, decisions = tmp_path / "s.json", tmp_path / "d.jsonl"
    code, out, err = replay(capsys, str(log), "--summary", str(summary), "--decisions", str(decisions))
    assert code == 0, err
    got = {d["pod"]: (d["status"], d["node"]) for d in lines(decisions) if d["kind"] == "Decision"}
    assert got == {"default/gpu": ("Error", None), "default/plain": ("Scheduled", "n1")}
    run = json.loads(summary.read_text())["runs"][0]
    assert (run["podsErrorAtEnd"], run["podsUnschedulableAtEnd"], run["podsScheduled"]) == (1, 0, 1)
    assert "pods Error" in out and "dynamic resource allocation is not modelled" in out


@pytest.mark.timeout(300)
@pytest.mark.parametrize("jobs", ["1", "3"])
def test_compare_progress_per_run(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, jobs: str
) -> None:
    """Every run of a --compare writes its progress to the shared board, the forked ones too, and the
    bars read it by config; off a terminal stderr gets one plain line per run, no escapes."""
    from contextlib import contextmanager

    examples = Path(__file__).parent.parent / "examples"
    configs = [str(examples / "most-free.yaml"), str(examples / "capacity-priority-off.yaml")]
    seen: list[tuple[cli_replay.Board, list[str], int]] = []
    real = cli_replay.board_bars

    @contextmanager
    def spy(board: cli_replay.Board, names: list[str], total: int, *args: object) -> Iterator[None]:
        seen.append((board, names, total))
        with real(board, names, total, *args):  # type: ignore[arg-type]
            yield

    monkeypatch.setattr(cli_replay, "board_bars", spy)
    assert main(["replay", LOCAL, "--compare", *configs, "--jobs", jobs]) == 0
    _, err = capsys.readouterr()
    ((board, names, total),) = seen
    assert names == ["default", "most-free", "capacity-priority-off"]
    read = [board.get(run) for run in range(3)]
    assert [(events, done) for events, _, _, done in read] == [(total, True)] * 3  # from each process
    assert [decisions for _, decisions, _, _ in read] == [4, 4, 4]
    assert "\x1b" not in err
    lines = [line for line in err.splitlines() if line.startswith("berth replay: ")]
    assert [line.split(":")[1].strip() for line in lines] == names
