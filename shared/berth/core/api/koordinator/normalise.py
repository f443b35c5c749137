"""Normalisation of Koordinator's NodeMetric: the wire Struct (berth.core.api.koordinator.wire) to the model."""

from __future__ import annotations

import re
from collections.abc import Sequence

import msgspec
from msgspec.structs import astuple

from berth.core.api.koordinator import wire as wl
from berth.core.api.koordinator.model import AggregatedUsage, NodeMetric, PodMetric
from berth.core.api.meta.durations import DurationError, parse_duration
from berth.core.api.meta.normalise import EMPTY_META, Bad, kept_time, moment, name_of, plain, positional, resource_list

_DURATIONS: dict[str, int] = {}


def _duration(text: str) -> int:
    ns = _DURATIONS.get(text)
    if ns is None:
        try:
            ns = parse_duration(text)
        except DurationError as e:
            raise Bad("", str(e)) from None
        if len(_DURATIONS) >= 1024:
            _DURATIONS.clear()
        _DURATIONS[text] = ns
    return ns


def _usage(v: wl.Usage | None, at: str) -> dict[str, int]:
    if v is None:
        return {}
    try:
        return resource_list(v.resources)
    except Bad as e:
        raise e.under(f"{at}.resources") from None


def aggregated(m: NodeMetric) -> tuple[AggregatedUsage, ...]:
    """A NodeMetric's aggregated usages, normalised (checked when the metric was read: they normalise)."""
    items = m.aggregated
    if isinstance(items, msgspec.Raw):
        return _aggregated(_entries.decode(items) or ())
    return _aggregated(items)


_entries = msgspec.json.Decoder(list[wl.AggregatedNodeUsage | None] | None)

# The aggregated usages as Koordinator writes them, each value a plain amount (amounts.plain) and each
# duration hours, minutes and seconds, all certainly within what the exact parsers take: null, [] or
# [{"duration":"5m0s","usage":{"avg":{"resources":{"cpu":"5762m","memory":"44904318Ki"}},...}},...],
# without spaces. Possessive throughout: text that does not match fails at once, without backtracking.
_AMOUNT = rb'"[0-9]{1,12}+(?:m|Ki)?+"'
_NAME = rb'"[ !#-\[\]-~]*+"'  # printable ASCII, no escapes
_RESOURCES = rb'\{"resources":\{(?:' + _NAME + b":" + _AMOUNT + rb"(?:," + _NAME + b":" + _AMOUNT + rb")*+)?+\}\}"
_AGGREGATIONS = (b"avg", b"p50", b"p90", b"p95", b"p99")
_TYPE = rb'"(?:' + b"|".join(_AGGREGATIONS) + rb')"'
_USAGE = rb'"usage":\{(?:' + _TYPE + b":" + _RESOURCES + rb"(?:," + _TYPE + b":" + _RESOURCES + rb")*+)?+\}"
_ENTRY = rb'\{"duration":"(?:[0-9]{1,4}+h)?+(?:[0-9]{1,4}+m)?+[0-9]{1,4}+s",' + _USAGE + rb"\}"
_PLAIN_ENTRIES = re.compile(rb"null|\[\]|\[" + _ENTRY + rb"(?:," + _ENTRY + rb")*+\]")


def _raw_checked(raw: msgspec.Raw | bytes) -> tuple[()] | msgspec.Raw:
    """The raw aggregated usages of the one-pass decode, kept as they are when in the plain form above
    (a hypothesis test holds the form to the exact parsers). Anything else raises Bad: the line is then
    decoded step by step with the whole Struct, and checked or reported as by `_checked`."""
    if not len(raw):
        return ()
    if _PLAIN_ENTRIES.fullmatch(raw) is None:
        raise Bad("status.nodeMetric.aggregatedNodeUsages", "not in the plain form: decoded in full")
    return () if len(raw) <= 4 else raw if isinstance(raw, msgspec.Raw) else msgspec.Raw(raw)  # null or []


# status.nodeMetric as Koordinator writes it, read in one pass over its bytes: node and system usage of
# cpu in millicores and memory in kibibytes (each at most 12 digits, so within the exact parser's
# bounds, and read as `resource_list` reads them), then the aggregated usages in the plain form above
_PLAIN_USAGE = rb'\{"resources":\{"cpu":"([0-9]{1,12}+)m","memory":"([0-9]{1,12}+)Ki"\}\}'
_PLAIN_INFO = re.compile(
    rb'\{"nodeUsage":' + _PLAIN_USAGE + rb'(?:,"systemUsage":' + _PLAIN_USAGE + rb")?+"
    rb'(?:,"aggregatedNodeUsages":(' + _PLAIN_ENTRIES.pattern + rb"))?+\}"
)
# the same, with the aggregated usages as Koordinator writes them by default: every type, avg to p99, of
# cpu and memory (matched literally, about twice as fast as the general form, which is tried next)
_TYPICAL_RESOURCES = rb'\{"resources":\{"cpu":"[0-9]{1,12}+m","memory":"[0-9]{1,12}+Ki"\}\}'
_TYPICAL_USAGE = rb'"usage":\{' + b",".join(b'"%s":%s' % (t, _TYPICAL_RESOURCES) for t in _AGGREGATIONS) + rb"\}"
_TYPICAL_ENTRY = rb'\{"duration":"(?:[0-9]{1,4}+h)?+(?:[0-9]{1,4}+m)?+[0-9]{1,4}+s",' + _TYPICAL_USAGE + rb"\}"
_TYPICAL_INFO = re.compile(
    rb'\{"nodeUsage":' + _PLAIN_USAGE + rb'(?:,"systemUsage":' + _PLAIN_USAGE + rb")?+"
    rb'(?:,"aggregatedNodeUsages":(null|\[\]|\[' + _TYPICAL_ENTRY + rb"(?:," + _TYPICAL_ENTRY + rb")*+\]))?+\}"
)
_info = msgspec.json.Decoder(wl.FastNodeMetricInfo)
_Info = tuple[bool, dict[str, int], dict[str, int], tuple[wl.AggregatedNodeUsage, ...] | msgspec.Raw]


def _raw_info(raw: msgspec.Raw) -> _Info:
    """(has status.nodeMetric, node usage, system usage, aggregated usages) of the one-pass decode's
    raw status.nodeMetric. Anything not in the plain form is decoded and read as the Struct's fields
    are; what does not decode or normalise raises Bad, and the line is then read step by step."""
    size = len(raw)
    if not size or (size == 4 and raw == b"null"):
        return False, {}, {}, ()
    m = _TYPICAL_INFO.fullmatch(raw)
    if m is None:
        m = _PLAIN_INFO.fullmatch(raw)
    if m is not None:
        cpu, memory, sys_cpu, sys_memory, items = m.groups()
        system = {} if sys_cpu is None else {"cpu": int(sys_cpu), "memory": int(sys_memory) << 10}
        kept = () if items is None or len(items) <= 4 else msgspec.Raw(items)  # absent, null or []
        return True, {"cpu": int(cpu), "memory": int(memory) << 10}, system, kept
    try:
        nm = _info.decode(raw)
    except msgspec.ValidationError as e:
        raise Bad("status.nodeMetric", str(e)) from None
    return (
        True,
        _usage(nm.node_usage, "status.nodeMetric.nodeUsage"),
        _usage(nm.system_usage, "status.nodeMetric.systemUsage"),
        _raw_checked(nm.aggregated_node_usages),
    )


def _checked(items: list[wl.AggregatedNodeUsage | None]) -> tuple[wl.AggregatedNodeUsage, ...]:
    """The aggregated usages, left as they arrived once they are known to normalise. Most are plain
    amounts ("5762m", "44904318Ki") and are checked all at once (`plain`); anything else is normalised
    here, which names the field of the first problem."""
    kept = tuple(a for a in items if a is not None)
    values: list[object] = []
    extend = values.extend
    try:
        for a in kept:
            if a.duration:
                _duration(a.duration)
            u = a.usage
            if u is not None:
                for x in astuple(u):  # avg, p50, p90, p95, p99
                    if x is not None:
                        resources = x.resources
                        if resources:
                            extend(resources.values())
    except Bad:
        values = [None]  # normalised below, which names the field
    if values and not plain(values):
        _aggregated(items)
    return kept


def _aggregated(items: Sequence[wl.AggregatedNodeUsage | None]) -> tuple[AggregatedUsage, ...]:
    out = []
    for i, a in enumerate(items):
        if a is None:
            continue
        part = "duration"  # where a problem is: paths are spelt out only then
        try:
            duration = _duration(a.duration) if a.duration else 0
            usage = {}
            u = a.usage
            if u is not None:  # in the order of model.AGGREGATION_TYPES
                for part, x in (("avg", u.avg), ("p50", u.p50), ("p90", u.p90), ("p95", u.p95), ("p99", u.p99)):
                    if x is not None:
                        usage[part] = resource_list(x.resources)
        except Bad as e:
            at = f"status.nodeMetric.aggregatedNodeUsages[{i}]"
            raise e.under(f"{at}.duration" if part == "duration" else f"{at}.usage.{part}.resources") from None
        out.append(AggregatedUsage(duration=duration, usage=usage))
    return tuple(out)


def _pods(items: list[wl.PodMetricInfo | None] | None) -> tuple[PodMetric, ...]:
    if not items:
        return ()
    return tuple(
        PodMetric(
            namespace=p.namespace or "",
            name=p.name or "",
            priority=p.priority or "",
            usage=_usage(p.pod_usage, f"status.podsMetric[{i}].podUsage"),
        )
        for i, p in enumerate(items or ())
        if p is not None
    )


def nodemetric(v: wl.NodeMetric | wl.FastNodeMetric) -> NodeMetric:
    meta = v.metadata or EMPTY_META
    name = meta.name or name_of(meta)  # name_of names what is wrong
    spec, status = v.spec, v.status or _NO_STATUS
    policy = None if spec is None else spec.metric_collect_policy
    nm = status.node_metric
    if isinstance(nm, msgspec.Raw):
        has_node_metric, node_usage, system_usage, kept = _raw_info(nm)
    else:
        items = None if nm is None else nm.aggregated_node_usages
        kept = _checked(items) if items else ()
        has_node_metric = nm is not None
        node_usage = {} if nm is None else _usage(nm.node_usage, "status.nodeMetric.nodeUsage")
        system_usage = {} if nm is None else _usage(nm.system_usage, "status.nodeMetric.systemUsage")
    stamp = status.update_time
    try:
        update_time = (kept_time(stamp) if stamp else None) or moment(stamp)  # the cache alone first
    except Bad as e:
        raise e.under("status.updateTime") from None
    pods = status.pods_metric
    return NodeMetric(
        name,
        meta.resource_version or "",
        update_time,
        None if policy is None else policy.report_interval_seconds,
        has_node_metric,
        node_usage,
        system_usage,
        kept,
        _pods(pods) if pods else (),
    )


_NO_STATUS = wl.NodeMetricStatus()
positional(
    NodeMetric,
    "name",
    "resource_version",
    "update_time",
    "report_interval_seconds",
    "has_node_metric",
    "node_usage",
    "system_usage",
    "aggregated",
    "pods",
)
