"""Mutated sample inputs through the CLI, the way users run it: berth never crashes on bad input.

Every run ends with exit 0 and valid output, or exit 2 and one line per problem on stderr, never a
traceback. For `berth replay`, a bad line has no effect at all: the decisions equal those of the
same log with the rejected lines blanked out (blank lines keep the line numbers).

`make test` runs a few examples per target (the `ci` profile); `make fuzz` runs many more.
"""

from __future__ import annotations

import contextlib
import io
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from berth_cli.main import main
from tests.fuzz.mutations import RAW, Mutation, apply_json, apply_yaml, paths

ROOT = Path(__file__).parents[2]
DATA = ROOT / "tests" / "data"
NOW = "2026-11-01T12:00:00Z"
SNAPSHOTS = [
    DATA / "snapshots" / "load-aware.yaml",
    DATA / "snapshots" / "local-pvs.yaml",
    DATA / "snapshots" / "local-pvs.json",
    DATA / "snapshots" / "typed-lists.yaml",
    DATA / "buffers" / "shop.yaml",
]
CONFIGS = [ROOT / "examples" / "most-free.yaml", ROOT / "examples" / "capacity-priority-off.yaml"]
LOGS = [DATA / "logs" / "local-pvs.jsonl", DATA / "logs" / "scarce-pvs.jsonl", DATA / "logs" / "buffers.jsonl"]
# The time limit follows the profile's number of examples (about a second each on a loaded machine):
# the suite's 60 s cut the `ci` profile's 60 short under load, and would always cut `make fuzz`'s.
pytestmark = pytest.mark.timeout(max(300, 5 * settings().max_examples))


@dataclass(frozen=True)
class Case:
    """A mutated input; shown by what was mutated where (the bytes can be megabytes)."""

    what: str
    source: Path
    text: bytes = field(repr=False, default=b"")
    lines: list[bytes] = field(repr=False, default_factory=list)


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(argv))
        except SystemExit as e:  # argparse's usage errors
            code = int(e.code or 0)
    return code, out.getvalue(), err.getvalue()


def assert_clean(command: str, code: int, out: str, err: str, what: str, json_out: bool = True) -> None:
    """Exit 0 with valid JSON, or exit 2 with only one-line problems on stderr; no traceback."""
    assert "Traceback" not in err, (what, err)
    if code == 0:
        if json_out:
            json.loads(out)
        return
    assert code == 2, (what, code, err)
    lines = [line for line in err.splitlines() if line and not line.startswith("warning:")]
    assert lines, f"{what}: exit 2 without saying why"
    for line in lines:
        # argparse: "usage: ..." and "berth replay: error: ..."; berth: "berth <command>: ..."
        assert line.startswith((f"berth {command}:", "usage:", " ")), (what, line)


def mutation(draw: st.DrawFn, doc: Any) -> Mutation:
    where = draw(st.sampled_from(list(paths(doc))))
    return Mutation(where, draw(st.sampled_from(RAW)))


def yaml_docs(path: Path) -> list[Any]:
    if path.suffix == ".json":
        return [json.loads(path.read_text())]
    return [d for d in yaml.safe_load_all(path.read_text()) if d is not None]


@st.composite
def mutated_snapshot(draw: st.DrawFn) -> Case:
    path = draw(st.sampled_from(SNAPSHOTS))
    docs = yaml_docs(path)
    index = draw(st.integers(0, len(docs) - 1))
    m = mutation(draw, docs[index])
    text = apply_json(docs[0], m) if path.suffix == ".json" else apply_yaml(docs, index, m)
    return Case(f"{path.name}[{index}] {m}", path, text)


@given(mutated_snapshot())
def test_evaluate_and_buffers_on_mutated_snapshots(tmp_path_factory: pytest.TempPathFactory, case: Case) -> None:
    snapshot = tmp_path_factory.mktemp("snap") / case.source.name
    snapshot.write_bytes(case.text)
    for command in ("evaluate", "buffers"):
        code, out, err = run(command, "--snapshot", str(snapshot), "--now", NOW)
        assert_clean(command, code, out, err, case.what)


@st.composite
def mutated_config(draw: st.DrawFn) -> Case:
    path = draw(st.sampled_from(CONFIGS))
    docs = yaml_docs(path)
    m = mutation(draw, docs[0])
    return Case(f"{path.name} {m}", path, apply_yaml(docs, 0, m))


@given(mutated_config())
def test_evaluate_with_mutated_configs(tmp_path_factory: pytest.TempPathFactory, case: Case) -> None:
    config = tmp_path_factory.mktemp("cfg") / "config.yaml"
    config.write_bytes(case.text)
    snapshot = str(DATA / "snapshots" / "local-pvs.yaml")
    code, out, err = run("evaluate", "--snapshot", snapshot, "--config", str(config), "--now", NOW)
    assert_clean("evaluate", code, out, err, case.what)


@st.composite
def mutated_log(draw: st.DrawFn) -> Case:
    path = draw(st.sampled_from(LOGS))
    lines = path.read_bytes().splitlines()
    parsed = {i: json.loads(line) for i, line in enumerate(lines) if _is_json(line)}
    notes = []
    for i in draw(st.lists(st.sampled_from(sorted(parsed)), min_size=1, max_size=3, unique=True)):
        m = mutation(draw, parsed[i])
        lines[i] = apply_json(parsed[i], m)
        notes.append(f"line {i + 1} {m}")
    return Case(f"{path.name}: {'; '.join(notes)}", path, lines=lines)


def _is_json(line: bytes) -> bool:
    try:
        json.loads(line)
    except ValueError:
        return False
    return True


def replay(log: Path, out: Path) -> tuple[int, str, str, bytes, list[int]]:
    decisions, rejects = out / "decisions.jsonl", out / "rejects.jsonl"
    code, stdout, err = run(
        "replay", str(log), "--decisions", str(decisions), "--rejects", str(rejects), "--no-progress"
    )
    bad = [json.loads(r)["line"] for r in rejects.read_bytes().splitlines()] if rejects.exists() else []
    return code, stdout, err, decisions.read_bytes() if decisions.exists() else b"", bad


@given(mutated_log())
def test_replay_bad_lines_change_nothing(tmp_path_factory: pytest.TempPathFactory, case: Case) -> None:
    what, lines = case.what, list(case.lines)
    work = tmp_path_factory.mktemp("log")
    log = work / case.source.name
    log.write_bytes(b"\n".join(lines) + b"\n")
    code, out, err, decisions, bad = replay(log, work)
    assert_clean("replay", code, out, err, what, json_out=False)
    assert code == 0, (what, err)
    for n in bad:
        lines[n - 1] = b""
    clean = tmp_path_factory.mktemp("clean")
    log.write_bytes(b"\n".join(lines) + b"\n")
    code, _, err, expected, still_bad = replay(log, clean)
    assert (code, still_bad) == (0, []), (what, err)
    assert decisions == expected, what


BAD_FLAGS = [
    ["evaluate", "--snapshot", str(SNAPSHOTS[1]), "--now", "9999-12-31T23:59:59Z"],
    ["evaluate", "--snapshot", str(SNAPSHOTS[1]), "--now", "0001-01-01T00:00:00+23:59"],
    ["buffers", "--snapshot", str(SNAPSHOTS[4]), "--now", "9999-12-31T23:59:59Z"],
    ["buffers", "--snapshot", str(SNAPSHOTS[4]), "--now", "9999-12-31T23:59:59-23:59"],
    ["replay", str(LOGS[0]), "--top-nodes", "-1", "--no-progress"],
    ["replay", str(LOGS[0]), "--until", "9999-12-31T23:59:59-23:59", "--no-progress"],
    ["replay", str(LOGS[0]), "--from", "0001-01-01T00:00:00+23:59", "--no-progress"],
]


@pytest.mark.parametrize("argv", BAD_FLAGS, ids=lambda a: f"{a[0]} {' '.join(x for x in a[2:] if '/' not in x)}")
def test_bad_flag_values(argv: list[str], tmp_path: Path) -> None:
    argv = [*argv, "--rejects", str(tmp_path / "r.jsonl")] if argv[0] == "replay" else argv
    code, out, err = run(*argv)
    assert_clean(argv[0], code, out, err, " ".join(argv), json_out=argv[0] != "replay")


@pytest.mark.parametrize("flag", ["--decisions", "--rejects"])
@pytest.mark.parametrize("where", ["a directory", "under a file"])
def test_output_paths_checked_before_the_run(flag: str, where: str, tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    target = tmp_path if where == "a directory" else blocker / "out.jsonl"
    code, out, err = run("replay", str(LOGS[0]), flag, str(target), "--no-progress")
    assert_clean("replay", code, out, err, f"{flag} {where}", json_out=False)
    assert code == 2, err
