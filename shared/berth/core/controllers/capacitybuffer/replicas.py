"""How many chunks a buffer asks for: max(replicas, ceil(percentage)), capped by limits."""

from __future__ import annotations

from collections.abc import Mapping

from berth.core.api.autoscaling.model import INT32_MAX
from berth.core.api.meta.normalise import MilliList

NOT_DEFINED = "replicas, percentage and limits are not defined"
NO_OVERLAP = "resources in configured limits not found in the pod template"


class ReplicaError(ValueError):
    pass


def percent_of(percentage: int, scalable: int) -> int:
    """ceil(percentage × scalable / 100); 0 when either is not positive."""
    if percentage <= 0 or scalable <= 0:
        return 0
    return (percentage * scalable + 99) // 100


def limits_fit(requests: Mapping[str, int], limits: Mapping[str, int]) -> int:
    """floor(limit / request) over the resources both name, the smallest one.

    Both are milli-unit lists. Resources the chunk does not request (or requests
    zero of) are ignored; if none is left that is an error.
    """
    fits = [limits[r] // amount for r, amount in requests.items() if amount > 0 and r in limits]
    if not fits:
        raise ReplicaError(NO_OVERLAP)
    return max(0, min(fits))


def desired(
    replicas: int | None,
    percentage: int | None,
    scalable: int | None,
    limits: MilliList | None,
    requests: Mapping[str, int],
) -> int:
    """The chunk count; `scalable` is None for podTemplateRef buffers (percentage ignored)."""
    want: int | None = None
    if replicas is not None:
        want = max(0, replicas)
    if percentage is not None and scalable is not None:
        want = max(-1 if want is None else want, percent_of(percentage, scalable))
    if limits is not None:
        fit = limits_fit(requests, limits)
        want = fit if want is None else min(want, fit)
    if want is None:
        raise ReplicaError(NOT_DEFINED)
    return min(want, INT32_MAX)
