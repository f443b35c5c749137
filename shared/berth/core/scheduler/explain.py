"""`berth explain`: why a pod goes where it goes, and what would make it fit, from the scheduler's
own cycle: the decision is Scheduler.decide's, unchanged; the constraint behind each Filter reason
comes from the plugin's state (framework.ExplainsFilter); each suggested change is tried on the
state (pods lifted, a node's or PV's trial copy) and kept only if the filters then pass the node.
Every trial is undone before the next one."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from typing import Any

import msgspec
import numpy as np

from berth.core.api.core.model import Pod, Toleration
from berth.core.api.core.resources import show, show_bytes
from berth.core.api.meta.quantity import ceil_units
from berth.core.framework.cycle import Cycle
from berth.core.framework.interface import Change, ExplainsFilter, ExplainsNodeSet, Why
from berth.core.framework.status import Code, PreFilterResult, unsatisfied
from berth.core.scheduler.results import Decision
from berth.core.scheduler.schedule_one import Scheduler

TRIED = 10  # changes tried, the closest nodes first
KEPT = 5  # suggestions kept


class Detail(msgspec.Struct, frozen=True):
    text: str
    facts: dict[str, Any]


class Rejection(msgspec.Struct, frozen=True, omit_defaults=True):
    """One plugin's verdict on a node: kube's reasons (as the decision has them) and the constraints."""

    plugin: str
    reasons: list[str]
    details: list[Detail] = []


class Rejected(msgspec.Struct, frozen=True, omit_defaults=True):
    """A node's rejections; nominated: the pods nominated to it (with their priority) when the node
    fails only with them counted as placed there (kube's second filter pass)."""

    node: str
    plugins: list[Rejection]
    nominated: list[str] = []


class Part(msgspec.Struct, frozen=True):
    """One Score plugin on one node: its 0-100 score, its weight, score x weight, and that as a share
    of the node's total (percent)."""

    plugin: str
    score: int
    weight: int
    weighted: int
    share: float


class Scored(msgspec.Struct, frozen=True):
    node: str
    total: int
    parts: list[Part]


class Margin(msgspec.Struct, frozen=True, rename="camel"):
    """The winner's total over the runner-up's, and each plugin's weighted difference."""

    winner: str
    runner_up: str
    by: int
    plugins: dict[str, int]


class Preemption(msgspec.Struct, frozen=True, rename="camel"):
    nominated_node: str
    victims: list[str]


class Suggestion(msgspec.Struct, frozen=True, omit_defaults=True):
    """A change after which the filters pass the node (tried on the state, not guessed)."""

    node: str
    text: str
    leave: list[str] = []
    more: dict[str, int] = {}  # resource -> amount the node's allocatable would need on top
    resize: dict[str, str] = {}  # PV -> capacity that would bind
    tolerate: list[str] = []
    relabel: dict[str, dict[str, str]] = {}  # PV -> labels it would need


class Explanation(msgspec.Struct, frozen=True, omit_defaults=True):
    pod: str
    decision: Decision
    rejected: list[Rejected] = []
    scores: list[Scored] = []
    margin: Margin | None = None
    preemption: Preemption | None = None
    suggestions: list[Suggestion] = []
    notes: list[str] = []


@dataclass
class _Found:
    """What the filters, run again in a fresh cycle, say per slot: each rejecting plugin (in filter
    order) with its constraints; the PreFilters' node sets, each with why."""

    plugins: dict[int, list[str]]
    whys: dict[tuple[int, str], list[Why]]
    pre_filter: str = ""  # a PreFilter turned the pod away: its plugin
    pre_filter_message: str = ""
    node_sets: dict[str, tuple[frozenset[str], str]] = field(default_factory=dict)  # plugin -> (nodes, why)


def explain(scheduler: Scheduler, pod: Pod, now: datetime) -> Explanation:
    """The pod decided as Scheduler.decide decides it (nothing is reserved), with why."""
    decision = scheduler.decide(pod, now).decision
    found = _filters(scheduler, pod, now)
    slots = scheduler.state.nodes.slot
    nominated = scheduler.nominator.for_pod(pod)
    rejected = []
    for name, r in decision.nodes.items():
        if r.feasible:
            continue
        slot = slots.get(name, -1)
        if slot >= 0 and slot not in found.plugins and not _outside(found, name) and nominated.get(name):
            rejected.append(_with_nominated(scheduler, pod, now, slot, nominated[name], r.reasons))
        else:
            rejected.append(Rejected(name, _rejections(found, slot, name, r.reasons)))
    scores, margin = scores_of(decision, dict((p.name, w) for p, w in scheduler.profile.scorers))
    preemption = None
    if isinstance(decision.nominated_node, str) and decision.nominated_node:
        victims = decision.victims if isinstance(decision.victims, list) else []
        preemption = Preemption(decision.nominated_node, victims)
    suggestions: list[Suggestion] = []
    notes: list[str] = []
    if found.pre_filter:
        notes.append(
            f"{found.pre_filter}'s PreFilter turned the pod away before any node was looked at: {found.pre_filter_message}"
        )
    elif decision.status == "Unschedulable":
        suggestions = _suggest(scheduler, pod, now, found, rejected)
        held = [r.node for r in rejected if r.nominated]
        if held:
            notes.append(
                f"{len(held)} node(s) fail only with the pods nominated to them ({', '.join(held[:5])}"
                f"{', …' if len(held) > 5 else ''}): no change is tried there"
            )
        if not suggestions:
            notes.append(
                "no change berth can try (pods leaving, more allocatable, a larger PV or one in the node's zone, "
                "a toleration) makes a node fit"
            )
    return Explanation(decision.pod, decision, rejected, scores, margin, preemption, suggestions, notes)


def _outside(found: _Found, node: str) -> bool:
    return any(node not in names for names, _ in found.node_sets.values())


def _with_nominated(
    scheduler: Scheduler, pod: Pod, now: datetime, slot: int, pods: list[Pod], reasons: list[str]
) -> Rejected:
    """A node the filters pass that fails with the pods nominated to it placed there (kube's second
    pass, RunFilterPluginsWithNominatedPods): its constraints found with them placed, then undone."""
    state = scheduler.state
    node = state.nodes.names[slot] or ""
    shown = [f"{p.key} (priority {state.priority(p)})" for p in pods]
    with scheduler.placed(pods, node):
        found = _filters(scheduler, pod, now, np.array([slot]))
    lead = Detail(
        f"the node passes the filters alone; it fails with the pods nominated to it counted as placed there "
        f"(pods of at least this pod's priority {state.priority(pod)}): {', '.join(shown)}",
        {"nominated": [{"pod": p.key, "priority": state.priority(p)} for p in pods]},
    )
    plugins = [msgspec.structs.replace(r, details=[lead, *r.details]) for r in _rejections(found, slot, node, reasons)]
    return Rejected(node, plugins, shown)


def scores_of(decision: Decision, weights: dict[str, int]) -> tuple[list[Scored], Margin | None]:
    """Feasible nodes by total (highest first, then name): each plugin's score, weight and share;
    the winner's margin over the runner-up. Weights unknown to `weights` count as 1."""
    ranked = sorted(((n, r) for n, r in decision.nodes.items() if r.feasible), key=lambda x: (-(x[1].total or 0), x[0]))
    out = []
    for name, r in ranked:
        total = r.total or 0
        parts = []
        for plugin, score in sorted((r.scores or {}).items(), key=lambda kv: (-kv[1] * weights.get(kv[0], 1), kv[0])):
            weight = weights.get(plugin, 1)
            share = round(100 * score * weight / total, 1) if total else 0.0
            parts.append(Part(plugin, score, weight, score * weight, share))
        out.append(Scored(name, total, parts))
    margin = None
    if len(out) >= 2:
        first = next((s for s in out if s.node == decision.node), out[0])
        second = next(s for s in out if s is not first)
        mine = {p.plugin: p.weighted for p in first.parts}
        theirs = {p.plugin: p.weighted for p in second.parts}
        diff = {k: mine.get(k, 0) - theirs.get(k, 0) for k in sorted(set(mine) | set(theirs))}
        margin = Margin(first.node, second.node, first.total - second.total, {k: v for k, v in diff.items() if v})
    return out, margin


def _filters(scheduler: Scheduler, pod: Pod, now: datetime, only: np.ndarray | None = None) -> _Found:
    """PreFilter and Filter again in a fresh cycle, as the scheduler runs them, and each rejecting
    plugin's explain_filter on the slots it rejected (only: on these slots only)."""
    cycle = Cycle(pod=pod, state=scheduler.state, now=now)
    found = _Found({}, {})
    skipped = set()
    for plugin in scheduler.profile.pre_filters:
        status = plugin.pre_filter(cycle)
        if status.rejects or status.code is Code.ERROR:
            found.pre_filter, found.pre_filter_message = plugin.name, status.message
            return found
        if status.code is Code.SKIP:
            skipped.add(plugin.name)
        elif isinstance(status, PreFilterResult):
            why = plugin.explain_node_set(cycle) if isinstance(plugin, ExplainsNodeSet) else ""
            found.node_sets[plugin.name] = (status.node_names, why)
    cycle.skip_filter = frozenset(skipped)
    for filt in scheduler.profile.filters:
        if filt.name in skipped:
            continue
        failing = [f for f in filt.filter(cycle) if f.code is not Code.ERROR and np.count_nonzero(f.mask)]
        if not failing:
            continue
        mask = np.logical_or.reduce([f.mask for f in failing])
        hit = np.flatnonzero(mask)
        if only is not None:
            hit = np.intersect1d(hit, only)
        for s in hit.tolist():
            found.plugins.setdefault(s, []).append(filt.name)
        if isinstance(filt, ExplainsFilter) and len(hit):
            for s, whys in filt.explain_filter(cycle, hit).items():
                found.whys[(s, filt.name)] = whys
    return found


def _rejections(found: _Found, slot: int, node: str, reasons: list[str]) -> list[Rejection]:
    """The decision's reasons on a node, each under the plugin that gave it, with its constraints."""
    out: list[Rejection] = []
    left = list(reasons)
    outside = sorted(p for p, (names, _) in found.node_sets.items() if node not in names)
    if outside and unsatisfied(outside) in left:
        left.remove(unsatisfied(outside))
        details = []
        for p in outside:
            names, why = found.node_sets[p]
            listed = ", ".join(sorted(names)[:10]) + (f" and {len(names) - 10} more" if len(names) > 10 else "")
            text = f"the node is outside {p}'s PreFilter node set ({listed}): kube runs no filter on it"
            details.append(Detail(f"{text}; {why}" if why else text, {"plugin": p, "nodeSet": sorted(names)}))
        out.append(Rejection(", ".join(outside), [unsatisfied(outside)], details))
    for plugin in found.plugins.get(slot, []):
        whys = found.whys.get((slot, plugin), [])
        mine = [r for r in left if any(w.reason == r for w in whys)]
        if not mine and not whys:
            continue
        left = [r for r in left if r not in mine]
        out.append(Rejection(plugin, mine, [Detail(w.text, w.facts) for w in whys]))
    # reasons no explaining plugin claimed: named by the plugin that failed there, in filter order
    named = [p for p in found.plugins.get(slot, []) if p not in {r.plugin for r in out}]
    for reason in left:
        out.append(Rejection(named.pop(0) if named else (found.pre_filter or ""), [reason]))
    return out


def _suggest(
    scheduler: Scheduler, pod: Pod, now: datetime, found: _Found, rejected: list[Rejected]
) -> list[Suggestion]:
    """Per rejected node, the changes its plugins expect would lift their constraints there, merged
    (and, where a plugin has another, the change with it instead); the closest nodes' tried first,
    each node's own change before its other one, the ones after which the node passes kept."""
    slots = scheduler.state.nodes.slot
    nodes = []
    for r in rejected:
        slot = slots.get(r.node)
        if slot is None or r.nominated:
            continue
        plugins = found.plugins.get(slot, [])
        whys = [w for p in plugins for w in found.whys.get((slot, p), [])]
        covered = {p for p in plugins if found.whys.get((slot, p))}
        if not plugins or covered != set(plugins) or any(w.change is None for w in whys) or _outside(found, r.node):
            continue
        change = _merge([w.change for w in whys if w.change is not None])
        changes = [change]
        if any(w.instead is not None for w in whys):
            changes.append(_merge([c for w in whys if (c := w.instead or w.change) is not None]))
        nodes.append(((_size(change), change.cost, r.node), slot, changes))
    nodes.sort(key=lambda c: c[0])
    tried = [(key[2], slot, change) for key, slot, changes in nodes for change in changes][:TRIED]
    out = []
    for node, slot, change in tried:
        if _fits_after(scheduler, pod, now, slot, change):
            out.append(_suggestion(scheduler, node, change))
            if len(out) == KEPT:
                break
    return out


def _merge(changes: list[Change]) -> Change:
    leave = tuple(dict.fromkeys(k for c in changes for k in c.leave))
    more: dict[str, int] = {}
    for c in changes:
        for k, v in c.more:
            more[k] = max(more.get(k, 0), v)
    resize: dict[str, int] = {}
    for c in changes:
        for k, v in c.resize:
            resize[k] = max(resize.get(k, 0), v)
    tolerate = tuple(dict.fromkeys(t for c in changes for t in c.tolerate))
    relabel: dict[str, dict[str, str]] = {}
    for c in changes:
        for pv, labels in c.relabel:
            relabel.setdefault(pv, {}).update(labels)
    return Change(
        leave,
        tuple(sorted(more.items())),
        tuple(sorted(resize.items())),
        tolerate,
        tuple((pv, tuple(sorted(labels.items()))) for pv, labels in sorted(relabel.items())),
        sum(c.cost for c in changes),
    )


def _size(change: Change) -> tuple[int, int]:
    """Fewer things changed first; then less taken away (pods leaving count most)."""
    n = len(change.leave) + len(change.more) + len(change.resize) + len(change.tolerate) + len(change.relabel)
    return (n, len(change.leave))


def _fits_after(scheduler: Scheduler, pod: Pod, now: datetime, slot: int, change: Change) -> bool:
    """Whether the filters pass the node with the change made on the state (then undone)."""
    state = scheduler.state
    undo: list[Callable[[], Any]] = []
    try:
        for key in change.leave:
            lifted = state.lift(key)
            if lifted is not None:
                undo.append(partial(state.put_back, lifted))
        node = state.nodes.node(slot)
        if change.more and node is not None:
            alloc = dict(node.allocatable)
            for k, v in change.more:
                alloc[k] = alloc.get(k, 0) + v
            state.trial_node(msgspec.structs.replace(node, allocatable=alloc))
            undo.append(partial(state.trial_node, node))
        for name, capacity in change.resize:
            pv = state.pvs.get(name)
            if pv is not None:
                state.trial_pv(msgspec.structs.replace(pv, capacity=capacity))
                undo.append(partial(state.trial_pv, pv))
        for name, labels in change.relabel:
            pv = state.pvs.get(name)
            if pv is not None:
                state.trial_pv(msgspec.structs.replace(pv, labels={**pv.labels, **dict(labels)}))
                undo.append(partial(state.trial_pv, pv))
        tolerations = tuple(t for t in change.tolerate if isinstance(t, Toleration))
        trial = msgspec.structs.replace(pod, tolerations=(*pod.tolerations, *tolerations)) if tolerations else pod
        feasible, _ = scheduler.dry_run(Cycle(pod=trial, state=state, now=now))
        return bool(feasible[slot])
    finally:
        for step in reversed(undo):
            step()


def _suggestion(scheduler: Scheduler, node: str, change: Change) -> Suggestion:
    parts = []
    if change.leave:
        parts.append(f"{', '.join(change.leave)} {'leaves' if len(change.leave) == 1 else 'leave'}")
    if change.more:
        amounts = ", ".join(f"{show(k, v)} {k}" for k, v in change.more)
        parts.append(f"it had {amounts} more allocatable (or that much freed)")
    resize = {}
    for name, capacity in change.resize:
        pv = scheduler.state.pvs.get(name)
        had = show_bytes(ceil_units(pv.capacity)) if pv is not None else "?"
        resize[name] = show_bytes(ceil_units(capacity))
        parts.append(f"PV {name} had {resize[name]} (it has {had})")
    relabel = {name: dict(labels) for name, labels in change.relabel}
    for name, labels in relabel.items():
        shown = ", ".join(f"{k}={v}" for k, v in labels.items())
        parts.append(f"PV {name} were in the node's topology ({shown}), or the claim bound to a PV there")
    tolerate = [f"{t.key}={t.value}:{t.effect}" if t.value else f"{t.key}:{t.effect}" for t in change.tolerate]
    if tolerate:
        parts.append(f"the pod tolerated {', '.join(tolerate)}")
    return Suggestion(
        node,
        f"{node} fits if {' and '.join(parts)}",
        list(change.leave),
        dict(change.more),
        resize,
        tolerate,
        relabel,
    )
