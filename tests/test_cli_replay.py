"""`berth replay` run the way users run it, on logs checked into tests/data/logs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from berth.core.events import Event
from berth.core.pipeline.scorer import ScorerEngine
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
    theirs = {r["pod"]: r["volumeBindings"][0]["pv"] for r in lines(tmp_path / "d.compare.jsonl")}
    assert mine["db/small-0"] == "pv-b-10g"
    assert theirs["db/small-0"] != "pv-b-10g"


def test_missing_log_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = replay(capsys, "/no/such.jsonl")
    assert code == 2 and err == "berth replay: error: /no/such.jsonl: No such file\n"


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


def test_an_event_the_engine_cannot_handle_is_rejected_and_fatal_when_strict(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The worker dead-letters an error of the data rather than stopping; the replay rejects it at
    its line, and --strict makes it fatal like any other bad line."""
    original = ScorerEngine.handle

    def handle(self: ScorerEngine, ev: Event) -> object:
        if ev.position == 17:
            raise OverflowError("boom")
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
    assert err == f"berth replay: error: {log}: line 17: cannot handle: OverflowError: boom\n"
