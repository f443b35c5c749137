"""Each pod's story in a run, for the report: its last outcome and its decisions over time, with
the node scores and reasons the decisions carry (as many nodes as --top-nodes or --all-nodes kept)."""

from __future__ import annotations

from collections import Counter

import msgspec

from berth.core.pipeline.records import DecisionRecord, Record

MAX_STEPS = 20  # decisions kept per pod: its last ones
MAX_NODES = 10  # feasible nodes kept per decision: the best by total


class NodeScore(msgspec.Struct, frozen=True, array_like=True):
    node: str
    total: int
    scores: dict[str, int]


class Step(msgspec.Struct, frozen=True, kw_only=True):
    """One decision of a pod."""

    ts: str | None
    position: int
    attempt: int
    status: str
    node: str | None
    message: str
    reasons: dict[str, int]  # reason -> nodes that gave it (nothing fitted); {} when scheduled
    nodes: list[NodeScore]  # the best feasible nodes the decision listed, best first
    feasible: int  # feasible nodes the decision listed (more than `nodes` holds when cut)
    volumes: list[str]  # "claim -> pv" or "claim -> provisioned"
    nominated: str | None = None
    victims: list[str] = []


class PodTrace(msgspec.Struct, kw_only=True):
    """A pod by its last decision, with its decisions (the last MAX_STEPS)."""

    pod: str
    status: str
    node: str | None
    attempts: int  # the pod's scheduling attempts (its decisions' highest attempt number)
    decisions: int  # decisions made for the pod (an attempt that changes nothing publishes none)
    wait: float | None  # log seconds from creation to the first Scheduled decision
    steps: list[Step]

    @property
    def last(self) -> Step:
        return self.steps[-1]


def pod_traces(records: list[Record], waits: dict[str, float]) -> list[PodTrace]:
    """One trace per decided pod, in pod order."""
    steps: dict[str, list[Step]] = {}
    counts: Counter[str] = Counter()
    attempts: dict[str, int] = {}
    for r in records:
        if isinstance(r, DecisionRecord):
            counts[r.pod] += 1
            attempts[r.pod] = max(attempts.get(r.pod, 0), r.attempt)
            kept = steps.setdefault(r.pod, [])
            kept.append(step(r))
            if len(kept) > MAX_STEPS:
                del kept[0]
    out = []
    for pod in sorted(steps):
        last = steps[pod][-1]
        out.append(PodTrace(pod=pod, status=last.status, node=last.node, attempts=attempts[pod],
                            decisions=counts[pod], wait=waits.get(pod), steps=steps[pod]))  # fmt: skip
    return out


def step(r: DecisionRecord) -> Step:
    feasible = sorted(
        ((n, res) for n, res in r.nodes.items() if res.feasible), key=lambda x: (-(x[1].total or 0), x[0])
    )
    reasons: dict[str, int] = {}
    if r.status != "Scheduled":
        if r.reasons:  # UNSET is falsy
            reasons = dict(r.reasons)
        else:
            reasons = dict(Counter(why for res in r.nodes.values() if not res.feasible for why in res.reasons))
    volumes = [f"{b.claim} -> {b.pv or 'provisioned'}" for b in r.volume_bindings]
    return Step(
        ts=r.ts,
        position=r.position,
        attempt=r.attempt,
        status=r.status,
        node=r.node,
        message=r.message,
        reasons=dict(sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0]))),
        nodes=[NodeScore(n, res.total or 0, dict(res.scores or {})) for n, res in feasible[:MAX_NODES]],
        feasible=len(feasible),
        volumes=volumes,
        nominated=r.nominated_node if isinstance(r.nominated_node, str) else None,
        victims=list(r.victims) if isinstance(r.victims, list) else [],
    )
