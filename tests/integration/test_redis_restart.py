"""Redis going away mid-stream and coming back with its data: the scorer and the indexer either ride
it out (the client reconnects with backoff) or exit with one line, no traceback, and recover when
restarted, as Kubernetes would restart them. In the end no decision is missing (duplicates only as
documented) and the index equals an undisturbed run's.
Real broker (Tansu) and redis-servers; each run has its own topics, groups and key prefix."""

from __future__ import annotations

import asyncio
import re
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from berth.adapters.files.eventlog import read_events
from tests.integration.services import BERTH, collect, decode, isolated_env, service, stop
from tests.integration.test_equivalence import embedded
from tests.integration.test_indexer_restart import SAMPLE, WATERMARK, redis_dump, watermark_reaches
from tests.integration.test_streaming import publish
from tests.servers import Server, restart_redis, start_redis, stop_only

pytestmark = [pytest.mark.integration, pytest.mark.timeout(400)]
RIDE_OUT = 8  # BERTH_REDIS_RIDE_OUT_SECONDS here: an outage past it ends the services


class Supervised:
    """A service process restarted when it has exited, as Kubernetes does; each run logs to its own file."""

    def __init__(self, name: str, env: dict[str, str], args: list[str], log_dir: Path) -> None:
        self.name, self.env, self.args, self.log_dir = name, env, args, log_dir
        self.runs: list[Path] = []
        self.exits: list[int] = []
        self.ended: float | None = None
        self.proc = self._start()

    def _start(self) -> subprocess.Popen[bytes]:
        log = self.log_dir / f"{self.name}-{len(self.runs)}.log"
        self.runs.append(log)
        with open(log, "wb") as out:
            return subprocess.Popen([BERTH, self.name, *self.args], env=self.env, stdout=out, stderr=subprocess.STDOUT)

    def keep_up(self) -> None:
        """Start it again 3 s after it exited (Kubernetes backs off longer)."""
        if self.proc.poll() is None:
            self.ended = None
        elif self.ended is None:
            self.ended = time.monotonic()
        elif time.monotonic() - self.ended > 3:
            self.exits.append(self.proc.returncode)
            self.proc = self._start()
            self.ended = None

    def stop(self) -> None:
        stop(self.proc)


def _plain(log: str) -> str:
    """Without the terminal codes faust's spinner writes."""
    return re.sub(r"\x1b\[[?0-9;]*[a-zA-Z]|\x08", "", log)


@contextmanager
def supervised(name: str, env: dict[str, str], *args: str, log_dir: Path) -> Iterator[Supervised]:
    s = Supervised(name, env, list(args), log_dir)
    try:
        yield s
    finally:
        s.stop()


@pytest.mark.parametrize("away", [4, 18], ids=["ridden out", "exit and restart"])
def test_redis_restarted_mid_stream(broker: Server, redis_server: Server, tmp_path: Path, away: int) -> None:
    """Away for 4 s, the services' Redis clients ride it out; for 18 s, longer than their ride-out
    (RIDE_OUT), the services end with one line and are restarted until Redis is back."""
    want, _ = embedded(SAMPLE)
    total = sum(1 for _ in read_events(SAMPLE))
    pods = {d["pod"] for d in want}

    clean = isolated_env(broker, redis_server)  # the undisturbed run's index, on the session's Redis
    with service("indexer", clean, "--data-dir", str(tmp_path / "clean"), log_dir=tmp_path):
        asyncio.run(publish(clean, SAMPLE))
        watermark_reaches(clean, total)
    undisturbed = asyncio.run(redis_dump(clean, epochs=False))

    redis = start_redis(persist=True)
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
            stop_only(redis)
            for _ in range(away * 5):
                time.sleep(0.2)
                indexer.keep_up()
                scorer.keep_up()
            redis = restart_redis(redis)
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
            index = asyncio.run(redis_dump(env, epochs=False))
        runs = {s.name: (s.exits, [_plain(p.read_text()) for p in s.runs]) for s in (indexer, scorer)}
    finally:
        redis.stop()

    if away > RIDE_OUT:
        assert runs["scorer"][0] and runs["indexer"][0], runs  # each ended at least once
    for name, (exits, logs) in runs.items():
        for log in logs:
            assert "Traceback" not in log, (name, log[-3000:])
        for code, log in zip(exits, logs, strict=False):  # a run that ended by itself: one line, exit 1
            assert code == 1, (name, code, log[-3000:])
            assert log.strip().splitlines()[-1].startswith(f"berth {name}: cannot go on: Redis: "), (name, log[-3000:])
    held_to_undisturbed(got, want, away)
    scorers = ("decided:", "resv:", "held:", "pvowner:", "checkpoint:")  # the services' own keys share the prefix
    assert {k: v for k, v in index.items() if not k.startswith(scorers)} == undisturbed


def held_to_undisturbed(
    got: list[dict[str, object]], want: list[dict[str, object]], away: int
) -> tuple[list[dict[str, object]], bool]:
    """The decisions emitted (the first of each id), and whether a restarted scorer decided at its
    start. A scorer restarted while the indexer had gone on past its commit (or with its checkpoint
    lost) starts from the indexer's state: it decides the pods pending then once, at its start
    (position 0), against the state then, as a restarted kube-scheduler does (docs/services.md,
    "Where it is not an uninterrupted run"); from there on its decisions may differ. Before that
    they are the undisturbed run's, and every pod is decided, none twice with different contents."""
    first: dict[str, dict[str, object]] = {}
    for d in got:
        assert first.setdefault(str(d["decisionId"]), d) == d
    decided = list(first.values())
    cut = next((i for i, d in enumerate(decided) if d["position"] == 0), None)
    if cut is None:
        assert decided == want  # no decision missing
        return decided, False
    assert away > RIDE_OUT  # only a restarted scorer decides at its start
    assert decided[:cut] == want[:cut]
    assert {d["pod"] for d in decided} == {d["pod"] for d in want}
    return decided, True
