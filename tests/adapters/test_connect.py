"""The Redis ride-out: BERTH_REDIS_RIDE_OUT_SECONDS as retries of the client's backoff."""

from __future__ import annotations

import pytest

from berth.adapters.runtime.connect import patient


def waits(seconds: int) -> list[float]:
    retry = patient(seconds)["retry"]
    return [retry._backoff.compute(n) for n in range(1, retry._retries + 1)]


@pytest.mark.parametrize(
    ("seconds", "retries"),
    [(1, 3), (3, 4), (8, 7), (25, 15), (600, 303)],  # 25 s: the 15 retries berth had before the setting
)
def test_the_waits_cover_the_ride_out_and_no_more(seconds: int, retries: int) -> None:
    got = waits(seconds)
    assert len(got) == retries
    assert sum(got) >= seconds > sum(got[:-1])
    assert got[:5] == pytest.approx([0.2, 0.4, 0.8, 1.6, 2.0][: len(got)])
