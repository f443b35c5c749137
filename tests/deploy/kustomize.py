"""Render kustomizations: with `kubectl kustomize` (or `kustomize build`) when installed, else with a
minimal renderer of the features deploy/ uses.

The minimal renderer knows: resources (files and directories), components, namespace,
configMapGenerator (envs, files, literals; behavior create/merge/replace; kustomize's content-hash
name suffix and the references to it), strategic-merge patches (by the patch's own kind and name,
or by `target`), and images. Anything else in a kustomization is an error rather than silently
ignored, and test_kustomize.py checks that it renders exactly what kubectl renders wherever kubectl
is installed, so a kustomization that drifts beyond what it knows fails loudly.
"""

from __future__ import annotations

import copy
import hashlib
import json
import shutil
import subprocess
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import yaml

Resource = dict[str, Any]

KUSTOMIZATION_FILES = ("kustomization.yaml", "kustomization.yml", "Kustomization")

# Kinds kustomize never puts in a namespace.
CLUSTER_SCOPED = frozenset(
    {
        "Namespace",
        "Node",
        "PersistentVolume",
        "StorageClass",
        "CSIDriver",
        "CSINode",
        "ClusterRole",
        "ClusterRoleBinding",
        "CustomResourceDefinition",
        "PriorityClass",
        "IngressClass",
        "RuntimeClass",
        "APIService",
        "MutatingWebhookConfiguration",
        "ValidatingWebhookConfiguration",
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding",
        "VolumeAttachment",
    }
)

# Strategic-merge keys of the lists deploy/ patches (from the Kubernetes API's patchMergeKey).
MERGE_KEYS = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "volumes": "name",
    "volumeMounts": "mountPath",
    "volumeDevices": "devicePath",
    "env": "name",
    "ports": "containerPort",
    "imagePullSecrets": "name",
    "hostAliases": "ip",
    "topologySpreadConstraints": "topologyKey",
    "conditions": "type",
}

KUSTOMIZATION_FIELDS = {
    "apiVersion",
    "kind",
    "resources",
    "components",
    "namespace",
    "configMapGenerator",
    "patches",
    "images",
}
GENERATOR_FIELDS = {"name", "envs", "files", "literals", "behavior", "options"}
GENERATOR_OPTIONS = {"labels", "annotations"}
PATCH_FIELDS = {"path", "patch", "target"}
TARGET_FIELDS = {"group", "version", "kind", "name", "namespace", "labelSelector"}
IMAGE_FIELDS = {"name", "newName", "newTag", "digest"}

HASH_ANNOTATION = "berth.test/needs-hash"  # internal marker, removed before output


class KustomizeError(Exception):
    pass


# ---- entry points -------------------------------------------------------------------------------


def kustomize_command() -> list[str] | None:
    """The installed renderer, if any: `kustomize build` or `kubectl kustomize`."""
    if shutil.which("kustomize"):
        return ["kustomize", "build"]
    if shutil.which("kubectl"):
        return ["kubectl", "kustomize"]
    return None


def render_with_binary(path: Path, command: list[str]) -> list[Resource]:
    done = subprocess.run([*command, str(path)], capture_output=True, text=True, timeout=120, check=False)
    if done.returncode != 0:
        raise KustomizeError(f"{' '.join(command)} {path}: {done.stderr.strip()}")
    return [d for d in yaml.safe_load_all(done.stdout) if d]


def render(path: Path) -> list[Resource]:
    """The rendered resources of the kustomization in `path`."""
    command = kustomize_command()
    if command is not None:
        return render_with_binary(path, command)
    return build(path)


def build(path: Path) -> list[Resource]:
    """The minimal renderer."""
    resources = _accumulate(path.resolve(), expect="Kustomization")
    _apply_hashes(resources)
    return resources


# ---- loading --------------------------------------------------------------------------------------


def _kustomization(directory: Path) -> dict[str, Any]:
    for name in KUSTOMIZATION_FILES:
        f = directory / name
        if f.is_file():
            doc = yaml.safe_load(f.read_text())
            if not isinstance(doc, dict):
                raise KustomizeError(f"{f}: not a mapping")
            unknown = set(doc) - KUSTOMIZATION_FIELDS
            if unknown:
                raise KustomizeError(f"{f}: the minimal renderer does not know {sorted(unknown)}")
            return doc
    raise KustomizeError(f"{directory}: no kustomization file")


def _load_file(f: Path) -> list[Resource]:
    docs = [d for d in yaml.safe_load_all(f.read_text()) if d is not None]
    for d in docs:
        if not isinstance(d, dict) or not d.get("kind") or not d.get("apiVersion"):
            raise KustomizeError(f"{f}: every document needs apiVersion and kind")
    return docs


def _accumulate(directory: Path, expect: str, into: list[Resource] | None = None) -> list[Resource]:
    k = _kustomization(directory)
    kind = k.get("kind", "Kustomization")
    if kind != expect:
        raise KustomizeError(f"{directory}: a {kind} where a {expect} is expected")
    out = [] if into is None else into
    for entry in k.get("resources") or []:
        target = (directory / entry).resolve()
        if target.is_dir():
            _add(out, _accumulate(target, expect="Kustomization"), directory)
        elif target.is_file():
            _add(out, _load_file(target), directory)
        else:
            raise KustomizeError(f"{directory}: resource {entry!r} not found")
    for entry in k.get("components") or []:
        target = (directory / entry).resolve()
        if not target.is_dir():
            raise KustomizeError(f"{directory}: component {entry!r} not found")
        _accumulate(target, expect="Component", into=out)
    for gen in k.get("configMapGenerator") or []:
        _generate(out, gen, directory)
    for patch in k.get("patches") or []:
        _patch(out, patch, directory)
    if "namespace" in k:
        _set_namespace(out, k["namespace"])
    for image in k.get("images") or []:
        _set_image(out, image, directory)
    return out


def _identity(r: Resource) -> tuple[str, str, str, str]:
    meta = r.get("metadata") or {}
    return (_group(r["apiVersion"]), r["kind"], meta.get("namespace") or "", meta.get("name") or "")


def _group(api_version: str) -> str:
    return api_version.rpartition("/")[0]


def _add(out: list[Resource], new: Iterable[Resource], where: Path) -> None:
    seen = {_identity(r) for r in out}
    for r in new:
        if _identity(r) in seen:
            raise KustomizeError(f"{where}: {r['kind']} {_identity(r)[3]} is defined twice")
        seen.add(_identity(r))
        out.append(r)


# ---- configMapGenerator ---------------------------------------------------------------------------


def _env_file(f: Path) -> dict[str, str]:
    data: dict[str, str] = {}
    for n, line in enumerate(f.read_text().splitlines(), 1):
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        key, eq, value = text.partition("=")
        if not eq or not key:
            raise KustomizeError(f"{f}:{n}: want KEY=VALUE")
        data[key] = value
    return data


def _generate(out: list[Resource], gen: dict[str, Any], directory: Path) -> None:
    unknown = set(gen) - GENERATOR_FIELDS
    if unknown:
        raise KustomizeError(f"{directory}: configMapGenerator: the minimal renderer does not know {sorted(unknown)}")
    data: dict[str, str] = {}
    for env in gen.get("envs") or []:
        data.update(_env_file(directory / env))
    for spec in gen.get("files") or []:
        key, eq, rel = str(spec).partition("=")
        rel = rel if eq else key
        key = key if eq else Path(rel).name
        data[key] = (directory / rel).read_text()
    for lit in gen.get("literals") or []:
        key, _, value = str(lit).partition("=")
        data[key] = value
    options = gen.get("options") or {}
    unknown = set(options) - GENERATOR_OPTIONS
    if unknown:
        raise KustomizeError(
            f"{directory}: configMapGenerator options: the minimal renderer does not know {sorted(unknown)}"
        )
    name = gen["name"]
    behavior = gen.get("behavior", "create")
    existing = [r for r in out if r["kind"] == "ConfigMap" and r["metadata"]["name"] == name]
    if behavior == "create":
        if existing:
            raise KustomizeError(f"{directory}: ConfigMap {name} already exists; use behavior merge or replace")
        cm: Resource = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}
        if options.get("labels"):
            cm["metadata"]["labels"] = dict(options["labels"])
        cm["metadata"]["annotations"] = {**(options.get("annotations") or {}), HASH_ANNOTATION: "true"}
        out.append(cm)
        return
    if len(existing) != 1:
        raise KustomizeError(f"{directory}: ConfigMap {name} to {behavior} not found")
    target = existing[0]
    target["data"] = {**(target.get("data") or {}), **data} if behavior == "merge" else data
    for field in ("labels", "annotations"):
        if options.get(field):
            target["metadata"][field] = {**(target["metadata"].get(field) or {}), **options[field]}


def _hash_suffix(cm: Resource) -> str:
    """kustomize's name suffix for a ConfigMap: sha256 over {kind, name, data} as Go's encoding/json
    writes it (sorted keys, HTML-escaped), the first ten hex digits with five of them swapped for
    letters so that the result never looks like a number. The name is always "" there: kustomize
    looks it up with the single path element "metadata/name", which finds nothing."""
    m: dict[str, Any] = {"kind": "ConfigMap", "name": "", "data": cm.get("data") or {}}
    text = json.dumps(m, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    for a, b in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        text = text.replace(a, b)
    digest = hashlib.sha256(text.encode()).hexdigest()[:10]
    return digest.translate(str.maketrans("013ae", "ghkmt"))


def _apply_hashes(resources: list[Resource]) -> None:
    renamed: dict[tuple[str, str], str] = {}
    for r in resources:
        annotations = r["metadata"].get("annotations") or {}
        if annotations.pop(HASH_ANNOTATION, None) is None:
            continue
        if not annotations:
            del r["metadata"]["annotations"]
        old = r["metadata"]["name"]
        new = f"{old}-{_hash_suffix(r)}"
        r["metadata"]["name"] = new
        renamed[(r["metadata"].get("namespace") or "", old)] = new
    for r in resources:
        if renamed:
            namespace = r["metadata"].get("namespace") or ""

            def rename(name: str, namespace: str = namespace) -> str:
                return renamed.get((namespace, name), name)

            _walk_configmap_refs(r, rename)


def _walk_configmap_refs(node: Any, rename: Callable[[str], str]) -> None:
    """Rename ConfigMap references in pod specs: volumes, envFrom, env valueFrom, projected sources."""
    if isinstance(node, dict):
        for key in ("configMap", "configMapRef", "configMapKeyRef"):
            ref = node.get(key)
            if isinstance(ref, dict) and isinstance(ref.get("name"), str):
                ref["name"] = rename(ref["name"])
        for value in node.values():
            _walk_configmap_refs(value, rename)
    elif isinstance(node, list):
        for value in node:
            _walk_configmap_refs(value, rename)


# ---- patches --------------------------------------------------------------------------------------


def _patch(out: list[Resource], spec: dict[str, Any], directory: Path) -> None:
    unknown = set(spec) - PATCH_FIELDS
    if unknown:
        raise KustomizeError(f"{directory}: patches: the minimal renderer does not know {sorted(unknown)}")
    if "path" in spec:
        docs = _load_file(directory / spec["path"])
    else:
        docs = [d for d in yaml.safe_load_all(spec.get("patch") or "") if d]
    for doc in docs:
        if not isinstance(doc, dict):
            raise KustomizeError(f"{directory}: only strategic-merge patches are supported")
        target = spec.get("target")
        if target is not None:
            unknown = set(target) - TARGET_FIELDS
            if unknown:
                raise KustomizeError(f"{directory}: patch target: the minimal renderer does not know {sorted(unknown)}")
            matches = [r for r in out if _matches(r, target)]
        else:
            meta = doc.get("metadata") or {}
            matches = [
                r
                for r in out
                if r["kind"] == doc.get("kind")
                and r["metadata"].get("name") == meta.get("name")
                and (not meta.get("namespace") or r["metadata"].get("namespace") == meta.get("namespace"))
            ]
        if not matches:
            raise KustomizeError(
                f"{directory}: patch {doc.get('kind')}/{(doc.get('metadata') or {}).get('name')}: no target"
            )
        body = {k: v for k, v in doc.items() if k not in ("apiVersion", "kind")}
        if target is not None:
            body.get("metadata", {}).pop("name", None)
        for r in matches:
            merged = strategic_merge(r, body)
            r.clear()
            r.update(merged)


def _matches(r: Resource, target: dict[str, Any]) -> bool:
    meta = r["metadata"]
    if "kind" in target and r["kind"] != target["kind"]:
        return False
    if "name" in target and meta.get("name") != target["name"]:
        return False
    if "namespace" in target and meta.get("namespace") != target["namespace"]:
        return False
    if "group" in target and _group(r["apiVersion"]) != target["group"]:
        return False
    if "version" in target and r["apiVersion"].rpartition("/")[2] != target["version"]:
        return False
    if "labelSelector" in target:
        labels = meta.get("labels") or {}
        for term in str(target["labelSelector"]).split(","):
            key, eq, value = term.partition("=")
            if not eq or labels.get(key.strip()) != value.strip():
                return False
    return True


def strategic_merge(base: Any, patch: Any, key: str = "") -> Any:
    """A strategic merge patch for the cases deploy/ needs: maps merge, null deletes, lists of
    objects with a known merge key merge by that key, other lists are replaced."""
    if isinstance(patch, dict):
        if any(str(k).startswith("$") for k in patch):
            raise KustomizeError(f"{key}: patch directives ({sorted(patch)}) are not supported")
        out = copy.deepcopy(base) if isinstance(base, dict) else {}
        for k, v in patch.items():
            if v is None:
                out.pop(k, None)
            else:
                out[k] = strategic_merge(out.get(k), v, k)
        return out
    if isinstance(patch, list) and key in MERGE_KEYS and isinstance(base, list):
        merge_key = MERGE_KEYS[key]
        out_list = copy.deepcopy(base)
        for item in patch:
            if not isinstance(item, dict) or merge_key not in item:
                raise KustomizeError(f"{key}: every item of a merged list needs {merge_key!r}")
            for i, old in enumerate(out_list):
                if isinstance(old, dict) and old.get(merge_key) == item[merge_key]:
                    out_list[i] = strategic_merge(old, item, key)
                    break
            else:
                out_list.append(copy.deepcopy(item))
        return out_list
    return copy.deepcopy(patch)


# ---- namespace and images ---------------------------------------------------------------------------


def _set_namespace(out: list[Resource], namespace: str) -> None:
    for r in out:
        if r["kind"] not in CLUSTER_SCOPED:
            r["metadata"]["namespace"] = namespace
        if r["kind"] in ("RoleBinding", "ClusterRoleBinding"):
            for s in r.get("subjects") or []:
                if s.get("kind") == "ServiceAccount" and s.get("namespace") in (None, "", "default"):
                    s["namespace"] = namespace


def split_image(image: str) -> tuple[str, str, str]:
    """(name, tag, digest) of an image reference; a registry port is not a tag."""
    name, _, digest = image.partition("@")
    slash = name.rfind("/")
    colon = name.rfind(":")
    tag = ""
    if colon > slash:
        name, tag = name[:colon], name[colon + 1 :]
    return name, tag, digest


def _set_image(out: list[Resource], spec: dict[str, Any], directory: Path) -> None:
    unknown = set(spec) - IMAGE_FIELDS
    if unknown:
        raise KustomizeError(f"{directory}: images: the minimal renderer does not know {sorted(unknown)}")

    def fix(node: Any, key: str = "") -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                fix(v, k)
        elif isinstance(node, list):
            for item in node:
                if key in ("containers", "initContainers") and isinstance(item, dict) and "image" in item:
                    name, tag, digest = split_image(str(item["image"]))
                    if name == spec["name"]:
                        name = spec.get("newName", name)
                        if "digest" in spec:
                            item["image"] = f"{name}@{spec['digest']}"
                        else:
                            tag = str(spec.get("newTag", tag))
                            item["image"] = name + (f":{tag}" if tag else "") + (f"@{digest}" if digest else "")
                fix(item, key)

    for r in out:
        fix(r)
