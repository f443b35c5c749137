"""Build cluster state from raw objects: convert each at the edge, skip unknown kinds with one warning."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from berth.core.api.kinds import KINDS, convert_as, kind_key
from berth.core.cache.state import ClusterState


class Decoded(NamedTuple):
    """An object already read into its kind's model (a JSON snapshot decoded straight from bytes)."""

    model: Any


def build_state(
    raws: Iterable[Mapping[str, Any] | Decoded], state: ClusterState | None = None
) -> tuple[ClusterState, list[str]]:
    """Apply every object in order; returns the state and one warning per unknown kind.

    Raises InputError (naming the object and field) on the first malformed object.
    """
    state = state or ClusterState()
    unknown: dict[str, int] = {}
    for raw in raws:
        if isinstance(raw, Decoded):
            state.apply(raw.model)
            continue
        key = kind_key(raw)
        kind = KINDS.get(key)
        if kind is None:
            label = f"{key[1]} ({key[0] or 'core'})"
            unknown[label] = unknown.get(label, 0) + 1
            continue
        state.apply(convert_as(kind, raw))
    warnings = [f"skipped {n} object(s) of kind {k}: berth does not read it" for k, n in sorted(unknown.items())]
    return state, warnings
