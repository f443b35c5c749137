"""Replica arithmetic: max(replicas, ceil(percentage)), capped by floor(limit / request)."""

from __future__ import annotations

import pytest

from berth.core.api.autoscaling.model import INT32_MAX
from berth.core.api.meta.normalise import to_milli
from berth.core.api.meta.quantity import ceil_milli, parse_nanos
from berth.core.controllers.capacitybuffer.replicas import (
    NO_OVERLAP,
    NOT_DEFINED,
    ReplicaError,
    desired,
    limits_fit,
    percent_of,
)


def milli(amounts: dict[str, str]) -> dict[str, int]:
    return {k: ceil_milli(parse_nanos(v)) for k, v in amounts.items()}


CPU1 = to_milli({"cpu": 1000})

# (id, replicas, percentage, scalable, limits, requests (milli), expected)
CASES = [
    ("replicas only", 5, None, None, None, CPU1, 5),
    ("zero replicas", 0, None, None, None, CPU1, 0),
    ("max int32 as is", INT32_MAX, None, None, None, CPU1, INT32_MAX),
    ("percentage rounds up", None, 10, 15, None, CPU1, 2),
    ("1% of 10 is 1", None, 1, 10, None, CPU1, 1),
    ("0% is 0", None, 0, 10, None, CPU1, 0),
    ("any % of 0 is 0", None, 50, 0, None, CPU1, 0),
    ("max of replicas and percentage: percentage", 15, 200, 10, None, CPU1, 20),
    ("max of replicas and percentage: replicas", 25, 200, 10, None, CPU1, 25),
    ("percentage without scalable ignored", 3, 500, None, None, CPU1, 3),
    ("limits cap replicas", 25, None, None, milli({"cpu": "20"}), CPU1, 20),
    ("limits alone", None, None, None, milli({"cpu": "20"}), CPU1, 20),
    ("limits above replicas", 5, None, None, milli({"cpu": "20"}), CPU1, 5),
    ("limits cap percentage", None, 100, 50, milli({"cpu": "7"}), CPU1, 7),
    (
        "min across resources",
        None,
        None,
        None,
        milli({"cpu": "2", "memory": "2000Mi"}),
        to_milli({"cpu": 100, "memory": 200 * 2**20}),
        10,
    ),
    (
        "gpu bound",
        None,
        None,
        None,
        milli({"nvidia.com/gpu": "10", "memory": "100Gi", "cpu": "5"}),
        to_milli({"nvidia.com/gpu": 4, "memory": 16 * 2**30, "cpu": 1000}),
        2,
    ),
    (
        "memory bound",
        None,
        None,
        None,
        milli({"memory": "5Gi", "cpu": "200m"}),
        to_milli({"memory": 4 * 2**30, "cpu": 100}),
        1,
    ),
    ("limit below one chunk", None, None, None, milli({"cpu": "500m"}), CPU1, 0),
    ("unrequested limit ignored", None, None, None, milli({"cpu": "3", "memory": "1Ki"}), CPU1, 3),
    (
        "fractional limit stays exact",
        None,
        None,
        None,
        milli({"example.com/dongle": "1.5"}),
        to_milli({"example.com/dongle": 1}),
        1,
    ),
    ("huge percentage clamps to int32", None, INT32_MAX, INT32_MAX, None, CPU1, INT32_MAX),
]


@pytest.mark.parametrize(
    ("replicas", "percentage", "scalable", "limits", "requests", "want"),
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_desired(
    replicas: int | None,
    percentage: int | None,
    scalable: int | None,
    limits: dict[str, int] | None,
    requests: dict[str, int],
    want: int,
) -> None:
    assert desired(replicas, percentage, scalable, limits, requests) == want


ERRORS = [
    ("nothing set", None, None, None, None, CPU1, NOT_DEFINED),
    ("percentage with podTemplateRef only", None, 10, None, None, CPU1, NOT_DEFINED),
    ("limits share nothing", 3, None, None, milli({"mem": "5120Mi", "cpi": "40"}), CPU1, NO_OVERLAP),
    (
        "only a zero request overlaps",
        None,
        None,
        None,
        milli({"memory": "1Gi"}),
        to_milli({"cpu": 1000, "memory": 0}),
        NO_OVERLAP,
    ),
]


@pytest.mark.parametrize(
    ("replicas", "percentage", "scalable", "limits", "requests", "message"),
    [c[1:] for c in ERRORS],
    ids=[c[0] for c in ERRORS],
)
def test_errors(
    replicas: int | None,
    percentage: int | None,
    scalable: int | None,
    limits: dict[str, int] | None,
    requests: dict[str, int],
    message: str,
) -> None:
    with pytest.raises(ReplicaError, match=message):
        desired(replicas, percentage, scalable, limits, requests)


@pytest.mark.parametrize(
    ("p", "s", "want"), [(10, 1, 1), (10, 10, 1), (10, 11, 2), (100, 7, 7), (150, 3, 5), (-5, 10, 0), (5, -1, 0)]
)
def test_percent_of(p: int, s: int, want: int) -> None:
    assert percent_of(p, s) == want


def test_limits_fit_needs_a_positive_request() -> None:
    with pytest.raises(ReplicaError):
        limits_fit({}, {"cpu": 1000})
