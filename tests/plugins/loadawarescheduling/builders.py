"""Raw-dict builders for NodeMetrics, nodes and pods, and a tiny harness around the plugin."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np

from berth.core.api.core.model import Pod
from berth.core.api.kinds import convert
from berth.core.cache.state import ClusterState
from berth.core.framework.cycle import Cycle
from berth.core.plugins.loadawarescheduling import LoadAwareScheduling
from berth.core.plugins.loadawarescheduling.args import parse_args

T0 = datetime(2026, 11, 1, 12, 0, 0, tzinfo=UTC)
GI = 2**30


def rfc(t: datetime) -> str:
    return t.astimezone(UTC).isoformat().replace("+00:00", "Z")


def usage(cpu: str | None = None, memory: str | None = None, **extra: str) -> dict[str, Any]:
    res = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    return {"resources": {**res, **{k.replace("_", "/"): v for k, v in extra.items()}}}


def pod_usage(
    name: str, cpu: str | None = "1", memory: str | None = "1Gi", ns: str = "default", priority: str = "koord-prod"
) -> dict[str, Any]:
    return {"namespace": ns, "name": name, "priority": priority, "podUsage": usage(cpu, memory)}


def node_metric(
    name: str,
    cpu: str | None = "0",
    memory: str | None = "0",
    update: datetime | None = T0,
    interval: int | None = None,
    pods: Iterable[dict[str, Any]] = (),
    agg: dict[str, dict[str, tuple[str, str]]] | None = None,
    system: tuple[str, str] | None = None,
    with_node_metric: bool = True,
    rv: str = "",
) -> dict[str, Any]:
    """agg: {"5m0s": {"p95": ("16", "50Gi")}}."""
    status: dict[str, Any] = {"podsMetric": list(pods)}
    if update is not None:
        status["updateTime"] = rfc(update)
    if with_node_metric:
        nm: dict[str, Any] = {"nodeUsage": usage(cpu, memory)}
        if system is not None:
            nm["systemUsage"] = usage(*system)
        if agg is not None:
            nm["aggregatedNodeUsages"] = [
                {"duration": d, "usage": {k: usage(*v) for k, v in kinds.items()}} for d, kinds in agg.items()
            ]
        status["nodeMetric"] = nm
    spec: dict[str, Any] = {}
    if interval is not None:
        spec["metricCollectPolicy"] = {"reportIntervalSeconds": interval}
    meta: dict[str, Any] = {"name": name}
    if rv:
        meta["resourceVersion"] = rv
    return {
        "apiVersion": "slo.koordinator.sh/v1alpha1",
        "kind": "NodeMetric",
        "metadata": meta,
        "spec": spec,
        "status": status,
    }


def node(
    name: str, cpu: str = "32", memory: str = "64Gi", annotations: dict[str, str] | None = None, **extra: str
) -> dict[str, Any]:
    alloc = {"cpu": cpu, "memory": memory, "pods": "110", **{k.replace("_", "/"): v for k, v in extra.items()}}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "annotations": annotations or {}},
        "status": {"allocatable": alloc, "capacity": alloc},
    }


def pod(
    name: str,
    node_name: str = "",
    cpu: str | None = "1",
    memory: str | None = "1Gi",
    limits: dict[str, str] | None = None,
    ns: str = "default",
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    priority: int | None = None,
    scheduled: datetime | None = None,
    initialized: datetime | None = None,
    daemonset: bool = False,
    phase: str | None = None,
    requests: dict[str, str] | None = None,
    rv: str = "",
) -> dict[str, Any]:
    req = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    req.update(requests or {})
    res: dict[str, Any] = {"requests": req}
    if limits:
        res["limits"] = limits
    spec: dict[str, Any] = {"containers": [{"name": "main", "image": "app", "resources": res}]}
    if node_name:
        spec["nodeName"] = node_name
    if priority is not None:
        spec["priority"] = priority
    meta: dict[str, Any] = {"name": name, "namespace": ns, "uid": f"uid-{ns}-{name}"}
    meta["labels"] = labels or {}
    meta["annotations"] = annotations or {}
    if rv:
        meta["resourceVersion"] = rv
    if daemonset:
        meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "ds", "uid": "ds"}]
    conditions = []
    if scheduled is not None:
        conditions.append({"type": "PodScheduled", "status": "True", "lastTransitionTime": rfc(scheduled)})
    if initialized is not None:
        conditions.append({"type": "Initialized", "status": "True", "lastTransitionTime": rfc(initialized)})
    status = {"phase": phase or ("Running" if node_name else "Pending"), "conditions": conditions}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}


def obj(raw: dict[str, Any]) -> Any:
    return convert(raw)


class World:
    """A ClusterState with the plugin's store registered, and helpers to run one pod."""

    def __init__(self, args: dict[str, Any] | None = None, *raws: dict[str, Any]) -> None:
        self.plugin = LoadAwareScheduling(parse_args(args or {}))
        self.state = ClusterState(extensions=[self.plugin.store])
        for raw in raws:
            self.apply(raw)

    def apply(self, raw: dict[str, Any], deleted: bool = False) -> None:
        self.state.apply(obj(raw), deleted)

    def cycle(self, raw_pod: dict[str, Any] | Pod, now: datetime = T0) -> Cycle:
        p = raw_pod if isinstance(raw_pod, Pod) else convert(raw_pod)
        return Cycle(pod=p, state=self.state, now=now)

    def filter(self, raw_pod: dict[str, Any] | Pod, now: datetime = T0) -> dict[str, str | None]:
        """Node name -> reason (None when it passes)."""
        c = self.cycle(raw_pod, now)
        self.plugin.pre_filter(c)
        out: dict[str, str | None] = {n: None for n in self.state.nodes.slot}
        for f in self.plugin.filter(c):
            for s in np.flatnonzero(f.mask):
                name = self.state.nodes.names[s]
                assert name is not None and out[name] is None, "failure masks overlap"
                out[name] = f.reason
        return out

    def score(self, raw_pod: dict[str, Any] | Pod, now: datetime = T0) -> dict[str, int]:
        c = self.cycle(raw_pod, now)
        self.plugin.pre_filter(c)
        scores = self.plugin.score(c, self.state.nodes.valid)
        return {n: int(scores[s]) for n, s in self.state.nodes.slot.items()}


def ago(seconds: float) -> datetime:
    return T0 - timedelta(seconds=seconds)


def least_used_rows(used: Any, cap: Any, weights: Any, dominant_weight: int) -> Any:
    """least_used on node-by-resource rows, as upstream writes them."""
    import numpy as np

    from berth.core.plugins.loadawarescheduling import least_used

    return least_used(used.T, np.where(cap == 0, 1, cap).T, (cap == 0).T, weights, dominant_weight)
