"""A rich progress bar over a running pipeline: events/s, pods decided, pods unschedulable."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

from rich.console import Console
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from berth.core.api.watch import Event
from berth_cli.pipeline import Pipeline


async def watch(pipeline: Pipeline, events: Iterable[Event], console: Console, enabled: bool = True) -> None:
    runner = asyncio.create_task(pipeline.run(events))
    if not enabled or not console.is_terminal:
        await runner
        return
    columns = (SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True) as bar:
        task = bar.add_task("replaying")
        loop = asyncio.get_running_loop()
        start = loop.time()
        while not runner.done():
            lane = pipeline.lanes[0]
            decided = len(lane.scorer.stats.decisions)
            waiting = len(lane.scorer.queue)
            rate = lane.progress.events / max(loop.time() - start, 1e-6)
            bar.update(
                task,
                description=f"{lane.progress.events} events ({rate:,.0f}/s)  {decided} decisions  {waiting} unschedulable",
            )
            await asyncio.wait([runner], timeout=0.2)
        await runner
