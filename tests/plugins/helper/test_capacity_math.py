"""Capacity-priority integer math against the float formulas kube writes."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from berth.core.plugins.helper.shape_score import weighted_node_score
from berth.core.plugins.loadawarescheduling.vectors import round_half_away

classes = st.lists(st.tuples(st.integers(0, 100), st.integers(1, 1000), st.booleans()), min_size=1, max_size=4)


@given(st.lists(classes, min_size=1, max_size=6).filter(lambda rows: len({len(r) for r in rows}) == 1))
def test_weighted_node_score_is_go_round(rows: list[list[tuple[int, int, bool]]]) -> None:
    """Per node: Round(Σ score×weight / Σ weight) over the classes present, 0 when none."""
    k = len(rows[0])
    scores = [np.array([r[c][0] for r in rows], dtype=np.int64) for c in range(k)]
    present = [np.array([r[c][2] for r in rows], dtype=bool) for c in range(k)]
    weights = [rows[0][c][1] for c in range(k)]
    got = weighted_node_score(scores, weights, present).tolist()
    for i, r in enumerate(rows):
        num = sum(r[c][0] * weights[c] for c in range(k) if r[c][2])
        den = sum(weights[c] for c in range(k) if r[c][2])
        assert got[i] == (round_half_away(num / den) if den else 0)
