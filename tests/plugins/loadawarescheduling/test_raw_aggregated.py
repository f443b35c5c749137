"""A NodeMetric's aggregated usages kept as raw JSON by the one-pass decode: the same usages, and the
same error for bad ones, as decoding the object step by step with the whole Struct."""

from __future__ import annotations

import json
from typing import Any

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from berth.core.api.kinds import KINDS, decode
from berth.core.api.koordinator.normalise import aggregated
from berth.core.api.watch import parse_event
from berth.core.errors import InputError

from .builders import node_metric

NODEMETRIC = KINDS[("slo.koordinator.sh", "NodeMetric")]

amounts = st.one_of(
    st.from_regex(r"[0-9]{1,14}(m|Ki)?", fullmatch=True),
    st.sampled_from(["1.5", "47Gi", "abc", "", "m", "Ki", "5Ki ", "\u0663", "-1"]),
    st.integers(-5, 10**20),
    st.booleans(),
    st.none(),
)
durations = st.one_of(
    st.from_regex(r"([0-9]{1,5}h)?([0-9]{1,5}m)?[0-9]{1,5}s", fullmatch=True),
    st.sampled_from(["", "5m", "1h", "1.5s", "bad", "9999999999h", "0"]),
    st.integers(0, 100),
)
names = st.sampled_from(["cpu", "memory", "nvidia.com/gpu", "é", 'a"b', "a\\b", ""])
resources = st.one_of(st.dictionaries(names, amounts, max_size=3), st.none(), st.just([]))
per_type = st.one_of(st.fixed_dictionaries({"resources": resources}), st.none(), st.just({}), st.just(5))
usages = st.one_of(
    st.dictionaries(st.sampled_from(["avg", "p50", "p90", "p95", "p99", "p75"]), per_type, max_size=5),
    st.none(),
)
entries = st.one_of(
    st.fixed_dictionaries({"duration": durations, "usage": usages}),
    st.fixed_dictionaries({"usage": usages}),
    st.fixed_dictionaries({"usage": usages, "duration": durations}),
    st.none(),
    st.just("x"),
)


def _outcome(read: Any) -> Any:
    """The normalised aggregated usages, or the error as (object, field, problem)."""
    try:
        return aggregated(read())
    except InputError as e:
        return (e.obj, e.field, e.problem)


@settings(max_examples=400)
@given(st.one_of(st.lists(entries, max_size=3), st.none(), st.just(5)), st.booleans())
def test_raw_usages_read_as_the_whole_struct(items: Any, spaced: bool) -> None:
    obj = node_metric("n1", cpu="1", memory="1Ki", rv="7")
    obj["status"]["nodeMetric"]["aggregatedNodeUsages"] = items
    raw = json.dumps(obj, separators=(", ", ": ") if spaced else (",", ":"), ensure_ascii=False).encode()
    line = b'{"type":"MODIFIED","object":' + raw + b"}"
    got = _outcome(lambda: parse_event(line, 3).model)
    assert got == _outcome(lambda: decode(NODEMETRIC, raw))


def test_plain_usages_stay_raw() -> None:
    obj = node_metric("n1", agg={"5m0s": {"avg": ("5762m", "44904318Ki"), "p95": ("7", "1")}, "1h0m0s": {}}, rv="7")
    line = b'{"type":"MODIFIED","object":' + msgspec.json.encode(obj) + b"}"
    m = parse_event(line, 3).model
    assert isinstance(m.aggregated, msgspec.Raw)
    assert aggregated(m) == aggregated(decode(NODEMETRIC, msgspec.json.encode(obj)))


usage = st.one_of(st.fixed_dictionaries({"resources": resources}), st.none(), st.just({}), st.just(5))
plain_amount = st.from_regex(r"[0-9]{1,13}", fullmatch=True)
plain_usage = st.builds(
    lambda cpu, memory: {"resources": {"cpu": f"{cpu}m", "memory": f"{memory}Ki"}}, plain_amount, plain_amount
)
info_keys = st.one_of(
    st.sampled_from(
        [["nodeUsage", "systemUsage", "aggregatedNodeUsages"], ["nodeUsage"], ["nodeUsage", "systemUsage"]]
    ),
    st.lists(st.sampled_from(["nodeUsage", "systemUsage", "aggregatedNodeUsages"]), max_size=3),
)
plain_entries = st.lists(
    st.builds(
        lambda d, kinds: {"duration": d, "usage": kinds},
        st.sampled_from(["5m0s", "1h0m0s", "30s", "12345s"]),
        st.dictionaries(st.sampled_from(["avg", "p50", "p99"]), plain_usage, max_size=2),
    ),
    max_size=2,
)
typical_entries = st.lists(  # every type, avg to p99, as Koordinator writes them by default
    st.builds(
        lambda d, values: {"duration": d, "usage": dict(zip(["avg", "p50", "p90", "p95", "p99"], values, strict=True))},
        st.sampled_from(["5m0s", "1h0m0s", "30s", "12345s", "h0m0s"]),
        st.lists(plain_usage, min_size=5, max_size=5),
    ),
    max_size=3,
)


def _read(read: Any) -> Any:
    """What a NodeMetric's status.nodeMetric normalises to, or the error as (object, field, problem)."""
    try:
        m = read()
        return m.has_node_metric, m.node_usage, list(m.node_usage), m.system_usage, aggregated(m)
    except InputError as e:
        return (e.obj, e.field, e.problem)


@settings(max_examples=400)
@given(
    st.one_of(plain_usage, plain_usage, usage),
    st.one_of(plain_usage, plain_usage, usage),
    st.one_of(typical_entries, typical_entries, plain_entries, st.lists(entries, max_size=2), st.none()),
    info_keys,
    st.sampled_from([False, False, True]),
    st.sampled_from([False, False, False, True]),
)
def test_raw_node_metric_reads_as_the_whole_struct(
    node: Any, system: Any, items: Any, keys: list[str], spaced: bool, null: bool
) -> None:
    """status.nodeMetric kept raw by the one-pass decode (the plain form read in one pass over its bytes,
    anything else decoded): the same usages, and the same error, as the whole Struct step by step."""
    obj = node_metric("n1", rv="7")
    values = {"nodeUsage": node, "systemUsage": system, "aggregatedNodeUsages": items}
    obj["status"]["nodeMetric"] = None if null else {k: values[k] for k in dict.fromkeys(keys)}
    raw = json.dumps(obj, separators=(", ", ": ") if spaced else (",", ":"), ensure_ascii=False).encode()
    line = b'{"type":"MODIFIED","object":' + raw + b"}"
    got = _read(lambda: parse_event(line, 3).model)
    assert got == _read(lambda: decode(NODEMETRIC, raw))


def test_plain_node_metric_read_in_one_pass() -> None:
    obj = node_metric("n1", cpu="999999999999m", memory="18065245Ki", system=("106m", "1502247Ki"), rv="7")
    obj["status"]["nodeMetric"]["aggregatedNodeUsages"] = []
    line = b'{"type":"MODIFIED","object":' + msgspec.json.encode(obj) + b"}"
    m = parse_event(line, 3).model
    assert m.node_usage == {"cpu": 999999999999, "memory": 18065245 * 1024}
    assert m.system_usage == {"cpu": 106, "memory": 1502247 * 1024}
    assert m.aggregated == ()
    assert m == decode(NODEMETRIC, msgspec.json.encode(obj))
