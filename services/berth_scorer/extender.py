"""kube-scheduler's extender protocol (k8s.io/kube-scheduler/extender/v1) over the scorer's engine.

kube-scheduler POSTs ExtenderArgs to <urlPrefix>/filter and /prioritize, and ExtenderBindingArgs to
/bind when berth binds. With nodeCacheCapable it sends node names only: berth answers from its own
state (nodes, the per-node PV index), restricted to the names sent. The pod is taken from the
request, so a pod berth has not seen yet is answered too. Field names are Go's (no JSON tags).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import msgspec
from aiohttp import web

from berth.core.api.core.model import Pod
from berth.core.api.kinds import pod_from_raw
from berth.core.errors import InputError
from berth.core.framework.status import Code
from berth.core.pipeline.scorer import ScorerEngine
from berth.core.scheduler.schedule_one import Outcome

FILTER = "/scheduler/filter"
PRIORITIZE = "/scheduler/prioritize"
BIND = "/scheduler/bind"

MAX_EXTENDER_PRIORITY = 10  # extenderv1.MaxExtenderPriority
MAX_NODE_SCORE = 100  # a plugin's score range, framework.MaxNodeScore
UNKNOWN_NODE = "node(s) not (yet) known to berth"


class NodeList(msgspec.Struct):
    items: list[dict[str, Any]] = []


class ExtenderArgs(msgspec.Struct):
    pod: dict[str, Any] = msgspec.field(name="Pod")
    nodes: NodeList | None = msgspec.field(default=None, name="Nodes")
    node_names: list[str] | None = msgspec.field(default=None, name="NodeNames")


class ExtenderFilterResult(msgspec.Struct):
    nodes: NodeList | None = msgspec.field(default=None, name="Nodes")
    node_names: list[str] | None = msgspec.field(default=None, name="NodeNames")
    failed_nodes: dict[str, str] = msgspec.field(default_factory=dict, name="FailedNodes")
    failed_and_unresolvable_nodes: dict[str, str] = msgspec.field(
        default_factory=dict, name="FailedAndUnresolvableNodes"
    )
    error: str = msgspec.field(default="", name="Error")


class HostPriority(msgspec.Struct):
    host: str = msgspec.field(name="Host")
    score: int = msgspec.field(name="Score")


class ExtenderBindingArgs(msgspec.Struct):
    pod_name: str = msgspec.field(name="PodName")
    pod_namespace: str = msgspec.field(name="PodNamespace")
    pod_uid: str = msgspec.field(default="", name="PodUID")
    node: str = msgspec.field(default="", name="Node")


class ExtenderBindingResult(msgspec.Struct):
    error: str = msgspec.field(default="", name="Error")


def _names(args: ExtenderArgs) -> list[str]:
    if args.node_names is not None:
        return list(args.node_names)
    items = args.nodes.items if args.nodes is not None else []
    return [str((n.get("metadata") or {}).get("name", "")) for n in items]


def _evaluate(engine: ScorerEngine, args: ExtenderArgs) -> tuple[Pod, Outcome]:
    pod = pod_from_raw(args.pod)
    return pod, engine.evaluate(pod)


def filter_nodes(engine: ScorerEngine, args: ExtenderArgs) -> ExtenderFilterResult:
    """Which of the nodes sent the pod fits on, and why not on the others."""
    try:
        _, outcome = _evaluate(engine, args)
    except InputError as e:
        return ExtenderFilterResult(error=f"berth: the pod: {e}")
    d = outcome.decision
    if d.status == "Error":
        return ExtenderFilterResult(error=f"berth: {d.message}")
    passed: list[str] = []
    out = ExtenderFilterResult()
    for name in _names(args):
        result = d.nodes.get(name)
        if result is None:
            out.failed_nodes[name] = UNKNOWN_NODE
        elif result.feasible:
            passed.append(name)
        else:
            # the node's status as kube keeps it: its first failing plugin's code and reasons (joined
            # as Status.Message() joins them); a PreFilter rejection or UnschedulableAndUnresolvable:
            # preempting pods there would not help
            status = outcome.statuses.get(name) if outcome.statuses is not None else None
            reasons = status.reasons if status is not None else tuple(result.reasons)
            if outcome.pre_filter_rejected or (status is not None and status.code is Code.UNRESOLVABLE):
                out.failed_and_unresolvable_nodes[name] = ", ".join(reasons)
            else:
                out.failed_nodes[name] = ", ".join(reasons)
    if args.node_names is not None:
        out.node_names = passed
    else:
        keep = set(passed)
        items = args.nodes.items if args.nodes is not None else []
        out.nodes = NodeList([n for n in items if (n.get("metadata") or {}).get("name") in keep])
    return out


def to_extender_score(total: int, weight_sum: int) -> int:
    """berth's total (each plugin 0-100, times its weight) onto kube's extender scale 0-10, rounded."""
    if weight_sum <= 0:
        return 0
    scale = MAX_NODE_SCORE * weight_sum
    return max(0, min(MAX_EXTENDER_PRIORITY, (2 * total * MAX_EXTENDER_PRIORITY + scale) // (2 * scale)))


def prioritize(engine: ScorerEngine, args: ExtenderArgs) -> list[HostPriority]:
    """A score 0-10 for each node sent: 0 where the pod does not fit or the node is unknown."""
    _, outcome = _evaluate(engine, args)
    weight_sum = sum(w for _, w in engine.scheduler.profile.scorers)
    out = []
    for name in _names(args):
        result = outcome.decision.nodes.get(name)
        total = result.total if result is not None and result.feasible else None
        out.append(HostPriority(name, to_extender_score(total or 0, weight_sum)))
    return out


BindFn = Callable[[ExtenderBindingArgs], Awaitable[str]]


class Routes:
    """The extender's HTTP handlers. `engine` is called per request: the scorer swaps its engine on
    takeover. `bind` returns an error message ("" when bound); None: berth does not bind."""

    def __init__(self, engine: Callable[[], ScorerEngine], bind: BindFn | None = None) -> None:
        self.engine = engine
        self.bind_fn = bind
        self._encoder = msgspec.json.Encoder()

    def add_to(self, app: web.Application) -> None:
        app.router.add_post(FILTER, self.filter)
        app.router.add_post(PRIORITIZE, self.prioritize)
        app.router.add_post(BIND, self.bind)

    def _json(self, obj: Any) -> web.Response:
        return web.Response(body=self._encoder.encode(obj), content_type="application/json")

    async def filter(self, request: web.Request) -> web.Response:
        try:
            args = msgspec.json.decode(await request.read(), type=ExtenderArgs)
        except msgspec.DecodeError as e:
            return self._json(ExtenderFilterResult(error=f"berth: bad ExtenderArgs: {e}"))
        return self._json(filter_nodes(self.engine(), args))

    async def prioritize(self, request: web.Request) -> web.Response:
        try:
            args = msgspec.json.decode(await request.read(), type=ExtenderArgs)
            return self._json(prioritize(self.engine(), args))
        except (msgspec.DecodeError, InputError) as e:
            return web.Response(status=400, text=f"berth: {e}\n")

    async def bind(self, request: web.Request) -> web.Response:
        try:
            args = msgspec.json.decode(await request.read(), type=ExtenderBindingArgs)
        except msgspec.DecodeError as e:
            return self._json(ExtenderBindingResult(f"berth: bad ExtenderBindingArgs: {e}"))
        if self.bind_fn is None:
            return self._json(ExtenderBindingResult("berth: the scorer does not bind (run `berth scorer --bind`)"))
        return self._json(ExtenderBindingResult(await self.bind_fn(args)))
