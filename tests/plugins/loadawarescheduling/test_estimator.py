from __future__ import annotations

from typing import Any

import pytest

from berth.core.api.kinds import convert
from berth.core.plugins.loadawarescheduling.args import parse_args
from berth.core.plugins.loadawarescheduling.estimator import (
    BATCH,
    FREE,
    MID,
    PROD,
    Estimator,
    node_allocatable,
    priority_class,
)
from berth.core.plugins.loadawarescheduling.vectors import Resources, round_half_away

from .builders import GI, node, pod

MI = 2**20


def estimator(**raw: Any) -> Estimator:
    args = parse_args(raw)
    return Estimator(args, Resources.of(args))


@pytest.mark.parametrize(
    ("x", "want"),
    [(0.5, 1), (1.5, 2), (2.5, 3), (-2.5, -3), (0.49999999999999994, 0), (65.4, 65), (65.5, 66), (8.5, 9), (0.0, 0)],
)
def test_round_half_away(x: float, want: int) -> None:
    assert round_half_away(x) == want


@pytest.mark.parametrize(
    ("raw_pod", "args", "want"),
    [
        # upstream's worked values
        (
            pod("g", cpu="4", memory="8Gi", limits={"cpu": "4", "memory": "8Gi"}),
            {},
            {"cpu": 3400, "memory": 6012954214},
        ),
        (pod("b", cpu="4", memory="8Gi", limits={"cpu": "8"}), {}, {"cpu": 6800, "memory": 6012954214}),
        (
            pod("r", cpu="4", memory="8Gi"),
            {"estimatedScalingFactors": {"cpu": 80, "memory": 80}},
            {"cpu": 3200, "memory": 6871947674},
        ),
        # pods that ask for nothing: batch, estimated at the defaults under batch-cpu/batch-memory
        (pod("e", cpu=None, memory=None), {}, {"cpu": 250, "memory": 200 * MI}),
        # a prod pod that asks for memory only: cpu default
        (pod("m", cpu=None, memory="1Gi"), {}, {"cpu": 250, "memory": round(GI * 0.7)}),
        # rounding half away from zero: 10m x 85% = 8.5 -> 9 (Python's round gives 8)
        (pod("h", cpu="10m", memory="1Gi"), {}, {"cpu": 9, "memory": 751619277}),
        (
            pod("h2", cpu="30m", memory="1"),
            {"estimatedScalingFactors": {"cpu": 85, "memory": 50}},
            {"cpu": 26, "memory": 1},
        ),
        # batch pods are estimated from batch resources, stored under cpu/memory
        (
            pod(
                "bt",
                cpu=None,
                memory=None,
                labels={"koordinator.sh/priority-class": "koord-batch"},
                requests={"kubernetes.io/batch-cpu": "2000", "kubernetes.io/batch-memory": "4Gi"},
            ),
            {},
            {"cpu": 1700, "memory": round(4 * GI * 0.7)},
        ),
        # mid pods without mid resources, and free pods, estimate to 0
        (pod("md", labels={"koordinator.sh/priority-class": "koord-mid"}), {}, {"cpu": 0, "memory": 0}),
        (
            pod("md2", cpu=None, memory=None, priority=7500, requests={"kubernetes.io/mid-cpu": "1000"}),
            {},
            {"cpu": 850, "memory": 0},
        ),
        (pod("fr", priority=3500), {}, {"cpu": 0, "memory": 0}),
        # extra factor keys: prod pods use the resource itself
        (
            pod("gpu", requests={"nvidia.com/gpu": "2"}),
            {"estimatedScalingFactors": {"nvidia.com/gpu": 100}},
            {"cpu": 850, "memory": 751619277, "nvidia.com/gpu": 2},
        ),
    ],
)
def test_estimate(raw_pod: dict[str, Any], args: dict[str, Any], want: dict[str, int]) -> None:
    assert estimator(**args).estimate_map(convert(raw_pod)) == want


def test_annotation_factors_need_allow_customize() -> None:
    ann = {"scheduling.koordinator.sh/load-estimated-scaling-factors": '{"cpu": 110}'}
    p = convert(pod("g", cpu="4", memory="8Gi", limits={"cpu": "4", "memory": "8Gi"}, annotations=ann))
    assert estimator().estimate_map(p)["cpu"] == 3400
    # not range-checked: 110% is capped at the 4-cpu limit
    assert estimator(allowCustomizeEstimation=True).estimate_map(p) == {"cpu": 4000, "memory": 6012954214}


@pytest.mark.parametrize("text", ["{bad json", '{"cpu": 1.5}', '["cpu"]', '{"cpu": "100"}', '{"cpu": true}'])
def test_invalid_annotation_factors_are_ignored(text: str) -> None:
    p = convert(pod("a", cpu="1", annotations={"scheduling.koordinator.sh/load-estimated-scaling-factors": text}))
    assert estimator(allowCustomizeEstimation=True).estimate_map(p)["cpu"] == 850


@pytest.mark.parametrize(
    ("labels", "priority", "requests", "want"),
    [
        ({}, None, {"cpu": "1"}, PROD),  # Burstable -> LS -> prod
        ({}, None, {}, BATCH),  # BestEffort -> BE -> batch
        ({"koordinator.sh/priority-class": "koord-mid"}, 9500, {"cpu": "1"}, MID),  # label wins over priority
        ({"koordinator.sh/priority-class": "weird"}, 5500, {}, BATCH),  # invalid label: QoS, priority ignored
        ({"koordinator.sh/priority-class": "weird"}, None, {"cpu": "1"}, PROD),
        ({}, 9000, {}, PROD),
        ({}, 9999, {}, PROD),
        ({}, 7000, {}, MID),
        ({}, 5999, {}, BATCH),
        ({}, 3000, {}, FREE),
        ({}, 8000, {}, BATCH),  # out of every range: QoS (BestEffort)
        ({}, 0, {"memory": "1Gi"}, PROD),
        ({"koordinator.sh/qosClass": "BE"}, None, {"cpu": "1"}, BATCH),
        ({"koordinator.sh/qosClass": "LSE"}, None, {}, PROD),
        ({"koordinator.sh/qosClass": "nope"}, None, {}, BATCH),
    ],
)
def test_priority_class(labels: dict[str, str], priority: int | None, requests: dict[str, str], want: str) -> None:
    p = convert(pod("p", cpu=None, memory=None, labels=labels, priority=priority, requests=requests))
    assert priority_class(p) == want


@pytest.mark.parametrize(
    ("allow", "annotations", "args", "want"),
    [
        (False, {}, {}, (-1, -1)),
        (False, {}, {"estimatedSecondsAfterPodScheduled": 120, "estimatedSecondsAfterInitialized": 30}, (120, 30)),
        (False, {"scheduled": "10"}, {"estimatedSecondsAfterPodScheduled": 120}, (120, -1)),
        (True, {"scheduled": "10", "initialized": "20"}, {"estimatedSecondsAfterPodScheduled": 120}, (10, 20)),
        (True, {"scheduled": "0"}, {"estimatedSecondsAfterPodScheduled": 120}, (0, -1)),  # 0 disables
        (True, {"scheduled": "-4"}, {"estimatedSecondsAfterPodScheduled": 120}, (120, -1)),  # < 0: use args
        (True, {"scheduled": "1e3"}, {"estimatedSecondsAfterPodScheduled": 120}, (120, -1)),  # invalid: use args
        (True, {"scheduled": " 5"}, {}, (-1, -1)),
    ],
)
def test_seconds(allow: bool, annotations: dict[str, str], args: dict[str, Any], want: tuple[int, int]) -> None:
    names = {
        "scheduled": "scheduling.koordinator.sh/load-estimated-seconds-after-pod-scheduled",
        "initialized": "scheduling.koordinator.sh/load-estimated-seconds-after-initialized",
    }
    p = convert(pod("p", annotations={names[k]: v for k, v in annotations.items()}))
    assert estimator(allowCustomizeEstimation=allow, **args).seconds(p) == want


@pytest.mark.parametrize(
    ("annotation", "want_cpu", "want_memory"),
    [
        (None, 32000, 64 * GI),
        ('{"cpu": 28}', 28000, 64 * GI),  # a JSON number is a quantity
        ('{"cpu": "24", "memory": "48Gi"}', 24000, 48 * GI),
        ("{}", 32000, 64 * GI),
        ("not json", 32000, 64 * GI),
        ('{"cpu": "lots"}', 32000, 64 * GI),
        ('["cpu"]', 32000, 64 * GI),
    ],
)
def test_raw_allocatable(annotation: str | None, want_cpu: int, want_memory: int) -> None:
    ann = {} if annotation is None else {"node.koordinator.sh/raw-allocatable": annotation}
    alloc = node_allocatable(convert(node("n", annotations=ann)))
    assert (alloc["cpu"], alloc["memory"]) == (want_cpu, want_memory)
