"""What `berth generate` is asked for: the parameters, their validation, the presets and text parsers."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from datetime import UTC, datetime

from berth.core.errors import ConfigError

Mix = tuple[tuple[int, int], ...]
"""(size in GiB, weight) pairs: a discrete distribution of sizes."""


@dataclass(frozen=True)
class NodeShape:
    """A machine type: cores, memory in GiB, and how often it occurs relative to the others."""

    cpu: int
    memory_gi: int
    weight: int = 1

    @property
    def name(self) -> str:
        return f"c{self.cpu}-m{self.memory_gi}"


DEFAULT_SHAPES = (NodeShape(8, 32, 1), NodeShape(16, 64, 2), NodeShape(32, 128, 1))
DEFAULT_PV_SIZES: Mix = ((10, 6), (100, 3), (1024, 1))
DEFAULT_CLAIM_SIZES: Mix = ((10, 10), (20, 2), (100, 5), (500, 1), (1024, 1))
DEFAULT_START = datetime(2026, 11, 2, 8, 0, tzinfo=UTC)


@dataclass(frozen=True)
class Params:
    """One synthetic cluster and its history. Invalid values raise ConfigError listing every problem."""

    # topology and machines
    zones: int = 3
    racks_per_zone: int = 2
    nodes: int = 30
    node_shapes: tuple[NodeShape, ...] = DEFAULT_SHAPES
    # storage
    local_pvs: int = 300  # node-local PVs (class local-ssd or local-hdd), spread evenly over the nodes
    zonal_pvs: int = 30  # pre-provisioned PVs of class zonal-ssd, spread over the zones
    pv_sizes: Mix = DEFAULT_PV_SIZES
    ssd_fraction: float = 0.5  # share of local PVs and local claims on local-ssd (the rest on local-hdd)
    # workloads
    pods: int = 150  # pending pods created after t0, in workloads (the burst comes on top)
    stateful_fraction: float = 0.6  # share of workloads that are StatefulSets with claims
    claim_sizes: Mix = DEFAULT_CLAIM_SIZES
    zonal_claims: float = 0.1  # share of StatefulSets whose claims use zonal-ssd
    second_claim: float = 0.0  # share of StatefulSets with a second (10Gi local-hdd) claim per pod
    placement: float = (
        0.5  # share of StatefulSets and Deployments whose replicas are kept apart (zone spread, anti-affinity)
    )
    churn: float = 0.2  # share of workloads deleted again before the end
    lifetime: int = 0  # mean seconds a churned workload lives (exponential; at least 30); 0: the churn's own timing
    burst: int = 0  # pods of one Deployment created within seconds
    burst_at: int = 60  # seconds after t0
    buffers: int = 3  # CapacityBuffers (with a quota-limited namespace, a PodTemplate, a live Deployment)
    daemonset: bool = True  # a running node-exporter pod on every node
    priority_classes: bool = False  # critical, serving and batch (globalDefault) PriorityClasses, pods in them
    pdbs: float = 0.0  # share of StatefulSets and Deployments with a PodDisruptionBudget (maxUnavailable 1)
    bound: bool = False  # pods arrive running on a node drawn at random (placed by the cluster's scheduler)
    # time and metrics
    start: datetime = DEFAULT_START
    duration: int = 3600  # seconds of activity after t0
    report_interval: int = 60  # NodeMetric reportIntervalSeconds
    hot_fraction: float = 0.1  # share of nodes running hot (70-85 % cpu)
    cold_nodes: int = 0  # nodes running almost idle (1-4 % cpu)
    aggregated: bool = True  # NodeMetrics carry aggregatedNodeUsages (5m, 10m, 30m percentiles)

    def __post_init__(self) -> None:
        problems = validate(self)
        if problems:
            raise ConfigError(problems)

    def replace(self, **changes: object) -> Params:
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]


def validate(p: Params) -> list[str]:
    problems: list[str] = []

    def at_least(name: str, value: int, low: int) -> None:
        if isinstance(value, bool) or not isinstance(value, int):
            problems.append(f"{name}: want an integer, got {value!r}")
        elif value < low:
            problems.append(f"{name}: must be at least {low}, got {value}")

    def share(name: str, value: float) -> None:
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
            problems.append(f"{name}: must be a number in [0, 1], got {value!r}")

    def mix(name: str, value: Mix) -> None:
        if not value:
            problems.append(f"{name}: needs at least one size")
        for size, weight in value:
            if size < 1 or weight < 1:
                problems.append(f"{name}: sizes and weights must be positive, got {size}Gi:{weight}")

    at_least("zones", p.zones, 1)
    at_least("racks_per_zone", p.racks_per_zone, 1)
    at_least("nodes", p.nodes, 1)
    at_least("local_pvs", p.local_pvs, 0)
    at_least("zonal_pvs", p.zonal_pvs, 0)
    at_least("pods", p.pods, 0)
    at_least("burst", p.burst, 0)
    at_least("burst_at", p.burst_at, 0)
    at_least("buffers", p.buffers, 0)
    at_least("duration", p.duration, 1)
    at_least("report_interval", p.report_interval, 1)
    at_least("cold_nodes", p.cold_nodes, 0)
    at_least("lifetime", p.lifetime, 0)
    for name in (
        "ssd_fraction",
        "stateful_fraction",
        "zonal_claims",
        "second_claim",
        "placement",
        "churn",
        "hot_fraction",
        "pdbs",
    ):
        share(name, getattr(p, name))
    mix("pv_sizes", p.pv_sizes)
    mix("claim_sizes", p.claim_sizes)
    if not p.node_shapes:
        problems.append("node_shapes: needs at least one shape")
    for s in p.node_shapes:
        if s.cpu < 1 or s.memory_gi < 1 or s.weight < 1:
            problems.append(
                f"node_shapes: cores, memory and weight must be positive, got {s.cpu}x{s.memory_gi}:{s.weight}"
            )
    if not problems:
        if p.nodes < p.zones * p.racks_per_zone:
            problems.append(f"nodes: {p.nodes} nodes cannot fill {p.zones} zones x {p.racks_per_zone} racks")
        if p.cold_nodes > p.nodes:
            problems.append(f"cold_nodes: {p.cold_nodes} is more than the {p.nodes} nodes")
        if p.bound and p.stateful_fraction:
            problems.append("bound: bound pods have no claims; set stateful_fraction to 0")
        if p.burst and p.burst_at >= p.duration:
            problems.append(f"burst_at: {p.burst_at}s is not before the end of the run ({p.duration}s)")
    if p.start.tzinfo is None:
        problems.append("start: must carry a time zone")
    return problems


# ---- presets ---------------------------------------------------------------------

PRESETS: dict[str, Params] = {
    # The demo sample: small claims land on small PVs, large PVs stay free for large claims.
    "small": Params(duration=1800),
    # One idle node among warm ones, then 50 pods within seconds: they must not all land on it.
    "cold-burst": Params(
        zones=1,
        racks_per_zone=2,
        nodes=8,
        node_shapes=(NodeShape(32, 128),),
        local_pvs=0,
        zonal_pvs=0,
        pods=0,
        buffers=0,
        hot_fraction=0.0,
        cold_nodes=1,
        burst=50,
        burst_at=30,
        duration=300,
        aggregated=False,
    ),
    # 5,000 nodes, 100,000 PVs, about 200,000 events of which 20,000 are pending pods.
    # Pods that come and go: every workload lives about five minutes, so most pods leave before the end.
    "small-churn": Params(duration=1800, churn=1.0, lifetime=300),
    "bench": Params(
        zones=3,
        racks_per_zone=40,
        nodes=5000,
        local_pvs=95_000,
        zonal_pvs=5_000,
        pods=20_000,
        second_claim=0.1,
        buffers=6,
        duration=240,
    ),
}
PRESETS["bench-churn"] = PRESETS["bench"].replace(churn=1.0, lifetime=60)
# bench's workload on a cluster three times larger: 15,000 nodes and 300,000 PVs (issue 36)
PRESETS["bench-15k"] = PRESETS["bench"].replace(racks_per_zone=120, nodes=15_000, local_pvs=285_000, zonal_pvs=15_000)
# Six full nodes of serving and batch pods, half the workloads under a PDB, then a burst of
# critical pods that only preemption can place.
PRESETS["preempt"] = Params(
    zones=1,
    racks_per_zone=2,
    nodes=6,
    node_shapes=(NodeShape(8, 32),),
    local_pvs=36,
    zonal_pvs=0,
    pods=70,
    stateful_fraction=0.3,
    churn=0.0,
    burst=12,
    burst_at=600,
    buffers=0,
    duration=900,
    priority_classes=True,
    pdbs=0.5,
)
# A cluster followed for an hour: 5,000 nodes each reporting a NodeMetric every minute (300,000
# reports), 20,000 pods arriving already bound and leaving again (lifetimes of about 10 minutes).
PRESETS["steady"] = Params(
    zones=3,
    racks_per_zone=40,
    nodes=5000,
    local_pvs=0,
    zonal_pvs=0,
    pods=20_000,
    stateful_fraction=0.0,
    churn=1.0,
    lifetime=600,
    buffers=0,
    bound=True,
    duration=3600,
)
# 50,000 nodes, 1,000,000 PVs and 500,000 bound pods: the memory a state that large takes.
PRESETS["scale"] = Params(
    zones=3,
    racks_per_zone=100,
    nodes=50_000,
    local_pvs=950_000,
    zonal_pvs=50_000,
    pods=500_000,
    stateful_fraction=0.0,
    churn=0.0,
    buffers=0,
    daemonset=False,
    bound=True,
    duration=120,
)


# ---- text forms, for the command line ---------------------------------------------

_SIZE = re.compile(r"^(\d+)(Gi|Ti)$")
_SHAPE = re.compile(r"^(\d+)x(\d+)(?:Gi)?(?::(\d+))?$")
_DURATION = re.compile(r"^(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$")


def parse_size(text: str) -> int:
    """`10Gi` or `1Ti` to GiB."""
    m = _SIZE.match(text.strip())
    if m is None:
        raise ValueError(f"want a size like 10Gi or 1Ti, got {text!r}")
    return int(m.group(1)) * (1024 if m.group(2) == "Ti" else 1)


def parse_mix(text: str) -> Mix:
    """`10Gi:6,100Gi:3,1Ti:1` (a missing weight is 1)."""
    out = []
    for part in text.split(","):
        size, _, weight = part.strip().partition(":")
        if weight and not weight.isdigit():
            raise ValueError(f"want SIZE[:WEIGHT] with an integer weight, got {part.strip()!r}")
        out.append((parse_size(size), int(weight or 1)))
    return tuple(out)


def parse_shapes(text: str) -> tuple[NodeShape, ...]:
    """`8x32,16x64:2` (cores x GiB of memory, optional weight)."""
    out = []
    for part in text.split(","):
        m = _SHAPE.match(part.strip())
        if m is None:
            raise ValueError(f"want CORESxMEMORY_GI[:WEIGHT] such as 16x64:2, got {part.strip()!r}")
        out.append(NodeShape(int(m.group(1)), int(m.group(2)), int(m.group(3) or 1)))
    return tuple(out)


def parse_seconds(text: str) -> int:
    """`3600`, `90m`, `1h30m` or `45s` to seconds."""
    text = text.strip()
    if text.isdigit():
        return int(text)
    m = _DURATION.match(text)
    if not text or m is None:
        raise ValueError(f"want seconds or a duration like 90m or 1h30m, got {text!r}")
    h, mi, s = (int(g or 0) for g in m.groups())
    return h * 3600 + mi * 60 + s


def format_size(gi: int) -> str:
    return f"{gi // 1024}Ti" if gi % 1024 == 0 else f"{gi}Gi"
