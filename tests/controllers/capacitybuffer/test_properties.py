"""Properties: limits are never exceeded, quotas are never oversubscribed, windows contain now."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from berth.core.api.core.model import Pod, ResourceQuota
from berth.core.controllers.capacitybuffer.quota import Candidate, allocate, demand
from berth.core.controllers.capacitybuffer.replicas import ReplicaError, desired
from berth.core.controllers.capacitybuffer.schedule import parse

RESOURCES = ("cpu", "memory", "nvidia.com/gpu")
amounts = st.dictionaries(st.sampled_from(RESOURCES), st.integers(0, 10**7), max_size=3)
maybe_int = st.none() | st.integers(0, 10**6)


@given(
    replicas=maybe_int,
    percentage=maybe_int,
    scalable=maybe_int,
    limits=st.none() | amounts,
    requests=amounts,
)
def test_replicas_never_exceed_limits(
    replicas: int | None,
    percentage: int | None,
    scalable: int | None,
    limits: dict[str, int] | None,
    requests: dict[str, int],
) -> None:
    try:
        n = desired(replicas, percentage, scalable, limits, requests)
    except ReplicaError:
        return
    assert n >= 0
    if limits is not None:
        for res, amount in requests.items():
            if amount > 0 and res in limits:
                assert n * amount <= limits[res]
    if replicas is not None and limits is None:
        assert n >= replicas


quota_keys = st.sampled_from(
    ("cpu", "requests.cpu", "memory", "requests.memory", "nvidia.com/gpu", "requests.nvidia.com/gpu")
)
quotas = st.lists(
    st.builds(
        lambda i, hard, used: ResourceQuota("ns", f"q{i}", hard=hard, used=used),
        st.integers(0, 5),
        st.dictionaries(quota_keys, st.integers(0, 10**6), max_size=4),
        st.dictionaries(quota_keys, st.integers(0, 10**6), max_size=4),
    ),
    max_size=3,
    unique_by=lambda q: q.name,
)
buffers = st.lists(
    st.tuples(
        st.integers(0, 1000),
        st.dictionaries(st.sampled_from(("cpu", "memory", "nvidia.com/gpu")), st.integers(0, 5000), max_size=3),
    ),
    max_size=6,
)


@given(buffers=buffers, quotas=quotas)
def test_quota_never_oversubscribed(buffers: list[tuple[int, dict[str, int]]], quotas: list[ResourceQuota]) -> None:
    candidates = [Candidate(f"ns/b{i}", n, Pod("ns", f"b{i}", requests=req)) for i, (n, req) in enumerate(buffers)]
    out = allocate(candidates, quotas)
    for c in candidates:
        a = out.get(c.key)
        if a is not None:
            assert 0 <= a.allowed <= c.replicas
    for q in quotas:
        for res, hard in q.hard.items():
            taken = sum(out[c.key].allowed * demand(c.pod).get(res, 0) for c in candidates if c.key in out)
            assert taken <= max(0, hard - q.used.get(res, 0))


@given(
    minute=st.integers(0, 59),
    hour=st.integers(0, 23),
    minutes=st.integers(1, 3 * 24 * 60),
    offset=st.integers(0, 14 * 24 * 60),
)
def test_active_window_contains_now(minute: int, hour: int, minutes: int, offset: int) -> None:
    s = parse(f"{minute} {hour} * * mon,thu {minutes}m")
    now = datetime(2026, 11, 1, tzinfo=UTC) + timedelta(minutes=offset)
    window = s.active(now)
    if window is not None:
        start, end = window
        assert start <= now < end and end - start == timedelta(minutes=minutes)
    else:
        nxt = s.next_start(now)
        assert nxt is not None and nxt > now
        assert s.active(nxt) is not None
