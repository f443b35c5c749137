"""The demo's story against kube (tests/e2e/compare/demo_story.py, `make demo-kube`): its figures, and the whole
tool on a slice of the sample log (its first three pending pods) under kube's gate-on setting with KEP-1845's
shape, which needs both the feature gate and VolumeBindingArgs, so that the tool cannot rot."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.compare.demo_story import LOG, SETTINGS, Outcome, Sizes, agreement, figures, story, table
from tests.e2e.compare.logreplay import read_log

GI, TI = 2**30, 2**40
SIZES = Sizes(
    claims={"ns/small": 10 * GI, "ns/mid": 20 * GI, "ns/big": 500 * GI},
    pvs={"pv-10g": 10 * GI, "pv-100g": 100 * GI, "pv-1t": TI, "pv-1t-b": TI},
)


@pytest.mark.parametrize(
    ("outcomes", "wasted", "large_ti", "large_100gi"),
    [
        pytest.param({"a": Outcome("n1", {"ns/small": "pv-10g"})}, 0, (0, 0), (0, 0), id="tight fit"),
        pytest.param({"a": Outcome("n1", {"ns/small": "pv-1t"})}, TI - 10 * GI, (1, 1), (1, 1), id="small on 1Ti"),
        pytest.param({"a": Outcome("n1", {"ns/mid": "pv-100g"})}, 80 * GI, (0, 0), (0, 1), id="20Gi is not small"),
        pytest.param(
            {"a": Outcome("n1", {"ns/big": "pv-1t"}), "b": Outcome("n2", {"ns/small": "pv-100g"})},
            (TI - 500 * GI) + 90 * GI,
            (0, 1),
            (1, 2),
            id="two pods",
        ),
        pytest.param({"a": Outcome(None)}, 0, (0, 0), (0, 0), id="unscheduled"),
    ],
)
def test_figures(
    outcomes: dict[str, Outcome], wasted: int, large_ti: tuple[int, int], large_100gi: tuple[int, int]
) -> None:
    f = figures("run", outcomes, SIZES)
    assert (f.wasted, f.large_ti, f.large_100gi) == (wasted, large_ti, large_100gi)
    assert f.scheduled == sum(1 for o in outcomes.values() if o.node)


def test_agreement_counts_ties_and_pv_sizes() -> None:
    kube = {
        "same": Outcome("n1", {"ns/small": "pv-1t"}),
        "tied": Outcome("n2"),
        "other": Outcome("n3"),
        "kube only": Outcome("n1"),
        "neither": Outcome(None),
        "kube alone saw it": Outcome("n1"),
    }
    berth = {
        "same": Outcome("n1", {"ns/small": "pv-1t-b"}),  # another PV of the same size: a tie
        "tied": Outcome("n1", totals={"n1": 700, "n2": 700, "n3": 650}),
        "other": Outcome("n1", totals={"n1": 700, "n3": 650}),
        "kube only": Outcome(None),
        "neither": Outcome(None),
    }
    a = agreement(kube, berth, SIZES)
    assert (a.same, a.tied, a.other, a.one_side, a.same_sizes, a.with_claims) == (1, 1, 1, 1, 1, 1)


@pytest.mark.e2e
@pytest.mark.timeout(180)
def test_demo_story_on_a_slice(kube_assets: Path, tmp_path: Path) -> None:
    kep = next(s for s in SETTINGS if s.name == "gate-on-kep")
    result = story(kube_assets, LOG, tmp_path, pods=3, settings=[kep])
    runs = {f.run: f for f in result.figures}
    assert set(runs) == {"kube gate-on-kep", "berth gate-on-kep", "berth-default", "berth-capacity-priority-off"}
    assert all(f.pods == 3 for f in runs.values())
    assert runs["kube gate-on-kep"].scheduled == runs["berth gate-on-kep"].scheduled == 3
    a = result.agreements["gate-on-kep"]
    assert a.same + a.tied + a.other == 3
    # every claim kube bound is on a PV of the pod's node (the log's local PVs name their node)
    nodes = {
        e["object"]["metadata"]["name"]: e["object"]["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0][
            "matchExpressions"
        ][0]["values"]
        for e in read_log(tmp_path / "log.jsonl")
        if e["object"]["kind"] == "PersistentVolume"
    }
    placed = [json.loads(line) for line in (tmp_path / "kube-gate-on-kep.jsonl").read_text().splitlines()]
    assert sum(len(p["volumes"]) for p in placed) == 3
    for p in placed:
        for pv in p["volumes"].values():
            assert p["node"] in nodes[pv], (p, pv, nodes[pv])
    assert (tmp_path / "table.md").read_text() == table(result, [kep])
