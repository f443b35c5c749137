"""`berth`: one entry point, one subcommand per job."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from berth import __version__
from berth.core.errors import ConfigError, InputError
from berth_cli import buffers, decisions, evaluate, explain, generate, replay, services, watcher

COMMANDS = (evaluate, explain, buffers, replay, generate, watcher, decisions)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="berth",
        description="Kubernetes cluster events in, placement decisions out.",
    )
    p.add_argument("--version", action="version", version=f"berth {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for cmd in COMMANDS:
        cmd.add_parser(sub)
    services.add_parsers(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        code: int = args.run(args)
        return code
    except ConfigError as e:
        for problem in e.problems:
            print(f"berth {args.command}: config: {problem}", file=sys.stderr)
        return 2
    except InputError as e:
        print(f"berth {args.command}: error: {e}", file=sys.stderr)
        if e.hint:
            print(f"berth {args.command}: hint: {e.hint}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    except Exception as e:  # after BrokenPipeError, which is an Exception too
        from berth.adapters.runtime.connect import unreachable

        line = unreachable(e)
        if line is None:
            raise
        print(f"berth {args.command}: cannot go on: {line}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
