"""Builders for pod affinity terms, spread constraints, namespaces and the profile with both plugins."""

from __future__ import annotations

from typing import Any

from berth.core.config.kubeschedulerconfig import SchedulerConfig, parse_config

BOTH = ("PodTopologySpread", "InterPodAffinity")


def namespace(name: str, **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": name, "labels": {"kubernetes.io/metadata.name": name, **labels}},
    }


def service(name: str, selector: dict[str, str] | None, ns: str = "default") -> dict[str, Any]:
    """A Service; selector None leaves spec.selector out (selects no pod)."""
    spec = {} if selector is None else {"selector": selector}
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": ns}, "spec": spec}


def controller(kind: str, name: str, selector: dict[str, Any], ns: str = "default") -> dict[str, Any]:
    """A ReplicaSet or StatefulSet (apps/v1, a LabelSelector) or a ReplicationController (v1, a map)."""
    api = "v1" if kind == "ReplicationController" else "apps/v1"
    meta = {"name": name, "namespace": ns, "uid": f"uid-{name}"}
    return {"apiVersion": api, "kind": kind, "metadata": meta, "spec": {"selector": selector}}


def term(labels: dict[str, str] | None, key: str, **extra: Any) -> dict[str, Any]:
    """A podAffinityTerm; labels None leaves labelSelector out (matches no pod)."""
    out: dict[str, Any] = {"topologyKey": key, **extra}
    if labels is not None:
        out["labelSelector"] = {"matchLabels": labels}
    return out


def affinity(
    required: list[dict[str, Any]] | None = None,
    anti: list[dict[str, Any]] | None = None,
    preferred: list[tuple[int, dict[str, Any]]] | None = None,
    preferred_anti: list[tuple[int, dict[str, Any]]] | None = None,
) -> dict[str, Any]:
    """spec.affinity with podAffinity / podAntiAffinity lists."""
    out: dict[str, Any] = {}
    for field, req, pref in (("podAffinity", required, preferred), ("podAntiAffinity", anti, preferred_anti)):
        if req is None and pref is None:
            continue
        body: dict[str, Any] = {}
        if req:
            body["requiredDuringSchedulingIgnoredDuringExecution"] = req
        if pref:
            body["preferredDuringSchedulingIgnoredDuringExecution"] = [
                {"weight": w, "podAffinityTerm": t} for w, t in pref
            ]
        out[field] = body
    return out


def anti_affinity(labels: dict[str, str], key: str) -> dict[str, Any]:
    return affinity(anti=[term(labels, key)])


def spread(
    key: str, labels: dict[str, str] | None, skew: int = 1, when: str = "DoNotSchedule", **extra: Any
) -> dict[str, Any]:
    out: dict[str, Any] = {"maxSkew": skew, "topologyKey": key, "whenUnsatisfiable": when, **extra}
    if labels is not None:
        out["labelSelector"] = {"matchLabels": labels}
    return out


def profile(
    plugins: tuple[str, ...] = BOTH, args: dict[str, dict[str, Any]] | None = None, only: bool = False
) -> SchedulerConfig:
    """berth's default profile (kube's) with its args for these plugins; only: these plugins (at
    every point they implement, weight 2 as in kube's default profile) and nothing else; plugins=():
    the default profile without InterPodAffinity and PodTopologySpread."""
    multi: dict[str, Any] = {"enabled": [{"name": p, "weight": 2} for p in plugins]}
    if only:
        multi["disabled"] = [{"name": "*"}]
    elif not plugins:
        multi["disabled"] = [{"name": p} for p in BOTH]
    doc = {
        "profiles": [
            {
                "plugins": {"multiPoint": multi},
                "pluginConfig": [{"name": n, "args": a} for n, a in (args or {}).items()],
            }
        ]
    }
    return parse_config(doc)
