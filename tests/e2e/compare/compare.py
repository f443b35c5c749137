"""What must agree between kube-scheduler's decision on a pod and berth's, on the same state:

- scheduled or not;
- the node: kube breaks ties between the best nodes at random (selectHost), berth by name, so kube's node
  must be one of berth's top-scoring feasible nodes (or berth's node, when berth took the pod's nominated node
  without scoring, as kube's evaluateNominatedNode does);
- the PV of each claim, on kube's node: kube takes the smallest PV that fits, ties in its cache's order,
  berth the smallest by name, so a different PV of the same size (and class) is a tie, not a difference;
- an unschedulable pod's FailedScheduling message, byte for byte;
- a preemption's nominated node and victims. kube picks among equal candidates at random
  (pickOneNodeForPreemption's last step) and starts its dry run at a random node: a different node is a
  tie when kube's candidate is as good by every criterion berth compares.
"""

from __future__ import annotations

from collections.abc import Callable

from berth.core.api.core.model import Pod
from berth.core.plugins.defaultpreemption import DefaultPreemption, violates_pdb
from berth.core.scheduler.results import Decision
from tests.e2e.cluster import Kube
from tests.e2e.compare.runner import Berth, KubeResult


def top_nodes(d: Decision) -> tuple[int | None, set[str]]:
    totals = {n: r.total for n, r in d.nodes.items() if r.feasible and r.total is not None}
    if not totals:
        return None, set()
    best = max(totals.values())
    return best, {n for n, t in totals.items() if t == best}


def differences(kube: Kube, berth: Berth, k: KubeResult) -> list[str]:
    d = berth.decision
    out: list[str] = []
    if k.nominated:
        if d.status != "Unschedulable":
            return [f"kube preempted on {k.nominated} (victims {k.victims}); berth {d.status} {d.node}"]
        if d.message != k.message:
            out.append(f"message:\n  kube:  {k.message}\n  berth: {d.message}")
        out += preemption(berth, k)
        return out
    if k.bound is not None:
        if d.status != "Scheduled":
            return [f"kube bound it to {k.bound}; berth {d.status}: {d.message}"]
        best, top = top_nodes(d)
        chosen = d.nodes.get(d.node or "")
        if chosen is not None and chosen.total is None:  # kube's nominated node first: nothing scored
            top = {d.node or ""}
        if k.bound not in top:
            mine = d.nodes.get(k.bound)
            why = "not listed" if mine is None else (mine.reasons if not mine.feasible else mine.scores)
            out.append(
                f"kube bound it to {k.bound} ({why}, total {mine and mine.total}); berth's best {sorted(top)} "
                f"(total {best}, scores {d.nodes[d.node or ''].scores})"
            )
            return out
        on = d if d.node == k.bound else berth.on(k.bound)
        out += volumes(berth, on, k)
        return out
    if d.status != "Unschedulable":
        return [f"kube: {k.message!r}; berth {d.status} on {d.node}"]
    if d.message != k.message:
        out.append(f"message:\n  kube:  {k.message}\n  berth: {d.message}")
    if d.nominated_node:
        out.append(f"berth nominated {d.nominated_node} (victims {d.victims}); kube nominated nothing")
    return out


def volumes(berth: Berth, on: Decision, k: KubeResult) -> list[str]:
    mine = {b.claim: b for b in on.volume_bindings}
    out = []
    pvs = berth.state.pvs
    for claim, pv in k.volumes.items():
        before = berth.state.pvcs.get(claim)
        if before is not None and before.volume_name:  # bound already: nothing for either to choose
            continue
        b = mine.get(claim)
        if b is None:
            out.append(f"claim {claim}: kube bound {pv}; berth binds nothing")
        elif b.provision is not None:
            if pv in pvs:  # a PV that was there before: kube bound a static one
                out.append(f"claim {claim}: kube bound {pv}; berth provisions")
        elif b.pv != pv:
            theirs, ours = pvs.get(pv), pvs.get(b.pv or "")
            same = theirs is not None and ours is not None and theirs.capacity == ours.capacity
            if not same or theirs.storage_class != ours.storage_class:  # type: ignore[union-attr]
                out.append(f"claim {claim}: kube bound {pv}; berth {b.pv}")
    for claim in k.provisioned:
        b = mine.get(f"{berth.decision.pod.split('/')[0]}/{claim}")
        if b is None or b.provision is None:
            out.append(f"claim {claim}: kube provisions it; berth {b and b.pv}")
    return out


def preemption(berth: Berth, k: KubeResult) -> list[str]:
    d = berth.decision
    if not d.nominated_node:
        return [f"kube nominated {k.nominated} (victims {k.victims}); berth nominated nothing"]
    ours = sorted(d.victims or [])
    if d.nominated_node == k.nominated and ours == k.victims:
        return []
    plugin = next(p for p in berth.scheduler.profile.post_filters if isinstance(p, DefaultPreemption))
    rank = criteria(berth, plugin)
    state_pods = berth.state.pods
    theirs = [state_pods[v] for v in k.victims if v in state_pods]
    mine = [state_pods[v] for v in ours if v in state_pods]
    if len(theirs) == len(k.victims) and rank(theirs) == rank(mine):
        return []  # an equal candidate: kube's random choice
    return [
        f"preemption: kube nominated {k.nominated} victims {k.victims} {rank(theirs)}; "
        f"berth {d.nominated_node} victims {ours} {rank(mine)}"
    ]


def criteria(berth: Berth, plugin: DefaultPreemption) -> Callable[[list[Pod]], tuple[int, int, int, int, float]]:
    """pickOneNodeForPreemption's criteria for a node's victims (lower is better)."""
    prio = plugin.state.priority
    pdbs = list(plugin.store.pdbs.values())
    now = berth.now.timestamp()

    def rank(victims: list[Pod]) -> tuple[int, int, int, int, float]:
        if not victims:
            return (0, 0, 0, 0, 0.0)
        order = sorted(victims, key=lambda p: (-prio(p), p.start_time.timestamp() if p.start_time else now))
        top = prio(order[0])
        earliest = min((p.start_time.timestamp() if p.start_time else now) for p in order if prio(p) == top)
        return (
            sum(violates_pdb(order, pdbs)),
            top,
            sum(prio(p) + 2**31 for p in order),
            len(order),
            -earliest,
        )

    return rank
