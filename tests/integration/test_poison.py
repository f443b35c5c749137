"""Issue 20's poison kinds before and after a valid log, for the buffer-controller and the indexer
(the scorer's test is in test_streaming): each is bad input (an InputError), dead-lettered with its
reason and its real position, the service goes on, and the valid log's result is unchanged. A
handler's bug is not dead-lettered: tests/pipeline/test_worker.py.
Real broker (Tansu) and redis-server; each run has its own topics, groups and key prefix."""

from __future__ import annotations

import asyncio
from contextlib import ExitStack
from pathlib import Path

import pytest

from berth.adapters.files.eventlog import read_events
from tests.integration.services import isolated_env, service
from tests.integration.test_equivalence import embedded
from tests.integration.test_indexer_restart import SAMPLE, WATERMARK, redis_dump, watermark_reaches
from tests.integration.test_streaming import CRASHERS, publish, wait_for
from tests.servers import Server

BUFFERS = str(Path(__file__).parents[1] / "data" / "logs" / "buffers.jsonl")
REASONS = ["nested too deeply", "at most 100", "not UTF-8", "outside years"]  # one per poison kind
pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]


def check_dead_letters(dead: list[dict[str, object]], service: str, first: int) -> None:
    """One record per poison kind, in order, each at its message's position (first, first + 1, ...)."""
    assert len(dead) == len(CRASHERS), dead
    for i, (d, part) in enumerate(zip(dead, REASONS, strict=True)):
        assert part in str(d["reason"]), d["reason"]
        assert d["position"] == first + i
        assert str(d["source"]).startswith(f"{service}:"), d["source"]
        assert str(d["source"]).endswith(f"/0@{first + i - 1}"), d["source"]


@pytest.mark.parametrize("where", ["before", "after"])
def test_poison_around_the_log_of_the_buffer_controller(
    broker: Server, redis_server: Server, tmp_path: Path, where: str
) -> None:
    _, want = embedded(BUFFERS)
    total = sum(1 for _ in read_events(BUFFERS))
    env = isolated_env(broker, redis_server)
    before, after = (CRASHERS, []) if where == "before" else ([], CRASHERS)
    with service("buffer-controller", env, log_dir=tmp_path):
        asyncio.run(publish(env, BUFFERS, poison=before, poison_after=after))
        dead = wait_for(env, env["BERTH_TOPIC_DEAD_LETTER"], len(CRASHERS), timeout=60)
        got = wait_for(env, env["BERTH_TOPIC_BUFFER_STATUS"], len(want), timeout=60)
    assert want and got == want
    check_dead_letters(dead, "buffer-controller", 1 if where == "before" else total + 1)


def test_poison_around_the_log_of_the_indexer(broker: Server, redis_server: Server, tmp_path: Path) -> None:
    """Three indexers at once: the log alone, the poison before it, and after it."""
    total = sum(1 for _ in read_events(SAMPLE))
    envs = {where: isolated_env(broker, redis_server) for where in ("clean", "before", "after")}
    with ExitStack() as running:
        for where, env in envs.items():
            running.enter_context(service("indexer", env, "--data-dir", str(tmp_path / where), log_dir=tmp_path))
        for where, env in envs.items():
            before, after = (CRASHERS, []) if where == "before" else ([], CRASHERS) if where == "after" else ([], [])
            asyncio.run(publish(env, SAMPLE, poison=before, poison_after=after))
        for where, env in envs.items():
            watermark_reaches(env, total + (0 if where == "clean" else len(CRASHERS)))
        dead = {
            where: wait_for(env, env["BERTH_TOPIC_DEAD_LETTER"], len(CRASHERS), timeout=5 if where == "clean" else 60)
            for where, env in envs.items()
        }
    index = {where: asyncio.run(redis_dump(env, epochs=False)) for where, env in envs.items()}
    for got in index.values():
        del got[WATERMARK]  # the poison moves the offsets
    assert len(index["clean"]) > 100
    assert index["before"] == index["clean"] and index["after"] == index["clean"]
    assert dead["clean"] == []
    check_dead_letters(dead["before"], "indexer", 1)
    check_dead_letters(dead["after"], "indexer", total + 1)
