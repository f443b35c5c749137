"""kube-scheduler's extender protocol (k8s.io/kube-scheduler/extender/v1) over the scorer's engine.

kube-scheduler POSTs ExtenderArgs to <urlPrefix>/filter and /prioritize, and ExtenderBindingArgs to
/bind when berth binds. With nodeCacheCapable it sends node names only: berth answers from its own
state (nodes, the per-node PV index), restricted to the names sent. The pod is taken from the
request, so a pod berth has not seen yet is answered too; a node or claim it has not seen yet is an
error (kube-scheduler retries). prioritize scores only with what kube-scheduler lacks (capacity
priority, LoadAwareScheduling: EXTRA_SCORE_PLUGINS). Field names are Go's (no JSON tags).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import msgspec
from aiohttp import web

from berth.core.api.core.model import Pod
from berth.core.api.kinds import pod_from_raw
from berth.core.errors import ConfigError, InputError
from berth.core.framework.status import Code
from berth.core.pipeline.scorer import ScorerEngine

FILTER = "/scheduler/filter"
PRIORITIZE = "/scheduler/prioritize"
BIND = "/scheduler/bind"

MAX_EXTENDER_PRIORITY = 10  # extenderv1.MaxExtenderPriority
MAX_NODE_SCORE = 100  # a plugin's score range, framework.MaxNodeScore


class Lagging(Exception):
    """berth has not seen everything the request names yet."""


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


def behind(engine: ScorerEngine, pod: Pod, names: list[str]) -> str | None:
    """What the request names that berth has not seen yet, or None. kube-scheduler's own filters have
    passed them, so berth's view lags its watch: an Error makes kube-scheduler retry the pod with
    backoff (or go on without berth if the extender is ignorable), where a failed node would leave
    the pod waiting as unschedulable for a cluster event."""
    claims = [f"{pod.namespace}/{v.claim_name}" for v in pod.volumes]
    missing = [f"persistentvolumeclaim {c}" for c in claims if c not in engine.state.pvcs]
    missing += [f"node {n}" for n in names if n not in engine.state.nodes.slot]
    if not missing:
        return None
    more = f" and {len(missing) - 3} more" if len(missing) > 3 else ""
    return f"berth has not seen {', '.join(missing[:3])}{more} yet (its watch is behind)"


def kube_allocates_claims(pod: Pod) -> Pod:
    """The pod as berth decides it for the extender: kube-scheduler, which calls the extender, allocates
    the pod's ResourceClaims itself (its DynamicResources), so berth answers for the rest rather than
    failing the pod with "dynamic resource allocation is not modelled"."""
    return msgspec.structs.replace(pod, resource_claims=()) if pod.resource_claims else pod


def filter_nodes(engine: ScorerEngine, args: ExtenderArgs) -> ExtenderFilterResult:
    """Which of the nodes sent the pod fits on, and why not on the others."""
    try:
        pod = pod_from_raw(args.pod)
    except InputError as e:
        return ExtenderFilterResult(error=f"berth: the pod: {e}")
    names = _names(args)
    lag = behind(engine, pod, names)
    if lag is not None:
        return ExtenderFilterResult(error=f"berth: {lag}")
    outcome = engine.evaluate(kube_allocates_claims(pod))
    d = outcome.decision
    if d.status == "Error":
        return ExtenderFilterResult(error=f"berth: {d.message}")
    passed: list[str] = []
    out = ExtenderFilterResult()
    for name in names:
        result = d.nodes[name]
        if result.feasible:
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


# What kube-scheduler 1.36 lacks by default: capacity priority (its VolumeBinding scores nothing while the
# StorageCapacityScoring gate is off, as it is by default) and Koordinator's load-aware scheduling. Its own
# plugins it has already scored; berth's copy of them would count twice.
EXTRA_SCORE_PLUGINS = ("VolumeBinding", "LoadAwareScheduling")


def extra_weights(engine: ScorerEngine, plugins: tuple[str, ...] = ()) -> dict[str, int]:
    """The profile's weight of each plugin the extender scores with (none named: those of
    EXTRA_SCORE_PLUGINS the profile scores with); ConfigError for a named one it does not score."""
    weights = {p.name: w for p, w in engine.scheduler.profile.scorers}
    if not plugins:
        return {name: weights[name] for name in EXTRA_SCORE_PLUGINS if name in weights}
    missing = [name for name in plugins if name not in weights]
    if missing:
        have = ", ".join(weights) or "none"
        raise ConfigError(
            [f"BERTH_EXTENDER_SCORE_PLUGINS: {', '.join(missing)} not a score plugin of the profile (it has: {have})"]
        )
    return {name: weights[name] for name in plugins}


def to_extender_score(scores: Mapping[str, int], weights: Mapping[str, int]) -> int:
    """The weighted mean of the extra plugins' 0-100 scores on kube's extender scale 0-10, rounded half up.

    kube-scheduler multiplies it by the extender's weight and by 10: with that weight set to the sum of
    `weights`, the extras add what they would as plugins in kube's own profile, to the nearest ten."""
    weight_sum = sum(weights.values())
    if weight_sum <= 0:
        return 0
    total = sum(w * scores.get(name, 0) for name, w in weights.items())
    scale = MAX_NODE_SCORE * weight_sum
    return max(0, min(MAX_EXTENDER_PRIORITY, (2 * total * MAX_EXTENDER_PRIORITY + scale) // (2 * scale)))


def prioritize(engine: ScorerEngine, args: ExtenderArgs, plugins: tuple[str, ...] = ()) -> list[HostPriority]:
    """A score 0-10 for each node sent, from the extra plugins only: 0 where the pod does not fit.
    Lagging: berth's view is behind (kube-scheduler then goes on without berth's scores)."""
    pod = pod_from_raw(args.pod)
    names = _names(args)
    lag = behind(engine, pod, names)
    if lag is not None:
        raise Lagging(lag)
    outcome = engine.evaluate(kube_allocates_claims(pod))
    weights = extra_weights(engine, plugins)
    out = []
    for name in names:
        result = outcome.decision.nodes.get(name)
        scores = result.scores if result is not None and result.feasible else None
        out.append(HostPriority(name, to_extender_score(scores or {}, weights)))
    return out


BindFn = Callable[[ExtenderBindingArgs], Awaitable[str]]


class Routes:
    """The extender's HTTP handlers. `engine` is called per request: the scorer swaps its engine on
    takeover. `bind` returns an error message ("" when bound); None: berth does not bind."""

    def __init__(
        self,
        engine: Callable[[], ScorerEngine],
        bind: BindFn | None = None,
        score_plugins: tuple[str, ...] = (),
    ) -> None:
        self.engine = engine
        self.bind_fn = bind
        self.score_plugins = score_plugins
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
            return self._json(prioritize(self.engine(), args, self.score_plugins))
        except (msgspec.DecodeError, InputError) as e:
            return web.Response(status=400, text=f"berth: {e}\n")
        except Lagging as e:
            return web.Response(status=503, text=f"berth: {e}\n")

    async def bind(self, request: web.Request) -> web.Response:
        try:
            args = msgspec.json.decode(await request.read(), type=ExtenderBindingArgs)
        except msgspec.DecodeError as e:
            return self._json(ExtenderBindingResult(f"berth: bad ExtenderBindingArgs: {e}"))
        if self.bind_fn is None:
            return self._json(ExtenderBindingResult("berth: the scorer does not bind (run `berth scorer --bind`)"))
        return self._json(ExtenderBindingResult(await self.bind_fn(args)))
