"""DefaultPreemptionArgs: kube's defaults (v1) and validation, every problem reported at once."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from berth.core.api.meta.validation import INT32_MAX, Problems, invalid, is_int, unknown_fields

PERCENTAGE = "minCandidateNodesPercentage"
ABSOLUTE = "minCandidateNodesAbsolute"


class DefaultPreemptionArgs(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    min_candidate_nodes_percentage: int = 10
    min_candidate_nodes_absolute: int = 100

    @classmethod
    def parse(cls, raw: Any, path: str, problems: Problems) -> DefaultPreemptionArgs:
        """Defaults fill absent fields only (an explicit 0 stays 0), then kube's validation."""
        return _parse(raw, path, problems)


def _parse(args: Mapping[str, Any], path: str, problems: Problems) -> DefaultPreemptionArgs:
    unknown_fields(args, {PERCENTAGE, ABSOLUTE}, path, problems)
    base = DefaultPreemptionArgs()
    pct = args.get(PERCENTAGE, base.min_candidate_nodes_percentage)
    absolute = args.get(ABSOLUTE, base.min_candidate_nodes_absolute)
    ok = True
    if not is_int(pct) or not 0 <= pct <= 100:
        problems.append(invalid(f"{path}.{PERCENTAGE}", pct, "not in valid range [0, 100]"))
        ok = False
    if not is_int(absolute) or not 0 <= absolute <= INT32_MAX:
        problems.append(invalid(f"{path}.{ABSOLUTE}", absolute, "not in valid range [0, inf)"))
        ok = False
    if ok and pct == 0 and absolute == 0:
        problems.append(invalid(f"{path}.{PERCENTAGE}", pct, f"cannot be zero at the same time as {ABSOLUTE}"))
        problems.append(invalid(f"{path}.{ABSOLUTE}", absolute, f"cannot be zero at the same time as {PERCENTAGE}"))
    if not ok:
        return base
    return DefaultPreemptionArgs(min_candidate_nodes_percentage=pct, min_candidate_nodes_absolute=absolute)
