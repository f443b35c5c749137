"""`berth explain POD`: why a pod goes where it goes, per node, and what would make it fit.

On a snapshot the pod is decided as `berth evaluate` decides it (berth.core.scheduler.explain adds
the why); on a replay's decisions file it is explained from what the decision line holds."""

from __future__ import annotations

import argparse
import difflib
import gzip
from datetime import datetime
from typing import Any

import msgspec

from berth.core.api.core.model import Pod
from berth.core.cache.state import ClusterState
from berth.core.errors import InputError
from berth.core.pipeline.records import DecisionRecord, decode_record
from berth.core.plugins.registry import plugin_of
from berth.core.scheduler.explain import Explanation, Preemption, Rejected, Rejection, explain, scores_of
from berth.core.scheduler.results import Decision
from berth.core.scheduler.schedule_one import Scheduler
from berth_cli.common import STRICT_HELP, load_config, load_state, now_or, print_json, rfc3339
from berth_cli.evaluate import find_pod, hint_now, log_hint
from berth_cli.explain_text import render
from berth_cli.show import print_yaml

NO_STATE = (
    "a decision line holds kube's reasons and the scores, not the cluster: which pod, PV or amount is "
    "behind each reason, and what would make the pod fit, need a snapshot (berth explain --snapshot FILE POD)"
)


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "explain",
        help="why a pod goes where it goes, per node, and what would make it fit",
        description="Explain one pod's decision: per node the plugin that rejected it, kube's reason and the "
        "constraint behind it; the feasible nodes' scores per plugin with weights; preemption; and the smallest "
        "changes (tried on the state) that make a node fit. On a snapshot the pod is decided as `berth evaluate` "
        "decides it; on a replay's decisions file (--decisions) from what the decision line holds.",
    )
    p.add_argument("pod", metavar="[NS/]NAME", help="the pod (a bare NAME is in --namespace)")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--snapshot", metavar="FILE", help="objects as kubectl get -o yaml|json prints them; - for stdin")
    src.add_argument("--decisions", metavar="FILE", help="the decisions file `berth replay --decisions` writes")
    p.add_argument(
        "--config", metavar="FILE", help="KubeSchedulerConfiguration-style YAML (with --decisions: the weights)"
    )
    p.add_argument("--strict-config", action="store_true", help=STRICT_HELP)
    p.add_argument("--now", type=rfc3339, metavar="RFC3339", help="the clock for time-dependent rules (default: now)")
    p.add_argument("-n", "--namespace", metavar="NS", help="a bare pod name is in NS (default: default)")
    p.add_argument(
        "--alone",
        action="store_true",
        help="decide the pod against the snapshot as it is (`berth evaluate --pod POD`), not after the pods ahead "
        "of it in the queue",
    )
    p.add_argument(
        "--attempt",
        type=int,
        metavar="N",
        help="with --decisions: the pod's Nth decision in the file (default: its last)",
    )
    p.add_argument("--nodes", type=int, default=10, metavar="N", help="nodes shown per section in text (0: every one)")
    p.add_argument(
        "-o", "--output", choices=("text", "json", "yaml"), default="text", help="text (default), json or yaml"
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    out = from_snapshot(args) if args.snapshot is not None else from_decisions(args)
    if args.output == "json":
        print_json(out)
    elif args.output == "yaml":
        print_yaml(msgspec.to_builtins(out))
    else:
        render(out, args.nodes)
    return 0


# ---- a snapshot ------------------------------------------------------------------------------


def from_snapshot(args: argparse.Namespace) -> Explanation:
    state = ClusterState()
    config = load_config(args.config, args.strict_config)
    schedulers = {p.scheduler_name: Scheduler(p.build(state)) for p in config.profiles}
    try:
        load_state(args.snapshot, state)
    except InputError as e:
        if log_hint(args.snapshot, e):
            e.hint = (
                f"{args.snapshot} looks like an event log: replay it, `berth replay {args.snapshot} --all-nodes "
                "--decisions d.jsonl`, then `berth explain --decisions d.jsonl POD`"
            )
        raise
    source = "<stdin>" if args.snapshot == "-" else args.snapshot
    pod = find_pod(state, args.pod, args.namespace, source)
    if not pod.pending:
        raise InputError(source, f"Pod {pod.key}", f"is not pending (node {pod.node_name or '-'}, phase {pod.phase})")
    scheduler = schedulers.get(pod.scheduler_name)
    if scheduler is None:
        raise InputError(
            source,
            f"Pod {pod.key}",
            f"schedulerName {pod.scheduler_name} has no profile in the config: berth leaves it alone",
        )
    held = scheduler.pre_enqueue(pod)
    if held.rejects:
        raise InputError(source, f"Pod {pod.key}", f"is held back by {held.plugin}: {held.message}")
    now = now_or(args.now)
    ahead = [] if args.alone else _ahead(state, schedulers, pod, now)
    if args.now is None:
        hint_now(state, now, "explain")
    out = explain(scheduler, pod, now)
    if ahead:
        placed = sum(1 for d in ahead if d.status == "Scheduled")
        note = (
            f"decided as `berth evaluate` decides it: after the {len(ahead)} pending pod(s) ahead of it in the queue "
            f"({placed} placed and reserved, their requests and PVs counted); --alone decides it against the snapshot as it is"
        )
        out = msgspec.structs.replace(out, notes=[note, *out.notes])
    return out


def _ahead(state: ClusterState, schedulers: dict[str, Scheduler], pod: Pod, now: datetime) -> list[Decision]:
    """The pending pods ahead of the pod in berth evaluate's queue, decided and reserved as it does."""
    queue = next(iter(schedulers.values())).queue(state.pending_pods())
    out: list[Decision] = []
    for p in queue:
        if p.key == pod.key:
            break
        scheduler = schedulers.get(p.scheduler_name)
        if scheduler is None or scheduler.pre_enqueue(p).rejects:
            continue
        out += scheduler.run([p], now)
    return out


# ---- a decisions file ------------------------------------------------------------------------


def from_decisions(args: argparse.Namespace) -> Explanation:
    path = args.decisions
    records = _read(path)
    key = args.pod if "/" in args.pod else f"{args.namespace or 'default'}/{args.pod}"
    mine = [r for r in records if r.pod == key]
    if not mine:
        pods = sorted({r.pod for r in records})
        name = key.split("/", 1)[1]
        close = [p for p in pods if p.split("/", 1)[1] == name] or difflib.get_close_matches(key, pods, n=5, cutoff=0.6)
        problem = f"no decision for it in {len(records)} decision(s)"
        if close:
            problem += f"; did you mean {', '.join(close[:5])}?"
        if "/" not in args.pod:
            problem += " Write NS/NAME, or give -n NAMESPACE"
        raise InputError(path, f"Pod {args.pod}", problem)
    if args.attempt is not None and not 1 <= args.attempt <= len(mine):
        raise InputError(path, f"Pod {key}", f"--attempt {args.attempt}: it has {len(mine)} decision(s)")
    index = args.attempt or len(mine)
    record = mine[index - 1]
    decision = msgspec.convert(msgspec.to_builtins(record), Decision)
    config = load_config(args.config, args.strict_config)
    return explain_record(record, decision, dict(config.scores), (index, len(mine)), args.config)


def explain_record(
    record: DecisionRecord, decision: Decision, weights: dict[str, int], which: tuple[int, int], config: str | None
) -> Explanation:
    """What one decision line can say: reasons by plugin per listed node, the scores with weights,
    the margin and the preemption; and what it cannot."""
    rejected = []
    for name, r in decision.nodes.items():
        if not r.feasible:
            by: dict[str, list[str]] = {}
            for reason in r.reasons:
                by.setdefault(plugin_of(reason) or "", []).append(reason)
            rejected.append(Rejected(name, [Rejection(p, reasons) for p, reasons in by.items()]))
    scores, margin = scores_of(decision, weights)
    notes = [
        f"decision {which[0]} of the pod's {which[1]} in the file (attempt {record.attempt}, at {record.ts or '-'}, "
        f"log position {record.position}); --attempt N picks another"
    ]
    if not rejected and decision.status == "Unschedulable":
        counts = record.reasons if isinstance(record.reasons, dict) else {}
        shown = ", ".join(f"{n} {plugin_of(r) or '?'}: {r}" for r, n in sorted(counts.items(), key=lambda kv: -kv[1]))
        notes.append(
            f"the line lists no node: only kube's counts ({shown or 'none'}); which node gave which reason needs "
            "`berth replay --all-nodes`"
        )
    elif not rejected:
        notes.append(
            "the line lists only the best feasible nodes: rejected nodes and their reasons need `berth replay --all-nodes`"
        )
    bad = [s.node for s in scores if sum(p.weighted for p in s.parts) != s.total]
    if bad:
        notes.append(
            f"the scores do not add up to the totals with {'the weights of ' + config if config else 'the default weights'} "
            f"(e.g. {bad[0]}): give the --config the replay ran with"
        )
    notes.append(NO_STATE)
    preemption = None
    if isinstance(decision.nominated_node, str) and decision.nominated_node:
        preemption = Preemption(decision.nominated_node, decision.victims if isinstance(decision.victims, list) else [])
    return Explanation(decision.pod, decision, rejected, scores, margin, preemption, [], notes)


def _read(path: str) -> list[DecisionRecord]:
    """The decision records of a decisions file (.gz too); buffer statuses skipped. A line that is not a
    record is one error naming the line, with a hint when the file is a snapshot or an event log."""
    opener: Any = gzip.open if path.endswith(".gz") else open
    out = []
    try:
        with opener(path, "rb") as f:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    record = decode_record(line)
                except (msgspec.DecodeError, msgspec.ValidationError) as e:
                    raise InputError(path, f"line {n}", f"not a decision record: {e}", hint=_hint(path, line)) from None
                if isinstance(record, DecisionRecord):
                    out.append(record)
    except OSError as e:
        raise InputError(path, "", e.strerror or str(e)) from None
    return out


def _hint(path: str, line: bytes) -> str:
    text = line.decode("utf-8", "replace").lstrip()
    if text.startswith('{"type"') or '"object"' in text[:200]:
        return f"{path} looks like an event log: replay it first, `berth replay {path} --all-nodes --decisions d.jsonl`"
    if not text.startswith("{") or '"apiVersion"' in text[:200]:
        return f"{path} looks like a snapshot: give it as --snapshot {path}"
    return "give the file `berth replay --decisions` writes"
