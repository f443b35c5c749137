"""`berth decisions`: the decisions the scorer published, read off the decisions topic.

Reads from the topic's beginning without a consumer group (nothing is committed, no service's group is
touched); `--follow` then keeps printing new decisions as they are published, as `kubectl get -w` does.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any, TextIO

from berth.adapters.runtime.connect import kafka_bus
from berth.core.pipeline.records import DecisionRecord, decode_record
from berth.core.ports import Bus, Message
from berth.settings import from_env

COLUMNS = ("TIME", "POD", "STATUS", "NODE", "ATTEMPT", "MESSAGE")
WIDTHS = (20, 40, 13, 24, 7)  # MESSAGE takes the rest of the line


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "decisions",
        help="print the decisions the scorer published (the decisions topic)",
        description="Read the decisions topic from its beginning and print each decision; --follow keeps "
        "printing new ones. Kafka and the topic's name come from BERTH_* settings (docs/settings.md).",
    )
    p.add_argument("--bootstrap-servers", metavar="HOST:PORT", help="Kafka (default: BERTH_KAFKA_BOOTSTRAP_SERVERS)")
    p.add_argument("-f", "--follow", action="store_true", help="keep printing decisions as they come (Ctrl-C ends)")
    p.add_argument(
        "-o", "--output", choices=("table", "json"), default="table", help="a table, or one JSON record per line"
    )
    p.add_argument("--pod", metavar="NS/NAME", help="only this pod's decisions (a bare NAME is in --namespace)")
    ns = p.add_mutually_exclusive_group()
    ns.add_argument("-n", "--namespace", metavar="NS", help="only NS's pods (and bare --pod names are in NS)")
    ns.add_argument("-A", "--all-namespaces", action="store_true", help="every namespace's pods (the default)")
    p.set_defaults(run=run)


def wanted(args: argparse.Namespace) -> Any:
    """The filter on a record's pod (namespace/name) that the flags ask for."""
    if args.pod:
        key = args.pod if "/" in args.pod else f"{args.namespace or 'default'}/{args.pod}"
        return lambda pod: pod == key
    if args.namespace:
        return lambda pod: pod.split("/", 1)[0] == args.namespace
    return lambda pod: True


def row(r: DecisionRecord) -> str:
    cells = (r.ts or "-", r.pod, r.status, r.node or "-", str(r.attempt))
    fitted = [c if len(c) <= w else c[: w - 1] + "…" for c, w in zip(cells, WIDTHS, strict=True)]
    return "  ".join(c.ljust(w) for c, w in zip(fitted, WIDTHS, strict=True)) + "  " + r.message


def header() -> str:
    return "  ".join(c.ljust(w) for c, w in zip(COLUMNS, WIDTHS, strict=False)) + "  " + COLUMNS[-1]


async def show(messages: AsyncIterator[Message], args: argparse.Namespace, out: TextIO) -> int:
    """Print each decision record the filter keeps; returns how many."""
    keep = wanted(args)
    shown = 0
    async for m in messages:
        record = decode_record(m.value)
        if not isinstance(record, DecisionRecord) or not keep(record.pod):
            continue  # another kind of record, or a kind this version does not know
        if args.output == "json":
            out.write(m.value.decode() + "\n")
        else:
            if not shown:
                out.write(header() + "\n")
            out.write(row(record) + "\n")
        out.flush()
        shown += 1
    return shown


async def _listed(bus: Bus, topic: str) -> AsyncGenerator[Message, None]:
    for m in await bus.records(topic):
        yield m


def run(args: argparse.Namespace) -> int:
    settings = from_env(
        os.environ, **({"kafka__bootstrap_servers": args.bootstrap_servers} if args.bootstrap_servers else {})
    )
    topic = settings.topics.decisions

    async def main() -> int:
        bus = kafka_bus(settings, "decisions")
        await bus.start()
        try:
            source = bus.tail(topic) if args.follow else _listed(bus, topic)
            async with contextlib.aclosing(source):
                return await show(source, args, sys.stdout)
        finally:
            await bus.stop()

    shown = asyncio.run(main())
    if not shown:
        where = f"{topic} at {settings.kafka.bootstrap_servers}"
        print(
            f"berth decisions: no decisions{' for that filter' if args.pod or args.namespace else ''} on {where}",
            file=sys.stderr,
        )
    return 0
