"""Synthetic event logs: a seeded cluster and its history as watch events (`berth generate`).

Pure: no I/O, no wall clock. `generate(params, seed)` yields Events in log order; the same
parameters and seed give the same events, byte for byte once encoded.
"""

from __future__ import annotations

from berth.core.generate.params import PRESETS, NodeShape, Params
from berth.core.generate.timeline import generate

__all__ = ["PRESETS", "NodeShape", "Params", "generate"]
