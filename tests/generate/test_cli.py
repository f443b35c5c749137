"""`berth generate` as users run it: presets, overrides, outputs, errors."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from berth.core.generate import PRESETS, NodeShape, generate
from berth_cli import generate as generate_cmd
from berth_cli import main as cli
from berth_cli.common import rfc3339
from tests.generate.conftest import encoded


@pytest.fixture(autouse=True)
def wired(monkeypatch: pytest.MonkeyPatch) -> None:
    if generate_cmd not in cli.COMMANDS:
        monkeypatch.setattr(cli, "COMMANDS", (*cli.COMMANDS, generate_cmd))


def test_file_stdout_and_gzip_hold_the_same_log(tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    plain, packed = tmp_path / "out" / "log.jsonl", tmp_path / "log.jsonl.gz"
    assert cli.main(["generate", "--preset", "cold-burst", "-o", str(plain)]) == 0
    assert cli.main(["generate", "--preset", "cold-burst", "-o", str(packed), "-q"]) == 0
    assert cli.main(["generate", "--preset", "cold-burst", "-q"]) == 0
    out, err = capsysbinary.readouterr()
    want = encoded(list(generate(PRESETS["cold-burst"], 1)))
    assert plain.read_bytes() == want
    assert gzip.decompress(packed.read_bytes()) == want
    assert out == want
    assert err.decode().startswith(f"berth generate: 118 events to {plain} in ")
    assert err.decode().rstrip().endswith("8 nodes, 0 PVs, 50 pending pods, 0 deletions")


def test_flags_override_the_preset(capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    argv = ["generate", "--preset", "cold-burst", "--nodes", "4", "--burst", "10", "--seed", "3"]
    argv += ["--node-shapes", "16x64", "--duration", "2m", "--no-daemonset", "--start", "2026-12-01T00:00:00+01:00"]
    assert cli.main(argv) == 0
    out, _ = capsysbinary.readouterr()
    params = PRESETS["cold-burst"].replace(
        nodes=4,
        burst=10,
        duration=120,
        daemonset=False,
        node_shapes=(NodeShape(16, 64),),
        start=rfc3339("2026-12-01T00:00:00+01:00"),
    )
    assert out == encoded(list(generate(params, 3)))
    assert b'"ts":"2026-11-30T23:00:00Z"' in out.splitlines()[0]


def test_invalid_combinations_list_every_problem(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    target = tmp_path / "never.jsonl"
    assert cli.main(["generate", "--nodes", "4", "--cold-nodes", "9", "--duration", "0", "-o", str(target)]) == 2
    _, err = capsys.readouterr()
    assert err.splitlines() == [
        "berth generate: config: duration: must be at least 1, got 0",
    ]
    assert cli.main(["generate", "--nodes", "4", "--cold-nodes", "9", "-o", str(target)]) == 2
    _, err = capsys.readouterr()
    assert err.splitlines() == [
        "berth generate: config: nodes: 4 nodes cannot fill 3 zones x 2 racks",
        "berth generate: config: cold_nodes: 9 is more than the 4 nodes",
    ]
    assert not target.exists()


@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [
        ("--pv-sizes", "10G", "argument --pv-sizes: want a size like 10Gi or 1Ti, got '10G'"),
        ("--churn", "2", "argument --churn: want a number in [0, 1], got '2'"),
        ("--nodes", "-3", "argument --nodes: want a whole number, got '-3'"),
        ("--preset", "huge", "argument --preset: invalid choice: 'huge'"),
    ],
)
def test_bad_flags(capsys: pytest.CaptureFixture[str], flag: str, value: str, message: str) -> None:
    with pytest.raises(SystemExit) as e:
        cli.main(["generate", flag, value])
    assert e.value.code == 2
    assert message in capsys.readouterr().err


def test_help_lists_the_presets(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli.main(["generate", "--help"])
    out = capsys.readouterr().out
    for name in PRESETS:
        assert f"  {name} " in out
