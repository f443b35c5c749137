"""The scorer engine's kinds: what its state reads, and that leaving the others undecoded (as the
scorer service's worker loop does) decides the same."""

from __future__ import annotations

import gzip
from pathlib import Path

import msgspec
import pytest

from berth.core.api.kinds import KINDS
from berth.core.api.watch import parse_event
from berth.core.config.kubeschedulerconfig import parse_config
from berth.core.errors import InputError
from berth.core.pipeline.scorer import ScorerEngine
from berth_cli.common import load_config

ROOT = Path(__file__).resolve().parents[2]
LOGS = [
    ROOT / "examples" / "cold-burst.jsonl",
    ROOT / "examples" / "small.jsonl.gz",
    *sorted((ROOT / "tests" / "data" / "logs").glob("*.jsonl")),
]
CONFIGS = [None, *sorted(str(p) for p in (ROOT / "examples").glob("*.yaml"))]


def _lines(path: Path) -> list[bytes]:
    data = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    return [line for line in data.splitlines() if line.strip()]


def _records(config: str | None, lines: list[bytes], undecoded: bool) -> list[bytes]:
    engine = ScorerEngine(load_config(config, warn=False), preemption_grace=30.0)
    out = []
    for n, line in enumerate(lines, start=1):
        try:
            ev = parse_event(line, n, engine.reads() if undecoded else None)
        except InputError:
            continue  # dead-lettered by the worker loop
        out += [msgspec.json.encode(r) for r in engine.handle(ev)]
    return out


def test_the_engine_reads_the_core_kinds_and_its_extensions_not_the_buffer_kinds() -> None:
    reads = ScorerEngine(parse_config(None)).reads()
    assert {("", "Pod"), ("", "Node"), ("", "PersistentVolume"), ("slo.koordinator.sh", "NodeMetric")} <= reads
    assert {("apps", "ReplicaSet"), ("apps", "StatefulSet"), ("scheduling.k8s.io", "PriorityClass")} <= reads
    assert set(KINDS) - reads == {
        ("apps", "Deployment"),
        ("batch", "Job"),
        ("", "ResourceQuota"),
        ("", "PodTemplate"),
        ("autoscaling.x-k8s.io", "CapacityBuffer"),
    }


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: Path(c).stem if c else "default")
@pytest.mark.parametrize("log", LOGS, ids=lambda p: p.name)
def test_kinds_the_engine_does_not_read_left_undecoded_decide_the_same(log: Path, config: str | None) -> None:
    lines = _lines(log)
    assert _records(config, lines, True) == _records(config, lines, False)
