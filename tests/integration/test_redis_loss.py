"""Redis killed mid-stream and started again EMPTY (no persistence): the indexer and the scorer notice
it (their epoch keys, the index's watermarks) and rebuild what Redis held from the topics, either
while they run (Redis back within their clients' backoff) or when restarted (Redis away longer: they
end with one line and are restarted as Kubernetes would). In the end the index equals an undisturbed
run's, the scorer's dedup marks and reservations equal an undisturbed scorer's, no decision is
missing and none comes out twice. Real broker (Tansu) and redis-servers."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

import pytest

from berth.adapters.files.eventlog import read_events
from tests.integration.services import collect, decode, isolated_env, service
from tests.integration.test_equivalence import embedded
from tests.integration.test_indexer_restart import SAMPLE, WATERMARK, redis_dump, watermark_reaches
from tests.integration.test_redis_restart import RIDE_OUT, _plain, held_to_undisturbed, supervised
from tests.integration.test_streaming import publish
from tests.servers import Server, restart_redis_empty, start_redis, stop_only

pytestmark = [pytest.mark.integration, pytest.mark.timeout(500)]
SCORER = ("decided:", "resv:", "held:", "pvowner:")


def split(dump: dict[str, object]) -> tuple[dict[str, object], dict[str, object]]:
    """(the index, the scorer's state) of a Redis dump; without the epoch keys (their tokens differ
    from run to run), the scorer's checkpoint of its own engine, and without the zero fields a reservation's release leaves in a node's total."""
    index: dict[str, object] = {}
    scorer: dict[str, object] = {}
    for key, value in dump.items():
        if key.startswith(("epoch:", "checkpoint:")):  # checkpoints: tests/integration/test_bootstrap.py
            continue
        if key.startswith(SCORER):
            if isinstance(value, dict):
                value = {k: v for k, v in value.items() if v != "0"}
                if not value:
                    continue
            scorer[key] = value
        else:
            index[key] = value
    return index, scorer


@pytest.mark.parametrize("away", [2, 18], ids=["noticed while running", "noticed at restart"])
def test_redis_restarted_empty_mid_stream(broker: Server, redis_server: Server, tmp_path: Path, away: int) -> None:
    want, _ = embedded(SAMPLE)
    total = sum(1 for _ in read_events(SAMPLE))
    pods = {d["pod"] for d in want}

    clean = isolated_env(broker, redis_server)  # the undisturbed run, on the session's Redis
    with (
        service("indexer", clean, "--data-dir", str(tmp_path / "clean"), log_dir=tmp_path),
        service("scorer", clean, log_dir=tmp_path),
    ):
        asyncio.run(publish(clean, SAMPLE))
        watermark_reaches(clean, total)
        assert len(decode(asyncio.run(collect(clean, clean["BERTH_TOPIC_DECISIONS"], len(want), 120)))) == len(want)
    undisturbed_index, undisturbed_scorer = split(asyncio.run(redis_dump(clean)))

    redis = start_redis()  # no persistence
    try:
        env = isolated_env(broker, redis, BERTH_REDIS_RIDE_OUT_SECONDS=str(RIDE_OUT))
        chunks = [range(i, min(i + 40, total)) for i in range(0, total, 40)]

        def paced() -> None:
            for c in chunks:
                asyncio.run(publish(env, SAMPLE, only=c))
                time.sleep(0.2)

        publisher = threading.Thread(target=paced)
        with (
            supervised("indexer", env, "--data-dir", str(tmp_path / "faust"), log_dir=tmp_path) as indexer,
            supervised("scorer", env, log_dir=tmp_path) as scorer,
        ):
            publisher.start()
            decode(asyncio.run(collect(env, env["BERTH_TOPIC_DECISIONS"], 20, 90, grace=0)))  # under way
            watermark_reaches(env, 40)  # both have state in Redis to lose
            at_loss = asyncio.run(redis_dump(env))
            stop_only(redis)
            for _ in range(away * 5):
                time.sleep(0.2)
                indexer.keep_up()
                scorer.keep_up()
            redis = restart_redis_empty(redis)
            publisher.join(120)
            deadline = time.monotonic() + 150
            while True:  # until every decision is out and the index has the whole log
                indexer.keep_up()
                scorer.keep_up()
                got = decode(asyncio.run(collect(env, env["BERTH_TOPIC_DECISIONS"], len(want), 5, grace=0)))
                mark = asyncio.run(redis_dump(env)).get(WATERMARK)
                # every pod decided (a restarted scorer's start-time decisions add ids: not a count of ids)
                done = {d["pod"] for d in got} >= pods and int(str(mark or 0)) >= total
                if done or time.monotonic() > deadline:
                    break
            time.sleep(3)  # the scorer's last batch: its marks go to Redis after the broker has it
            index, state = split(asyncio.run(redis_dump(env)))
            running = {s.name: s.proc.poll() is None for s in (indexer, scorer)}
        runs = {s.name: (s.exits, [_plain(p.read_text()) for p in s.runs]) for s in (indexer, scorer)}
    finally:
        redis.stop()

    assert int(str(at_loss.get(WATERMARK, 0))) < total  # Redis lost its data mid-stream
    assert running == {"indexer": True, "scorer": True}, runs  # recovered, not crash-looping
    if away < RIDE_OUT:
        assert runs["indexer"][0] == [] and runs["scorer"][0] == [], runs  # noticed while running
    for name, (exits, logs) in runs.items():
        for log in logs:
            assert "Traceback" not in log, (name, log[-3000:])
        for code, log in zip(exits, logs, strict=False):  # a run that ended by itself: one line, exit 1
            assert code == 1, (name, code, log[-3000:])
            assert log.strip().splitlines()[-1].startswith(f"berth {name}: cannot go on: Redis: "), (name, log[-3000:])
        noticed = [line for log in logs for line in log.splitlines() if "Redis lost" in line]
        assert len(noticed) == 1, (name, noticed)  # one line, once
    # a restarted scorer whose checkpoint Redis lost, after the indexer wrote the index again, decides
    # at its start (see held_to_undisturbed); then only the marks are compared with an undisturbed run's
    decided, restarted = held_to_undisturbed(got, want, away)
    assert len(got) == len(decided)  # and none twice: the marks came back from the decisions topic
    assert index == undisturbed_index
    if not restarted:
        assert state == undisturbed_scorer
    assert {k for k in state if k.startswith("decided:")} == {f"decided:{d['decisionId']}" for d in decided}
