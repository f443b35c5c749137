"""The checked-in samples are exactly what the commands in examples/README.md produce."""

from __future__ import annotations

import gzip
import re
import shlex
from pathlib import Path

import pytest

from berth_cli import generate as generate_cmd
from berth_cli import main as cli

EXAMPLES = Path(__file__).parent.parent.parent / "examples"
COMMAND = re.compile(r"^\.venv/bin/berth (generate .*)$", re.MULTILINE)


def commands() -> list[list[str]]:
    return [shlex.split(m.group(1)) for m in COMMAND.finditer((EXAMPLES / "README.md").read_text())]


def output_of(argv: list[str]) -> str:
    return argv[argv.index("-o") + 1]


def content(path: Path) -> bytes:
    data = path.read_bytes()
    return gzip.decompress(data) if path.name.endswith(".gz") else data


def test_every_sample_is_documented() -> None:
    documented = {Path(output_of(argv)).name for argv in commands()}
    on_disk = {p.name for p in EXAMPLES.iterdir() if ".jsonl" in p.name}
    assert documented == on_disk == {"small.jsonl.gz", "cold-burst.jsonl"}


@pytest.mark.parametrize("argv", commands(), ids=lambda argv: Path(output_of(argv)).name)
def test_sample_matches_its_command(
    argv: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    if generate_cmd not in cli.COMMANDS:
        monkeypatch.setattr(cli, "COMMANDS", (*cli.COMMANDS, generate_cmd))
    target = Path(output_of(argv))
    fresh = tmp_path / target.name
    argv = [str(fresh) if a == str(target) else a for a in argv]
    assert cli.main(argv) == 0
    capsys.readouterr()
    assert content(fresh) == content(EXAMPLES / target.name), (
        f"examples/{target.name} is stale: regenerate it with the command in examples/README.md"
    )
