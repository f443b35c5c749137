"""Progress over running pipelines: a rich bar (events/s, pods decided, pods unschedulable) for one
replay, and with --compare one bar per config, fed by counters each replay writes to shared memory
(the forked ones too)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from multiprocessing.context import BaseContext
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from berth.core.api.watch import Event
from berth_cli.pipeline import Pipeline

TICK = 0.2  # seconds between updates


class Board:
    """Per run: events read, decisions, pods unschedulable, and whether it is done. Made before the
    replays fork, so every process writes to the same memory (one writer per run, no lock needed)."""

    FIELDS = 4

    def __init__(self, runs: int, ctx: BaseContext) -> None:
        self.runs = runs
        self._values: Any = ctx.Array("q", runs * self.FIELDS, lock=False)

    def put(self, run: int, events: int, decisions: int, waiting: int, done: bool = False) -> None:
        i = run * self.FIELDS
        self._values[i : i + self.FIELDS] = [events, decisions, waiting, int(done)]

    def get(self, run: int) -> tuple[int, int, int, bool]:
        i = run * self.FIELDS
        events, decisions, waiting, done = self._values[i : i + self.FIELDS]
        return events, decisions, waiting, bool(done)


def _counts(pipeline: Pipeline) -> tuple[int, int, int]:
    lane = pipeline.lanes[0]
    return lane.progress.events, len(lane.scorer.stats.decisions), len(lane.scorer.queue)


def _describe(name: str | None, events: int, lines: int | None, rate: float, decided: int, waiting: int) -> str:
    of = f"/{lines:,}" if lines else ""
    who = f"{name}: " if name else ""
    return f"{who}{events:,}{of} events ({rate:,.0f}/s)  {decided} decisions  {waiting} unschedulable"


async def watch(
    pipeline: Pipeline,
    events: Iterable[Event],
    console: Console,
    enabled: bool = True,
    total: Callable[[], int | None] | None = None,
    name: str | None = None,
    board: Board | None = None,
    run: int = 0,
) -> None:
    """total: the number of lines to replay, asked only when the bar is shown (a terminal);
    name: the run's, with --compare; board: where a --compare run writes its counters instead
    (shown by `board_bars`)."""
    runner = asyncio.create_task(pipeline.run(events))
    if board is not None:
        while not runner.done():
            board.put(run, *_counts(pipeline))
            await asyncio.wait([runner], timeout=TICK)
        board.put(run, *_counts(pipeline), done=runner.exception() is None)
        await runner
        return
    if not enabled or not console.is_terminal:
        await runner
        return
    lines = total() if total is not None else None
    columns = (SpinnerColumn(), BarColumn(), TextColumn("{task.description}"), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True) as bar:
        task = bar.add_task("replaying", total=lines)
        loop = asyncio.get_running_loop()
        start = loop.time()
        while not runner.done():
            events_, decided, waiting = _counts(pipeline)
            rate = events_ / max(loop.time() - start, 1e-6)
            bar.update(task, completed=events_, description=_describe(name, events_, lines, rate, decided, waiting))
            await asyncio.wait([runner], timeout=TICK)
        await runner


@contextmanager
def board_bars(board: Board, names: list[str], total: int, console: Console, enabled: bool = True) -> Iterator[None]:
    """One bar per run while the block runs, read from the board by a thread of this process (start
    it after the replays forked). Shown on a terminal only; elsewhere nothing, and no escapes."""
    if not enabled or not console.is_terminal:
        yield
        return
    columns = (SpinnerColumn(), BarColumn(), TextColumn("{task.description}"), TimeElapsedColumn())
    stop = threading.Event()
    with Progress(*columns, console=console) as bar:
        tasks = [bar.add_task(name, total=total or None) for name in names]

        def update() -> None:
            started: dict[int, float] = {}  # run -> when its first events were seen
            finished: set[int] = set()  # runs whose bar says their last word
            while True:
                final = stop.wait(TICK)  # the block is over: one last update, with every run done
                now = time.monotonic()
                for run, task in enumerate(tasks):
                    if run in finished:
                        continue
                    events, decided, waiting, done = board.get(run)
                    if not events:
                        bar.update(task, description=f"{names[run]}: waiting")
                        continue
                    rate = events / max(now - started.setdefault(run, now), TICK)
                    text = _describe(names[run], events, total, rate, decided, waiting)
                    bar.update(task, completed=total if done else events, description=text)
                    if done:
                        bar.stop_task(task)
                        finished.add(run)
                if final:
                    return

        thread = threading.Thread(target=update, name="berth-progress", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()
