"""Every code block in README.md and docs/ fenced as ```sh runnable runs, and succeeds, so the docs'
commands cannot drift from the code. Each block runs in bash -e in a fresh directory holding the
repo's examples/, tests/ and .venv/ (as links), with the virtualenv's bin first on PATH."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.deploy.helpers import ROOT

FENCE = re.compile(r"^```sh runnable\n(.*?)^```", re.M | re.S)
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def blocks() -> list[tuple[str, str]]:
    out = []
    for doc in DOCS:
        for i, m in enumerate(FENCE.finditer(doc.read_text())):
            out.append((f"{doc.relative_to(ROOT)}#{i + 1}", m.group(1)))
    return out


BLOCKS = blocks()


def test_there_are_runnable_blocks() -> None:
    assert len(BLOCKS) >= 3


@pytest.mark.timeout(900)
@pytest.mark.parametrize(("where", "script"), BLOCKS, ids=[w for w, _ in BLOCKS])
def test_runnable_block_runs(tmp_path: Path, where: str, script: str) -> None:
    for name in ("examples", "tests", ".venv"):
        (tmp_path / name).symlink_to(ROOT / name)
    bin_dir = str(Path(sys.executable).parent)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}", "COLUMNS": "160"}
    done = subprocess.run(
        ["bash", "-e", "-o", "pipefail", "-c", script],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert done.returncode == 0, f"{where}:\n{script}\nstdout:\n{done.stdout[-2000:]}\nstderr:\n{done.stderr[-2000:]}"
