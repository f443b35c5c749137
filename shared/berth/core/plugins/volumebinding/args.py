"""VolumeBindingArgs: parsed and validated as kube does, plus berth's storageClassWeights."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from berth.core.api.meta.validation import INT32_MAX, INT64_MAX, Problems, invalid, is_int, unknown_fields
from berth.core.plugins.helper.shape_score import DEFAULT_SHAPE, Shape


class VolumeBindingArgs(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    bind_timeout_seconds: int = 600
    shape: Shape = DEFAULT_SHAPE
    storage_class_weights: tuple[tuple[str, int], ...] = ()

    @classmethod
    def parse(cls, raw: Any, path: str, problems: Problems) -> VolumeBindingArgs:
        """Decode, default and validate a pluginConfig args object; every problem is appended."""
        return _parse(raw, path, problems)


def _parse(args: Mapping[str, Any], path: str, problems: Problems) -> VolumeBindingArgs:
    unknown_fields(args, {"bindTimeoutSeconds", "shape", "storageClassWeights"}, path, problems)
    timeout = args.get("bindTimeoutSeconds", 600)
    if not is_int(timeout) or not 0 <= timeout <= INT64_MAX:
        problems.append(
            invalid(
                f"{path}.bindTimeoutSeconds",
                timeout,
                "invalid BindTimeoutSeconds, should not be a negative value",
            )
        )
        timeout = 600
    shape = _shape(args.get("shape"), f"{path}.shape", problems)
    weights = []
    raw_weights = args.get("storageClassWeights", {})
    if not isinstance(raw_weights, Mapping):
        problems.append(
            invalid(
                f"{path}.storageClassWeights",
                raw_weights,
                "must be a map of storage class to weight",
            )
        )
        raw_weights = {}
    for cls, w in raw_weights.items():
        if not is_int(w) or w < 1:
            problems.append(invalid(f"{path}.storageClassWeights[{cls}]", w, "must be a positive integer"))
        elif w > INT32_MAX:
            problems.append(invalid(f"{path}.storageClassWeights[{cls}]", w, f"must be at most {INT32_MAX} (int32)"))
        else:
            weights.append((str(cls), w))
    base = VolumeBindingArgs()
    return VolumeBindingArgs(
        bind_timeout_seconds=timeout,
        shape=shape if shape is not None else base.shape,
        storage_class_weights=tuple(sorted(weights)),
    )


def _shape(raw: Any, path: str, problems: Problems) -> tuple[tuple[int, int], ...] | None:
    if raw is None:
        return None
    if not isinstance(raw, list) or not raw:
        problems.append(f"{path}: Required value: at least one point must be specified")
        return None
    points: list[tuple[int, int]] = []
    ok = True
    for i, p in enumerate(raw):
        if not isinstance(p, Mapping):
            problems.append(invalid(f"{path}[{i}]", p, "must be {utilization, score}"))
            ok = False
            continue
        unknown_fields(p, {"utilization", "score"}, f"{path}[{i}]", problems)
        u, s = p.get("utilization", 0), p.get("score", 0)
        if not is_int(u) or not 0 <= u <= 100:
            problems.append(invalid(f"{path}[{i}].utilization", u, "not in valid range [0, 100]"))
            ok = False
        if not is_int(s) or not 0 <= s <= 10:
            problems.append(invalid(f"{path}[{i}].score", s, "not in valid range [0, 10]"))
            ok = False
        points.append((u, s) if is_int(u) and is_int(s) else (0, 0))
    for i in range(1, len(points)):
        if (
            is_int(raw[i].get("utilization", 0) if isinstance(raw[i], Mapping) else None)
            and points[i][0] <= points[i - 1][0]
        ):
            problems.append(
                invalid(
                    f"{path}[{i}].utilization",
                    points[i][0],
                    "values must be sorted in increasing order",
                )
            )
            ok = False
            break
    return tuple(points) if ok else None
