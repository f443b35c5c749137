"""Generator parameters: validation lists every problem; the text forms the CLI reads."""

from __future__ import annotations

from datetime import datetime

import pytest

from berth.core.errors import ConfigError
from berth.core.generate import PRESETS, NodeShape, Params
from berth.core.generate.params import parse_mix, parse_seconds, parse_shapes, parse_size


def test_defaults_and_presets_are_valid() -> None:
    Params()
    assert set(PRESETS) == {
        *("small", "cold-burst", "small-churn", "bench", "bench-15k", "bench-churn", "preempt", "steady", "scale")
    }
    assert (PRESETS["bench-15k"].nodes, PRESETS["bench-15k"].local_pvs + PRESETS["bench-15k"].zonal_pvs) == (
        15_000,
        300_000,
    )


def test_every_problem_is_reported_at_once() -> None:
    with pytest.raises(ConfigError) as e:
        Params(nodes=0, churn=1.5, pv_sizes=(), report_interval=0)
    assert e.value.problems == [
        "nodes: must be at least 1, got 0",
        "report_interval: must be at least 1, got 0",
        "churn: must be a number in [0, 1], got 1.5",
        "pv_sizes: needs at least one size",
    ]


@pytest.mark.parametrize(
    ("changes", "problem"),
    [
        ({"nodes": 5, "zones": 3, "racks_per_zone": 2}, "nodes: 5 nodes cannot fill 3 zones x 2 racks"),
        ({"cold_nodes": 31}, "cold_nodes: 31 is more than the 30 nodes"),
        ({"burst": 5, "burst_at": 3600, "duration": 3600}, "burst_at: 3600s is not before the end of the run (3600s)"),
        ({"local_pvs": -1}, "local_pvs: must be at least 0, got -1"),
        ({"pods": 2.5}, "pods: want an integer, got 2.5"),
        ({"hot_fraction": True}, "hot_fraction: must be a number in [0, 1], got True"),
        ({"claim_sizes": ((10, 0),)}, "claim_sizes: sizes and weights must be positive, got 10Gi:0"),
        ({"node_shapes": ()}, "node_shapes: needs at least one shape"),
        ({"node_shapes": (NodeShape(0, 64),)}, "node_shapes: cores, memory and weight must be positive, got 0x64:1"),
        ({"start": datetime(2026, 11, 2, 8, 0)}, "start: must carry a time zone"),
        ({"bound": True}, "bound: bound pods have no claims; set stateful_fraction to 0"),
    ],
)
def test_invalid_parameters(changes: dict[str, object], problem: str) -> None:
    with pytest.raises(ConfigError) as e:
        Params().replace(**changes)
    assert e.value.problems == [problem]


def test_text_forms_round_trip() -> None:
    assert parse_size("10Gi") == 10
    assert parse_size("1Ti") == 1024
    mix = parse_mix("10Gi:6, 100Gi:3,1Ti")
    assert mix == ((10, 6), (100, 3), (1024, 1))
    shapes = parse_shapes("8x32,16x64Gi:2")
    assert shapes == (NodeShape(8, 32, 1), NodeShape(16, 64, 2))
    assert [parse_seconds(t) for t in ("90", "90m", "1h30m", "45s", "2h")] == [90, 5400, 5400, 45, 7200]


@pytest.mark.parametrize(
    ("fn", "text", "message"),
    [
        (parse_size, "10G", "want a size like 10Gi or 1Ti, got '10G'"),
        (parse_mix, "10Gi:x", "want SIZE[:WEIGHT] with an integer weight, got '10Gi:x'"),
        (parse_shapes, "16-64", "want CORESxMEMORY_GI[:WEIGHT] such as 16x64:2, got '16-64'"),
        (parse_seconds, "1d", "want seconds or a duration like 90m or 1h30m, got '1d'"),
        (parse_seconds, "", "want seconds or a duration like 90m or 1h30m, got ''"),
    ],
)
def test_bad_text(fn: object, text: str, message: str) -> None:
    assert callable(fn)
    with pytest.raises(ValueError) as e:
        fn(text)
    assert str(e.value) == message


def test_churn_presets_differ_only_in_lifetimes() -> None:
    for base in ("small", "bench"):
        churn = PRESETS[f"{base}-churn"]
        assert churn.churn == 1.0 and churn.lifetime > 0
        assert churn.replace(churn=PRESETS[base].churn, lifetime=0) == PRESETS[base]
