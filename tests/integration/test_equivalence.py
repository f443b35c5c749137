"""The key acceptance test: the services on a real broker and Redis decide exactly as the embedded
replay does, for the same log."""

from __future__ import annotations

import asyncio
from pathlib import Path

import msgspec
import pytest

from berth.adapters.files.eventlog import read_events
from berth.core.config.kubeschedulerconfig import parse_config
from berth_cli.pipeline import Lane, Pipeline
from tests.integration.services import collect, decode, isolated_env, run_berth, service
from tests.servers import Server

SAMPLE = str(Path(__file__).parents[2] / "examples" / "small.jsonl.gz")
pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]


def embedded(log: str) -> tuple[list[dict[str, object]], list[dict[str, object]]]:
    lane = Lane("default", parse_config(None))
    pipeline = Pipeline([lane])
    asyncio.run(pipeline.run(read_events(log)))
    records = [msgspec.to_builtins(r) for r in pipeline.records(lane)]
    decisions = [r for r in records if r["kind"] == "Decision"]
    statuses = [r for r in records if r["kind"] == "BufferStatus"]
    return decisions, statuses


def test_services_decide_as_the_embedded_replay_does(broker: Server, redis_server: Server, tmp_path: Path) -> None:
    want_decisions, want_statuses = embedded(SAMPLE)
    assert len(want_decisions) > 100 and want_statuses
    env = isolated_env(broker, redis_server)
    with (
        service("indexer", env, "--data-dir", str(tmp_path / "faust"), log_dir=tmp_path),
        service("scorer", env, log_dir=tmp_path),
        service("buffer-controller", env, log_dir=tmp_path),
    ):
        published = run_berth(env, "replay", SAMPLE, "--bootstrap-servers", env["BERTH_KAFKA_BOOTSTRAP_SERVERS"])
        assert published.returncode == 0, published.stderr
        decisions = decode(asyncio.run(collect(env, env["BERTH_TOPIC_DECISIONS"], len(want_decisions), 180)))
        statuses = decode(asyncio.run(collect(env, env["BERTH_TOPIC_BUFFER_STATUS"], len(want_statuses), 60)))
    logs = {p.name: p.read_text()[-2000:] for p in tmp_path.glob("*.log")}
    assert len(decisions) == len(want_decisions), logs
    assert decisions == want_decisions
    assert statuses == want_statuses
