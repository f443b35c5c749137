"""Print the runtime part of requirements.lock: what the container image installs.

requirements.in lists the runtime packages first, then a `# Development and tests` section.
This keeps every pinned block of requirements.lock (with its hashes) whose package is a runtime
package or, following pip-compile's `# via` annotations, a dependency of one, and drops the rest
(pytest, ruff, mypy, kubernetes-validate, the test broker, pip-tools and their dependencies), as
well as the lock's index options, which point at directories of the machine that wrote it.

    python runtime_requirements.py requirements.in requirements.lock > requirements-runtime.txt
    python runtime_requirements.py requirements.in requirements.lock --only setuptools

Standard library only: it runs in the image's build stage before anything is installed.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field

DEV_SECTION = re.compile(r"^#\s*Development", re.IGNORECASE)
REQUIREMENT = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)")


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass
class Block:
    name: str
    lines: list[str] = field(default_factory=list)
    via: set[str] = field(default_factory=set)  # who needs it: package names, or "-r <file>"


def runtime_roots(requirements_in: str) -> set[str]:
    """Package names above the development section of requirements.in."""
    roots: set[str] = set()
    for line in requirements_in.splitlines():
        if DEV_SECTION.match(line.strip()):
            break
        text = line.split("#", 1)[0].strip()
        m = REQUIREMENT.match(text)
        if m:
            roots.add(canonical(m.group(1)))
    return roots


def parse_lock(lock: str) -> dict[str, Block]:
    blocks: dict[str, Block] = {}
    current: Block | None = None
    in_via = False
    for line in lock.splitlines():
        if line and not line[0].isspace() and not line.startswith(("#", "-")):
            m = REQUIREMENT.match(line)
            if not m:
                raise ValueError(f"requirements.lock: cannot read {line!r}")
            current = Block(canonical(m.group(1)), [line])
            blocks[current.name] = current
            in_via = False
            continue
        if current is None or not line.startswith("    "):
            current = None if not line.startswith("    ") else current
            continue
        current.lines.append(line)
        comment = line.strip()
        if comment.startswith("# via"):
            rest = comment[len("# via") :].strip()
            in_via = not rest
            if rest:
                current.via.add(rest if rest.startswith("-r") else canonical(rest))
        elif in_via and comment.startswith("#   "):
            rest = comment[1:].strip()
            current.via.add(rest if rest.startswith("-r") else canonical(rest))
        elif not comment.startswith("#"):
            in_via = False
    return blocks


def runtime_closure(roots: set[str], blocks: dict[str, Block]) -> set[str]:
    """The roots and everything a kept package needs, to a fixed point."""
    missing = roots - blocks.keys()
    if missing:
        raise ValueError(f"requirements.lock has no pin for {', '.join(sorted(missing))}")
    keep = set(roots)
    changed = True
    while changed:
        changed = False
        for name, block in blocks.items():
            if name not in keep and block.via & keep:
                keep.add(name)
                changed = True
    return keep


def render(names: set[str], blocks: dict[str, Block]) -> str:
    out = ["# Generated from requirements.lock by deploy/image/runtime_requirements.py: do not edit."]
    for name in sorted(names):
        body = [line for line in blocks[name].lines if not line.strip().startswith("#")]
        body[-1] = body[-1].rstrip(" \\")
        out.extend(body)
    return "\n".join(out) + "\n"


def main(argv: list[str]) -> int:
    if len(argv) < 2 or (len(argv) > 2 and argv[2] != "--only"):
        print(__doc__, file=sys.stderr)
        return 2
    with open(argv[0], encoding="utf-8") as f:
        roots = runtime_roots(f.read())
    with open(argv[1], encoding="utf-8") as f:
        blocks = parse_lock(f.read())
    if len(argv) > 2:
        names = {canonical(n) for n in argv[3:]}
        unknown = names - blocks.keys()
        if unknown:
            print(f"requirements.lock has no pin for {', '.join(sorted(unknown))}", file=sys.stderr)
            return 2
    else:
        names = runtime_closure(roots, blocks)
    sys.stdout.write(render(names, blocks))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
