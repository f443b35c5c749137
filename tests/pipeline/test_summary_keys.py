"""`--summary FILE.json`'s keys are a contract for scripts: each one is documented in docs/replay.md."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from berth.core.pipeline.stats import RunStats
from berth_cli.summary import summary_json

DOCS = Path(__file__).resolve().parents[2] / "docs" / "replay.md"


def keys(obj: Any) -> set[str]:
    if isinstance(obj, dict):
        return {k for k, v in obj.items() for k in (k, *keys(v)) if not k[:1].isdigit()}
    if isinstance(obj, list):
        return {k for v in obj for k in keys(v)}
    return set()


def test_every_summary_key_is_documented() -> None:
    lines = DOCS.read_text().splitlines()
    spans = [span for line in lines for span in re.findall(r"`([^`]+)`", line)]  # `podsDecided`, `{"p50", "max"}`
    documented = {w for span in spans for w in re.findall(r"[A-Za-z][A-Za-z0-9]*", span)}
    got = summary_json([RunStats()])
    assert set(got) == {"runs"}
    assert keys(got["runs"]) - documented == set()
