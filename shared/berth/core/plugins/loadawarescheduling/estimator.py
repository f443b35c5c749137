"""Koordinator priority classes and the default estimator for pods and nodes."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from berth.core.api.core.model import Node, Pod
from berth.core.api.koordinator.model import (
    ANN_RAW_ALLOCATABLE,
    ANN_SCALING_FACTORS,
    ANN_SECONDS_AFTER_INITIALIZED,
    ANN_SECONDS_AFTER_SCHEDULED,
    LABEL_PRIORITY_CLASS,
    LABEL_QOS_CLASS,
)
from berth.core.api.meta.quantity import QuantityError, ceil_milli, ceil_units, parse_nanos
from berth.core.plugins.loadawarescheduling.args import LoadAwareSchedulingArgs
from berth.core.plugins.loadawarescheduling.vectors import Resources, Vec, round_half_away

PROD, MID, BATCH, FREE = "koord-prod", "koord-mid", "koord-batch", "koord-free"
_CLASSES = (PROD, MID, BATCH, FREE)
_RANGES = ((9000, 9999, PROD), (7000, 7999, MID), (5000, 5999, BATCH), (3000, 3999, FREE))
_QOS = {"SYSTEM": PROD, "LSE": PROD, "LSR": PROD, "LS": PROD, "BE": BATCH}
_REAL = {
    BATCH: {"cpu": "kubernetes.io/batch-cpu", "memory": "kubernetes.io/batch-memory"},
    MID: {"cpu": "kubernetes.io/mid-cpu", "memory": "kubernetes.io/mid-memory"},
}
_DEFAULT_CPU = 250  # millicores, for pods that ask for nothing
_DEFAULT_MEMORY = 200 * 1024 * 1024
_DEFAULTS = {
    "cpu": _DEFAULT_CPU,
    "kubernetes.io/batch-cpu": _DEFAULT_CPU,
    "memory": _DEFAULT_MEMORY,
    "kubernetes.io/batch-memory": _DEFAULT_MEMORY,
}
_INT = re.compile(r"^[+-]?[0-9]+$")


def _asked(pod: Pod) -> Mapping[str, int]:
    """The requests Koordinator reads: the spec's (PodRequestsAndLimits), which differ from kube's
    only while an in-place resize is under way."""
    return pod.requests if pod.spec_requests is None else pod.spec_requests


def priority_class(pod: Pod) -> str:
    """GetPodPriorityClassWithDefault: label, then spec.priority range, then QoS."""
    label = pod.labels.get(LABEL_PRIORITY_CLASS)
    cls = ""
    if label is not None:
        cls = label if label in _CLASSES else ""
    elif pod.priority is not None:
        cls = next((c for lo, hi, c in _RANGES if lo <= pod.priority <= hi), "")
    if cls:
        return cls
    qos = _QOS.get(pod.labels.get(LABEL_QOS_CLASS, ""))
    if qos is not None:
        return qos
    # kube QoS: BestEffort (no cpu/memory requests or limits) is batch; the rest is prod.
    requests = _asked(pod)
    asks = any(requests.get(r, 0) or pod.limits.get(r, 0) for r in ("cpu", "memory"))
    return PROD if asks else BATCH


def _int64(text: str) -> int | None:
    if not _INT.match(text):
        return None
    v = int(text)
    return v if -(2**63) <= v < 2**63 else None


def _annotation_factors(pod: Pod) -> dict[str, int] | None:
    text = pod.annotations.get(ANN_SCALING_FACTORS)
    if text is None:
        return None
    try:
        raw: Any = json.loads(text)
    except ValueError:
        return None
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        return None
    out = {}
    for k, v in raw.items():
        if isinstance(v, bool) or not isinstance(v, int) or _int64(str(v)) is None:
            return None
        out[k] = v
    return out


class Estimator:
    """Upstream's defaultEstimator, over the plugin's resource vector."""

    def __init__(self, args: LoadAwareSchedulingArgs, resources: Resources) -> None:
        self.args = args
        self.res = resources

    def factors(self, pod: Pod) -> Mapping[str, int]:
        if self.args.allow_customize_estimation:
            custom = _annotation_factors(pod)
            if custom is not None:
                return {**self.args.estimated_scaling_factors, **custom}
        return self.args.estimated_scaling_factors

    def estimate_map(self, pod: Pod) -> dict[str, int]:
        """Estimated usage per factor key: max(request, limit) x factor, capped at the limit."""
        cls = priority_class(pod)
        translate = _REAL.get(cls)
        requests = _asked(pod)
        out = {}
        for name, factor in self.factors(pod).items():
            if cls == FREE:
                real = ""
            elif translate is not None:
                real = translate.get(name, "")
            else:
                real = name
            request = requests.get(real, 0) if real else 0
            limit = pod.limits.get(real, 0) if real else 0
            quantity = limit if limit > request else request
            if quantity == 0:
                out[name] = _DEFAULTS.get(real, 0)
                continue
            est = round_half_away(float(quantity) * float(factor) / 100)
            if limit > 0 and est > limit:
                est = limit
            out[name] = est
        return out

    def estimate(self, pod: Pod) -> Vec:
        return self.res.vec(self.estimate_map(pod))

    def inputs(self, pod: Pod) -> tuple[Any, ...]:
        """What estimate() and priority_class() read of the pod, by value: pods with equal inputs
        get equal estimates and classes."""
        labels = pod.labels
        return (
            labels.get(LABEL_PRIORITY_CLASS),
            labels.get(LABEL_QOS_CLASS),
            pod.priority,
            tuple(_asked(pod).items()),
            tuple(pod.limits.items()),
            pod.annotations.get(ANN_SCALING_FACTORS) if self.args.allow_customize_estimation else None,
        )

    def seconds(self, pod: Pod) -> tuple[int, int]:
        """(after scheduled, after initialized) forced-estimation windows; -1 = none."""
        return (
            self._seconds(pod, ANN_SECONDS_AFTER_SCHEDULED, self.args.estimated_seconds_after_pod_scheduled),
            self._seconds(pod, ANN_SECONDS_AFTER_INITIALIZED, self.args.estimated_seconds_after_initialized),
        )

    def _seconds(self, pod: Pod, annotation: str, configured: int | None) -> int:
        if self.args.allow_customize_estimation:
            v = _int64(pod.annotations.get(annotation, "x"))
            if v is not None and v >= 0:
                return v
        return configured if configured is not None else -1


def node_allocatable(node: Node) -> dict[str, int]:
    """status.allocatable, overridden key by key by the raw-allocatable annotation when valid."""
    text = node.annotations.get(ANN_RAW_ALLOCATABLE)
    if not text:
        return node.allocatable
    try:
        raw: Any = json.loads(text)
        if not isinstance(raw, dict) or not raw:
            return node.allocatable
        override = {}
        for k, v in raw.items():
            nanos = parse_nanos(v)
            override[k] = ceil_milli(nanos) if k == "cpu" else ceil_units(nanos)
    except (ValueError, QuantityError):
        return node.allocatable
    return {**node.allocatable, **override}
