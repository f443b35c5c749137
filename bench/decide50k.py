"""Issue 21's large cluster: one decision with kube's whole default profile over 50,000 nodes in 10
zones and 500,000 bound pods, a quarter of them in anti-affine or zone-spread workloads (the
`interpod` bench at ten times its size). Prints p50/p99 of a decision and its reserve. Figures only.
"""

from __future__ import annotations

from bench.interpod import measure
from bench.util import one_core

NODES = 50_000
PODS = 500_000
WORKLOADS = 5_000


def run() -> None:
    print(f"decide50k: {one_core()}")
    measure(NODES, PODS, WORKLOADS, target="p99 <= 30 ms (issue 21)")
