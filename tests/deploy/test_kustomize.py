"""The kustomize renderer the deployment tests use: it agrees with kubectl/kustomize wherever one is
installed, and its own behaviour is pinned down here for machines without either."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.deploy.helpers import kustomizations, rel
from tests.deploy.kustomize import (
    KustomizeError,
    build,
    kustomize_command,
    render_with_binary,
    split_image,
    strategic_merge,
)


def _key(r: dict[str, Any]) -> tuple[str, str, str, str]:
    return (r["apiVersion"], r["kind"], r["metadata"].get("namespace", ""), r["metadata"]["name"])


def test_there_is_something_to_render() -> None:
    names = {rel(p) for p in kustomizations()}
    assert {"deploy/base", "deploy/crds"} <= names
    assert any(n.startswith("deploy/overlays/") for n in names)


@pytest.mark.parametrize("path", kustomizations(), ids=rel)
def test_minimal_renderer_agrees_with_kustomize(path: Path) -> None:
    command = kustomize_command()
    if command is None:
        pytest.skip("neither kustomize nor kubectl is installed")
    want = {_key(r): r for r in render_with_binary(path, command)}
    got = {_key(r): r for r in build(path)}
    assert sorted(got) == sorted(want)
    for key, resource in want.items():
        assert got[key] == resource, key


def _write(tmp: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (tmp / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp / name).write_text(text)
    return tmp


DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: app}
spec:
  selector: {matchLabels: {a: b}}
  template:
    metadata: {labels: {a: b}}
    spec:
      containers:
        - name: app
          image: registry.example.com:5000/app:1.0
          envFrom: [{configMapRef: {name: settings}}]
"""


def test_generator_hash_namespace_and_images(tmp_path: Path) -> None:
    # The expected output is what kubectl kustomize (kustomize v5.5) prints for these files.
    _write(
        tmp_path,
        {
            "kustomization.yaml": """
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: demo
configMapGenerator:
  - name: settings
    literals: ["A=1", "B=<two & three>"]
resources: [dep.yaml]
images:
  - {name: "registry.example.com:5000/app", newTag: "2.0"}
""",
            "dep.yaml": DEPLOYMENT,
        },
    )
    cm, dep = sorted(build(tmp_path), key=lambda r: r["kind"])
    assert cm == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "settings-4725tf467t", "namespace": "demo"},
        "data": {"A": "1", "B": "<two & three>"},
    }
    c = dep["spec"]["template"]["spec"]["containers"][0]
    assert dep["metadata"]["namespace"] == "demo"
    assert c["image"] == "registry.example.com:5000/app:2.0"
    assert c["envFrom"] == [{"configMapRef": {"name": "settings-4725tf467t"}}]


def test_overlay_merges_generated_config_and_patches_by_name(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "base/kustomization.yaml": """
kind: Kustomization
resources: [dep.yaml]
configMapGenerator:
  - {name: settings, literals: ["A=1", "B=2"]}
""",
            "base/dep.yaml": DEPLOYMENT,
            "comp/kustomization.yaml": """
apiVersion: kustomize.config.k8s.io/v1alpha1
kind: Component
patches:
  - path: patch.yaml
""",
            "comp/patch.yaml": """
apiVersion: apps/v1
kind: Deployment
metadata: {name: app}
spec:
  template:
    spec:
      automountServiceAccountToken: true
      containers:
        - name: app
          args: [run, --fast]
        - name: sidecar
          image: other:1
""",
            "overlay/kustomization.yaml": """
kind: Kustomization
resources: [../base]
components: [../comp]
configMapGenerator:
  - {name: settings, behavior: merge, literals: ["B=3"]}
""",
        },
    )
    resources = build(tmp_path / "overlay")
    cm = next(r for r in resources if r["kind"] == "ConfigMap")
    assert cm["data"] == {"A": "1", "B": "3"}
    assert cm["metadata"]["name"].startswith("settings-")
    pod = next(r for r in resources if r["kind"] == "Deployment")["spec"]["template"]["spec"]
    assert pod["automountServiceAccountToken"] is True
    assert [c["name"] for c in pod["containers"]] == ["app", "sidecar"]
    assert pod["containers"][0]["args"] == ["run", "--fast"]
    assert pod["containers"][0]["image"] == "registry.example.com:5000/app:1.0"
    assert pod["containers"][0]["envFrom"][0]["configMapRef"]["name"] == cm["metadata"]["name"]


def test_strategic_merge() -> None:
    base = {"a": {"b": 1, "c": 2}, "env": [{"name": "X", "value": "1"}], "args": ["a", "b"], "gone": 1}
    patch = {
        "a": {"c": 3},
        "env": [{"name": "Y", "value": "2"}, {"name": "X", "value": "9"}],
        "args": ["c"],
        "gone": None,
    }
    assert strategic_merge(base, patch) == {
        "a": {"b": 1, "c": 3},
        "env": [{"name": "X", "value": "9"}, {"name": "Y", "value": "2"}],
        "args": ["c"],
    }
    assert base["a"] == {"b": 1, "c": 2}  # the input is left alone
    with pytest.raises(KustomizeError, match="directives"):
        strategic_merge(base, {"$patch": "replace"})


@pytest.mark.parametrize(
    ("image", "parts"),
    [
        ("berth", ("berth", "", "")),
        ("berth:0.1.0", ("berth", "0.1.0", "")),
        ("registry:5000/team/berth:1", ("registry:5000/team/berth", "1", "")),
        ("registry:5000/berth@sha256:ab", ("registry:5000/berth", "", "sha256:ab")),
    ],
)
def test_split_image(image: str, parts: tuple[str, str, str]) -> None:
    assert split_image(image) == parts


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("kind: Kustomization\nnamePrefix: x-\n", "does not know"),
        ("kind: Kustomization\nresources: [missing.yaml]\n", "not found"),
        ("kind: Component\n", "where a Kustomization is expected"),
        ("kind: Kustomization\nconfigMapGenerator: [{name: a, options: {immutable: true}}]\n", "does not know"),
    ],
)
def test_minimal_renderer_refuses_what_it_does_not_know(tmp_path: Path, text: str, problem: str) -> None:
    _write(tmp_path, {"kustomization.yaml": text})
    with pytest.raises(KustomizeError, match=problem):
        build(tmp_path)
