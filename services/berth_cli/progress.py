"""A rich progress bar over a running pipeline: events/s, pods decided, pods unschedulable."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable

from rich.console import Console
from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from berth.core.api.watch import Event
from berth_cli.pipeline import Pipeline


async def watch(
    pipeline: Pipeline,
    events: Iterable[Event],
    console: Console,
    enabled: bool = True,
    total: Callable[[], int | None] | None = None,
    name: str | None = None,
) -> None:
    """total: the number of lines to replay, asked only when the bar is shown (a terminal);
    name: the run's, with --compare."""
    runner = asyncio.create_task(pipeline.run(events))
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
            lane = pipeline.lanes[0]
            decided = len(lane.scorer.stats.decisions)
            waiting = len(lane.scorer.queue)
            rate = lane.progress.events / max(loop.time() - start, 1e-6)
            of = f"/{lines:,}" if lines else ""
            who = f"{name}: " if name else ""
            bar.update(
                task,
                completed=lane.progress.events,
                description=f"{who}{lane.progress.events:,}{of} events ({rate:,.0f}/s)  {decided} decisions  "
                f"{waiting} unschedulable",
            )
            await asyncio.wait([runner], timeout=0.2)
        await runner
