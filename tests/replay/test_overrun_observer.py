"""The over-the-run observer on small, hand-checked histories."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from berth.core.events import WatchEvent
from berth.core.pipeline.overrun import OverRunObserver, percentiles
from berth.core.pipeline.stats import BufferPoint
from tests.builders import node, pod

T0 = datetime(2026, 11, 1, 10, 0, tzinfo=UTC)


def model(obj: dict[str, Any]) -> Any:
    return WatchEvent("ADDED", obj, T0).decoded().model


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


@pytest.mark.parametrize(
    ("values", "want"),
    [
        ([], (0.0, 0.0, 0.0, 0.0)),
        ([3.0], (3.0, 3.0, 3.0, 3.0)),
        ([float(v) for v in range(1, 101)], (50.0, 90.0, 99.0, 100.0)),
        ([4.0, 1.0, 3.0, 2.0], (2.0, 4.0, 4.0, 4.0)),
    ],
)
def test_percentiles_are_nearest_rank(values: list[float], want: tuple[float, ...]) -> None:
    p = percentiles(values)
    assert (p.p50, p.p90, p.p99, p.max) == want


def test_requests_over_allocatable_weighted_by_log_time() -> None:
    """Two 4-core nodes; a 2-core pod bound on n1 from 10 s to 30 s, then a 4-core one on n2 to 40 s."""
    o = OverRunObserver()
    n1, n2 = model(node("n1", cpu="4")), model(node("n2", cpu="4"))
    a = model(pod("a", cpu="2", node_name="n1"))
    b = model(pod("b", cpu="4", node_name="n2"))
    o.advance(at(0))
    o.node(n1, False)
    o.node(n2, False)
    o.advance(at(10))
    o.pod(a, False)
    o.advance(at(30))
    o.pod(a, True)
    o.pod(b, False)
    o.advance(at(40))
    o.pod(b, True)
    r = o.result([])
    # cpu: 0 for 10 s, 2/8 for 20 s, 4/8 for 10 s -> (5 + 5) / 40
    assert r.cpu.mean == pytest.approx(10 / 40) and r.cpu.peak == pytest.approx(0.5)
    # per-node spread: 0, then stddev(0.5, 0) = 0.25 for 20 s, then stddev(0, 1) = 0.5 for 10 s
    assert r.cpu_spread == pytest.approx((0.25 * 20 + 0.5 * 10) / 40)
    assert r.seconds == 40


def test_a_buffers_share_of_log_time_fully_ready() -> None:
    o = OverRunObserver()
    o.advance(at(0))
    o.advance(at(100))
    points = [
        BufferPoint("2026-11-01T10:00:20Z", 1, "ns/a", 2, 2),  # ready from 20 s
        BufferPoint("2026-11-01T10:01:00Z", 2, "ns/a", 2, 1),  # not from 60 s
        BufferPoint("2026-11-01T10:01:30Z", 3, "ns/a", 2, 2),  # ready again from 90 s to the end
        BufferPoint("2026-11-01T10:00:00Z", 1, "ns/b", 1, 0),
    ]
    assert o.result(points).buffers_ready == {"ns/a": pytest.approx(0.5), "ns/b": 0.0}
