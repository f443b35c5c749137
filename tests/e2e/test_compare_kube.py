"""berth against the real kube-scheduler 1.36, side by side (tests/e2e/compare): every pending pod of each
scenario decided by both on the same state, with kube's default profile and two other configurations.

`make compare-kube N=1000` runs only these, every hand-written scenario under every configuration, with
about N generated pods (COMPARE_PODS; COMPARE_SEED moves the seeds). `make test` and `make e2e` run the
hand-written scenarios under kube's default profile and at least 200 generated pods over the three
configurations, to stay within a few minutes (COMPARE_ALL=1 runs every hand-written one there too).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from tests.e2e.cluster import Kube
from tests.e2e.compare.generator import PODS_PER_SCENARIO, generate
from tests.e2e.compare.handwritten import HANDWRITTEN
from tests.e2e.compare.runner import Outcome, kube_config, run
from tests.e2e.compare.scenario import Names
from tests.e2e.controlplane import ControlPlane

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]

# the KubeSchedulerProfile of each configuration (None: kube's default profile)
PROFILES: dict[str, Mapping[str, Any] | None] = {
    "default": None,
    "most-allocated": {
        "schedulerName": "default-scheduler",
        "pluginConfig": [
            {
                "name": "NodeResourcesFit",
                "args": {
                    "scoringStrategy": {
                        "type": "MostAllocated",
                        "resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}],
                    }
                },
            }
        ],
    },
    "weights": {
        "schedulerName": "default-scheduler",
        "plugins": {
            "multiPoint": {
                "enabled": [
                    {"name": "TaintToleration", "weight": 1},
                    {"name": "NodeAffinity", "weight": 5},
                    {"name": "NodeResourcesFit", "weight": 3},
                    {"name": "PodTopologySpread", "weight": 1},
                    {"name": "InterPodAffinity", "weight": 4},
                    {"name": "NodeResourcesBalancedAllocation", "weight": 2},
                    {"name": "ImageLocality", "weight": 3},
                ]
            }
        },
    },
}

# generated pods per configuration: at least 200 in all by default; COMPARE_PODS sets the total
TOTAL = int(os.environ.get("COMPARE_PODS", "220"))
SHARE = {"default": 0.5, "most-allocated": 0.25, "weights": 0.25}
BASE_SEED = int(os.environ.get("COMPARE_SEED", "33"))
ALL_HANDWRITTEN = os.environ.get("COMPARE_ALL", "") == "1"


def seeds(profile: str) -> list[int]:
    count = max(1, round(TOTAL * SHARE[profile] / PODS_PER_SCENARIO))
    offset = {"default": 0, "most-allocated": 100_000, "weights": 200_000}[profile]
    return [BASE_SEED * 1000 + offset + i for i in range(count)]


@pytest.fixture(scope="module", params=list(PROFILES))
def profile(request: pytest.FixtureRequest, control_plane: ControlPlane) -> Iterator[tuple[str, Any]]:
    """kube-scheduler runs with this configuration for the tests that use it (pytest groups them)."""
    name = request.param
    control_plane.restart_scheduler(kube_config(PROFILES[name]))
    try:
        yield name, PROFILES[name]
    finally:
        control_plane.restart_scheduler(None)


def report(outcomes: list[Outcome]) -> str:
    lines = []
    for o in outcomes:
        lines.append(("DIFF " if o.differences else "ok   ") + o.line())
        lines += [f"     {d}" for d in o.differences]
    return "\n".join(lines)


def check(outcomes: list[Outcome]) -> None:
    print(report(outcomes))  # shown with -s, and with a failure
    assert outcomes
    assert not any(o.differences for o in outcomes), "berth and kube-scheduler differ:\n" + report(outcomes)


@pytest.mark.parametrize("scenario", list(HANDWRITTEN))
def test_handwritten_scenario(profile: tuple[str, Any], kube: Kube, scenario: str) -> None:
    if profile[0] != "default" and not ALL_HANDWRITTEN:
        pytest.skip("hand-written scenarios run under the other configurations with make compare-kube")
    sc = HANDWRITTEN[scenario](Names(kube.ns, kube.id))
    check(run(kube, sc, profile[1]))


@pytest.mark.parametrize("index", range(max(len(seeds(p)) for p in PROFILES)))
def test_generated_scenario(profile: tuple[str, Any], kube: Kube, index: int) -> None:
    mine = seeds(profile[0])
    if index >= len(mine):
        pytest.skip(f"{profile[0]} runs {len(mine)} generated scenarios")
    sc = generate(mine[index], Names(kube.ns, kube.id))
    check(run(kube, sc, profile[1]))
