"""Mutated sample inputs through the CLI, the way users run it: berth never crashes on bad input.

Every run ends with exit 0 and valid output, or exit 2 and one line per problem on stderr, never a
traceback. For `berth replay`, a bad line has no effect at all: the decisions equal those of the
same log with the rejected lines blanked out (blank lines keep the line numbers).

Besides one value anywhere, the mutations aimed at what issue 34 found: metadata times and resourceVersions
on every kind of the kind table (on a line's object, on a repeat of it, on an inserted object of any kind),
and extreme values of every number- and time-valued flag.

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
from hypothesis import example, given, settings
from hypothesis import strategies as st

from berth.core.api.kinds import KINDS
from berth_cli.main import main
from tests.fuzz.mutations import META_FIELDS, META_RAW, RAW, Mutation, apply_json, apply_yaml, paths

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
    check_snapshot(tmp_path_factory, case)


def check_snapshot(tmp_path_factory: pytest.TempPathFactory, case: Case) -> None:
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
    check_replay(tmp_path_factory, case)


def check_replay(tmp_path_factory: pytest.TempPathFactory, case: Case) -> None:
    """The replay is clean, and its decisions are those of the log with the rejected lines blanked out."""
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


def meta_mutation(draw: st.DrawFn, doc: Any, under: tuple[str | int, ...]) -> tuple[Any, Mutation]:
    """A metadata time or resourceVersion of the object at `under` in doc, made bad (or extreme); the
    document with the field in place (added when absent) and the mutation."""
    doc = json.loads(json.dumps(doc))
    obj = doc
    for p in under:
        obj = obj[p]
    field = draw(st.sampled_from(META_FIELDS))
    if not isinstance(obj.get("metadata"), dict):
        obj["metadata"] = {}
    obj["metadata"].setdefault(field, "")
    return doc, Mutation((*under, "metadata", field), draw(st.sampled_from(META_RAW)))


def minimal_object(kind_key: tuple[str, str], n: int) -> dict[str, Any]:
    """An object of a kind of the kind table with nothing but what it must have."""
    group, name = kind_key
    kind = KINDS[kind_key]
    version = f"{group}/{kind.versions[0]}" if group else kind.versions[0]
    meta: dict[str, Any] = {"name": f"fuzz-{n}", **({"namespace": "default"} if kind.namespaced else {})}
    obj = {"apiVersion": version, "kind": name, "metadata": meta}
    if name == "PersistentVolume":
        obj["spec"] = {"capacity": {"storage": "1Gi"}}
    return obj


META_LOGS = [*LOGS, ROOT / "examples" / "cold-burst.jsonl"]


@st.composite
def meta_mutated_log(draw: st.DrawFn) -> Case:
    """issue 34: a log whose lines carry bad metadata times or resourceVersions, on their own objects or on an
    inserted object of any kind berth reads."""
    path = draw(st.sampled_from(META_LOGS))
    lines = path.read_bytes().splitlines()
    notes = []
    for _ in range(draw(st.integers(1, 3))):
        i = draw(st.integers(0, len(lines) - 1))
        how = draw(st.sampled_from(["own", "again", "new"]))
        if how == "again" and _is_json(lines[i]):  # the object once more (an update) with the bad field
            doc, m = meta_mutation(draw, json.loads(lines[i]), ("object",))
            lines.insert(i + 1, apply_json(doc, m))
            notes.append(f"line {i + 1} again {m}")
        elif how == "new" or not _is_json(lines[i]):
            key = draw(st.sampled_from(sorted(KINDS)))
            doc: Any = {"ts": None, "type": "ADDED", "object": minimal_object(key, i)}
            ts = next((json.loads(x).get("ts") for x in lines[i:] if _is_json(x)), None)
            doc["ts"] = ts
            doc, m = meta_mutation(draw, doc, ("object",))
            lines.insert(i, apply_json(doc, m))
            notes.append(f"new {key[1]} before line {i + 1} {m}")
        else:
            doc, m = meta_mutation(draw, json.loads(lines[i]), ("object",))
            lines[i] = apply_json(doc, m)
            notes.append(f"line {i + 1} {m}")
    return Case(f"{path.name}: {'; '.join(notes)}", path, lines=lines)


def again(path: Path, line: int, m: Mutation) -> Case:
    """The log with line (1-based) repeated right after itself, the repeat mutated (an update of the object)."""
    lines = path.read_bytes().splitlines()
    doc = json.loads(lines[line - 1])
    doc["object"]["metadata"].setdefault(m.path[-1], "")
    lines.insert(line, apply_json(doc, m))
    return Case(f"{path.name}: line {line} again {m}", path, lines=lines)


def rv_of(value: bytes) -> Mutation:
    return Mutation(("object", "metadata", "resourceVersion"), value)


# issue 34's reproducers: a resourceVersion of 5,002 digits crashed `newer` (an update of a node, of a PV)
@example(again(LOGS[0], 2, rv_of(META_RAW[5])))
@example(again(LOGS[1], 5, rv_of(META_RAW[5])))
@example(again(LOGS[0], 2, Mutation(("object", "metadata", "creationTimestamp"), META_RAW[2])))
@given(meta_mutated_log())
def test_replay_bad_metadata_changes_nothing(tmp_path_factory: pytest.TempPathFactory, case: Case) -> None:
    check_replay(tmp_path_factory, case)


@st.composite
def meta_mutated_snapshot(draw: st.DrawFn) -> Case:
    path = draw(st.sampled_from(SNAPSHOTS))
    docs = yaml_docs(path)
    index = draw(st.integers(0, len(docs) - 1))
    items = docs[index].get("items") if isinstance(docs[index], dict) else None
    under: tuple[str | int, ...] = ("items", draw(st.integers(0, len(items) - 1))) if items else ()
    doc, m = meta_mutation(draw, docs[index], under)
    if path.suffix == ".json":
        return Case(f"{path.name}[{index}] {m}", path, apply_json(doc, m))
    if draw(st.booleans()):  # the object twice, the second time with the bad field
        docs.append(doc)
        index = len(docs) - 1
    docs[index] = doc
    return Case(f"{path.name}[{index}] {m}", path, apply_yaml(docs, index, m))


@given(meta_mutated_snapshot())
def test_evaluate_on_snapshots_with_bad_metadata(tmp_path_factory: pytest.TempPathFactory, case: Case) -> None:
    check_snapshot(tmp_path_factory, case)


# Extreme values for every number- and time-valued flag: a clean error or a run, never a traceback or a hang
# (issue 34: `--speed 1e-300` hung). Values inside a flag's range that would make a replay slow are left out.
EXTREME = ["0", "-1", "-0", "1e-300", "1e308", "inf", "-inf", "nan", "1" + "0" * 5000, "", "x", "\u00b2",
           "9999-12-31T23:59:59-23:59", "0001-01-01T00:00:00+23:59", "10000-01-01T00:00:00Z"]  # fmt: skip
FLAGS = [
    ("replay", "--speed"), ("replay", "--top-nodes"), ("replay", "--preemption-grace"), ("replay", "--from"),
    ("replay", "--until"), ("replay", "--jobs"), ("evaluate", "--now"), ("buffers", "--now"),
]  # fmt: skip


@given(st.sampled_from(FLAGS), st.sampled_from(EXTREME))
def test_extreme_flag_values(tmp_path_factory: pytest.TempPathFactory, flag: tuple[str, str], value: str) -> None:
    command, name = flag
    if command == "replay":
        out = tmp_path_factory.mktemp("flags")
        extra = ["--compare", str(CONFIGS[0])] if name == "--jobs" else []
        argv = ["replay", str(LOGS[0]), f"{name}={value}", *extra, "--no-progress", "--rejects", str(out / "r.jsonl")]
    else:
        snapshot = SNAPSHOTS[4] if command == "buffers" else SNAPSHOTS[1]
        argv = [command, "--snapshot", str(snapshot), f"{name}={value}"]
    code, out_text, err = run(*argv)
    assert_clean(command, code, out_text, err, " ".join(argv[:1] + argv[2:4]), json_out=command != "replay")


BAD_FLAGS = [
    ["evaluate", "--snapshot", str(SNAPSHOTS[1]), "--now", "9999-12-31T23:59:59Z"],
    ["evaluate", "--snapshot", str(SNAPSHOTS[1]), "--now", "0001-01-01T00:00:00+23:59"],
    ["buffers", "--snapshot", str(SNAPSHOTS[4]), "--now", "9999-12-31T23:59:59Z"],
    ["buffers", "--snapshot", str(SNAPSHOTS[4]), "--now", "9999-12-31T23:59:59-23:59"],
    ["replay", str(LOGS[0]), "--top-nodes", "-1", "--no-progress"],
    ["replay", str(LOGS[0]), "--until", "9999-12-31T23:59:59-23:59", "--no-progress"],
    ["replay", str(LOGS[0]), "--from", "0001-01-01T00:00:00+23:59", "--no-progress"],
    ["replay", str(LOGS[0]), "--speed", "1e-300", "--no-progress"],  # issue 34: it hung
    ["replay", str(LOGS[0]), "--speed", "nan", "--no-progress"],
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
