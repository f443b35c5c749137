"""A mapping key given twice is an error in every YAML berth reads, naming the file and the line
(kubectl: `mapping key "kind" already defined at line 2`), never a silently merged object."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from berth.adapters.files.snapshot import parse_documents
from berth.core.errors import InputError
from berth_cli.main import main

DATA = Path(__file__).parent / "data"
LOCAL = str(DATA / "snapshots" / "local-pvs.yaml")
SHOP = str(DATA / "buffers" / "shop.yaml")

# two Nodes pasted without "---" between them: the second would replace the first key by key
PASTED = """apiVersion: v1
kind: Node
metadata:
  name: node-a
apiVersion: v1
kind: Node
metadata:
  name: node-b
"""
# a List (kubectl get -o yaml) with a Node pasted after it
LIST_PLUS_NODE = Path(LOCAL).read_text() + "kind: Node\nmetadata:\n  name: extra\n"
PASTED_PROBLEM = 'line 5: invalid YAML: mapping key "apiVersion" already defined at line 1'
CONFIG = """apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  plugins:
    score:
      enabled: [{name: VolumeBinding, weight: 1}]
    score:
      enabled: [{name: VolumeBinding, weight: 5}]
"""
CONFIG_PROBLEM = 'line 8: invalid YAML: mapping key "score" already defined at line 6'


def _write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(
    ("command", "flag", "text", "other", "problem"),
    [
        ("evaluate", "--snapshot", LIST_PLUS_NODE, [], 'mapping key "kind" already defined at line 2'),
        ("evaluate", "--snapshot", PASTED, [], PASTED_PROBLEM),
        ("evaluate", "--config", CONFIG, ["--snapshot", LOCAL], CONFIG_PROBLEM),
        ("buffers", "--snapshot", PASTED, [], PASTED_PROBLEM),
        ("buffers", "--config", CONFIG, ["--snapshot", SHOP], CONFIG_PROBLEM),
        ("replay", "--config", CONFIG, [str(DATA / "logs" / "scarce-pvs.jsonl")], CONFIG_PROBLEM),
        ("scorer", "--config", CONFIG, [], CONFIG_PROBLEM),
        ("buffer-controller", "--config", CONFIG, [], CONFIG_PROBLEM),
    ],
    ids=[
        "a snapshot with a node pasted after it",
        "evaluate snapshot",
        "evaluate config",
        "buffers snapshot",
        "buffers config",
        "replay config",
        "scorer config",
        "buffer-controller config",
    ],
)
def test_a_duplicate_key_is_one_line_naming_file_and_line(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    command: str,
    flag: str,
    text: str,
    other: list[str],
    problem: str,
) -> None:
    path = _write(tmp_path, "in.yaml", text)
    code, out, err = _run(capsys, command, flag, path, *other)
    assert (code, out) == (2, "")
    assert err.startswith(f"berth {command}: error: {path}: "), err
    assert problem in err and "already defined" in err, err
    assert err.count("\n") == 1


def test_stdin_snapshots_are_strict_too(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(PASTED.encode()), encoding="utf-8"))
    code, _, err = _run(capsys, "evaluate", "--snapshot", "-")
    assert code == 2 and err == f"berth evaluate: error: <stdin>: {PASTED_PROBLEM}\n"


@pytest.mark.parametrize(
    ("text", "want"),
    [
        # separate documents may repeat keys
        ("kind: A\n---\nkind: B\n", [{"kind": "A"}, {"kind": "B"}]),
        # the same key in different mappings
        ("a: {x: 1}\nb: {x: 2}\n", [{"a": {"x": 1}, "b": {"x": 2}}]),
        # keys of other types are other keys
        ("1: a\n'1': b\n", [{1: "a", "1": "b"}]),
        # a merge key's keys may be overridden (YAML 1.1 merge)
        ("base: &b {x: 1, y: 2}\nuse:\n  <<: *b\n  x: 3\n", [{"base": {"x": 1, "y": 2}, "use": {"x": 3, "y": 2}}]),
    ],
)
def test_what_is_not_a_duplicate(text: str, want: list[object]) -> None:
    assert parse_documents(text, "s.yaml") == want


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("a: 1\nb: 2\na: 3\n", 'line 3: invalid YAML: mapping key "a" already defined at line 1'),
        ("x:\n  - {k: 1, k: 2}\n", 'line 2: invalid YAML: mapping key "k" already defined at line 2'),
        ("'a': 1\n\"a\": 2\n", 'line 2: invalid YAML: mapping key "a" already defined at line 1'),
        ("1: a\n1: b\n", "line 2: invalid YAML: mapping key 1 already defined at line 1"),
        ("ok: 1\n---\nkind: A\nkind: B\n", 'line 4: invalid YAML: mapping key "kind" already defined at line 3'),
    ],
)
def test_duplicates_anywhere_are_refused(text: str, where: str) -> None:
    with pytest.raises(InputError) as e:
        parse_documents(text, "s.yaml")
    assert str(e.value) == f"s.yaml: {where}"


# The event builder (libyaml's events straight to objects) gives what the full strict loader gives.
_SAMPLES = [
    "a: &x {b: 1}\nc: *x\n",
    "a: 1\nb: 1.0\nc: true\nd: null\ne: '1'\nf: 2026-01-01T00:00:00Z\ng: ~\nh: 0x1f\ni: .inf\nj: 1_000\n",
    "---\n---\na: [1, 2, {x: y}]\n...\n",
    "a: !!str 5\nb: !!int '7'\nc: !!binary aGk=\n",
    "<<: {a: 1}\nb: 2\n",
    "1: a\n1.0: b\ntrue: c\n",
    "list:\n- &p {name: a}\n- *p\n- - nested\n  - [deeper, {k: v}]\n",
    "key with spaces: 'quoted: value'\nfolded: >\n  two\n  lines\nliteral: |\n  kept\n",
]


@pytest.mark.parametrize("text", _SAMPLES)
def test_event_builder_matches_the_full_loader(text: str) -> None:
    import yaml

    from berth.adapters.files.snapshot import _Loader

    want = [d for d in yaml.load_all(text, Loader=_Loader) if d is not None]
    assert parse_documents(text, "s.yaml") == want


def test_samples_parse_alike_both_ways() -> None:
    import yaml

    from berth.adapters.files.snapshot import _fast_documents, _Loader

    root = Path(__file__).parent.parent
    files = sorted((root / "tests" / "data").rglob("*.yaml")) + sorted((root / "examples").glob("*.yaml"))
    for path in files:
        text = path.read_text()
        try:
            want = list(yaml.load_all(text, Loader=_Loader))
        except yaml.YAMLError:
            continue
        assert _fast_documents(text) == want, path
