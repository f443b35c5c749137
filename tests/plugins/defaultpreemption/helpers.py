"""Upstream's preemption-test shapes (default_preemption_test.go): st.MakePod / st.MakeNode / st.MakePDB
as raw objects, and a profile with DefaultPreemption over chosen filters."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import numpy as np

from berth.core.api.core.model import Pod
from berth.core.api.kinds import convert
from berth.core.cache.state import ClusterState
from berth.core.config.kubeschedulerconfig import parse_config
from berth.core.framework.cycle import Cycle
from berth.core.framework.status import Code, Failure, NodeToStatus
from berth.core.plugins.defaultpreemption import DefaultPreemption
from berth.core.scheduler.schedule_one import Scheduler
from tests.builders import NOW

NEG, LOW, MID, HIGH, VERY_HIGH = -100, 0, 100, 1000, 10000
SMALL = {"cpu": "100m", "memory": "100"}
MEDIUM = {"cpu": "200m", "memory": "200"}
LARGE = {"cpu": "300m", "memory": "300"}
VERY_LARGE = {"cpu": "500m", "memory": "500"}
ONE_POD = {"pods": "1"}


def epoch(n: int) -> str:
    """epochTimeN: n nanoseconds after the epoch (RFC 3339 keeps the order at this resolution)."""
    return datetime.fromtimestamp(n / 1e6, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def knode(name: str, capacity: dict[str, str] | None = None, labels: dict[str, str] | None = None) -> dict[str, Any]:
    """st.MakeNode().Name(name).Capacity(res): pods 32 unless given; a name "a/z1/r1" is the
    hostname, zone and region labels as TestDryRunPreemption reads node names."""
    parts = name.split("/")
    res = {"pods": "32", **(capacity or {})}
    lab = dict(zip(("hostname", "zone", "region"), parts, strict=False)) | (labels or {})
    meta = {"name": parts[0], "labels": lab}
    return {"kind": "Node", "apiVersion": "v1", "metadata": meta, "status": {"allocatable": res, "capacity": res}}


def kpod(
    name: str,
    node: str = "",
    priority: int | None = None,
    req: dict[str, str] | None = None,
    start: int | None = None,
    labels: dict[str, str] | None = None,
    ns: str = "default",
    **spec: Any,
) -> dict[str, Any]:
    body: dict[str, Any] = {"containers": [{"name": "c", "image": "app", "resources": {"requests": dict(req or {})}}]}
    if node:
        body["nodeName"] = node
    if priority is not None:
        body["priority"] = priority
    status: dict[str, Any] = {"phase": "Running" if node else "Pending", **spec.pop("status", {})}
    if start is not None:
        status["startTime"] = epoch(start)
    meta = {"name": name, "namespace": ns, "uid": name, "labels": labels or {}, **spec.pop("metadata", {})}
    body.update(spec)
    return {"kind": "Pod", "apiVersion": "v1", "metadata": meta, "spec": body, "status": status}


def pdb(
    labels: dict[str, str],
    allowed: int = 0,
    disrupted: tuple[str, ...] = (),
    name: str = "pdb",
    min_available: int | str | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"selector": {"matchLabels": labels}}
    if min_available is not None:
        spec["minAvailable"] = min_available
    status: dict[str, Any] = {"disruptionsAllowed": allowed}
    if disrupted:
        status["disruptedPods"] = dict.fromkeys(disrupted, "2026-11-01T12:00:00Z")
    meta = {"name": name, "namespace": "default"}
    return {"kind": "PodDisruptionBudget", "apiVersion": "policy/v1", "metadata": meta, "spec": spec, "status": status}


def priority_class(name: str, value: int, default: bool = False, policy: str | None = None) -> dict[str, Any]:
    raw: dict[str, Any] = {
        "kind": "PriorityClass",
        "apiVersion": "scheduling.k8s.io/v1",
        "metadata": {"name": name},
        "value": value,
    }
    if default:
        raw["globalDefault"] = True
    if policy is not None:
        raw["preemptionPolicy"] = policy
    return raw


class Harness:
    """A state with a profile of the given filters and DefaultPreemption (its args as a
    pluginConfig), the objects applied after the profile is built."""

    def __init__(
        self, filters: tuple[str, ...] | None = ("NodeResourcesFit",), args: dict[str, Any] | None = None
    ) -> None:
        """filters None: berth's default profile, whole."""
        profile: dict[str, Any] = {"pluginConfig": [{"name": "DefaultPreemption", "args": args or {}}]}
        if filters is not None:
            profile["plugins"] = {
                "multiPoint": {
                    "disabled": [{"name": "*"}],
                    "enabled": [{"name": n} for n in (*filters, "DefaultPreemption")],
                },
                "score": {"disabled": [{"name": "*"}]},
            }
        doc: dict[str, Any] = {"profiles": [profile]}
        self.state = ClusterState()
        self.scheduler = Scheduler(parse_config(doc).build(self.state))
        plugin = next(p for p in self.scheduler.profile.post_filters if isinstance(p, DefaultPreemption))
        self.plugin = plugin

    def add(self, *raws: dict[str, Any]) -> Harness:
        for raw in raws:
            self.state.apply(convert(raw))
        return self

    def cycle(self, raw: dict[str, Any]) -> Cycle:
        pod: Pod = convert(raw)
        return Cycle(pod, self.state, NOW)

    def statuses(self, codes: dict[str, Code]) -> NodeToStatus:
        """kube's NewNodeToStatus(map, UnschedulableAndUnresolvable default): nodes not named are
        absent (and so not potential)."""
        nodes = self.state.nodes
        failures = []
        for name, code in codes.items():
            mask = np.zeros(len(nodes.valid), dtype=bool)
            mask[nodes.slot[name]] = True
            failures.append(Failure(mask, f"status of {name}", code))
        return NodeToStatus(nodes, [("Filter", failures)])

    def every_node(self, code: Code = Code.UNSCHEDULABLE) -> NodeToStatus:
        return self.statuses({n: code for n in self.state.nodes.slot})
