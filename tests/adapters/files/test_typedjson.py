"""A JSON snapshot read typed (berth.adapters.files.typedjson) gives what the general reader gives,
object for object, or None (the general reader then reads it); never an object of its own, and
never None's opposite where the general reader names a problem."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from berth.adapters.files.snapshot import MAX_OBJECT_BYTES, load_objects, load_snapshot, objects_in
from berth.adapters.files.typedjson import read_typed
from berth.core.api.kinds import KINDS, convert_as, kind_key
from berth.core.cache.snapshot import Decoded
from berth.core.errors import InputError

DATA = Path(__file__).parents[2] / "data" / "snapshots"
SAMPLES = [o for f in sorted(DATA.glob("*")) if not f.name.startswith("bad-") for o in load_objects(str(f))]


def general(text: str) -> list[tuple[str, Any]]:
    """What load_objects and build_state make of a text: each known kind's model, else the raw object."""
    out: list[tuple[str, Any]] = []
    for raw in objects_in(text, "snapshot"):
        kind = KINDS.get(kind_key(raw))
        out.append(("raw", raw) if kind is None else ("model", convert_as(kind, raw)))
    return out


def typed(data: bytes) -> list[tuple[str, Any]] | None:
    got = read_typed(data, MAX_OBJECT_BYTES)
    if got is None:
        return None
    return [("model", o.model) if isinstance(o, Decoded) else ("raw", o) for o in got]


def agree(text: str) -> bool:
    """The typed reading gives the general reader's objects, or None; None where the general one fails.
    Returns whether the typed reading took it."""
    got = typed(text.encode("utf-8", "surrogatepass"))
    try:
        want = general(text)
    except InputError:
        assert got is None
        return False
    assert got is None or got == want
    return got is not None


def as_list(objects: list[Any]) -> str:
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": objects})


def test_the_samples_are_read_typed() -> None:
    assert len(SAMPLES) > 20 and agree(as_list(SAMPLES))
    assert agree(json.dumps(SAMPLES, indent=2))  # a bare array of objects
    assert agree(as_list([{"apiVersion": "v1", "kind": "List", "items": SAMPLES[:3]}, *SAMPLES[3:]]))  # nested


# Shapes the typed reading leaves to the general reader, which reads them or names the problem.
ELSEWHERE = [
    (
        "a typed list's items carry no kind",
        '{"kind": "NodeList", "apiVersion": "v1", "items": [{"metadata": {"name": "a"}}]}',
    ),
    ("an item of kind null", '{"kind": "List", "items": [{"kind": null, "metadata": {"name": "a"}}]}'),
    ("an empty kind", '{"kind": "", "metadata": {"name": "a"}}'),
    ("an array in an array", '[[{"kind": "Namespace", "apiVersion": "v1", "metadata": {"name": "a"}}]]'),
    ("NaN, which json.loads takes", '{"kind": "ConfigMap", "apiVersion": "v1", "data": NaN}'),
    (
        "JSON Lines",
        '{"kind": "Namespace", "metadata": {"name": "a"}}\n{"kind": "Namespace", "metadata": {"name": "b"}}',
    ),
    ("a byte-order mark", '\ufeff{"kind": "Namespace", "apiVersion": "v1", "metadata": {"name": "a"}}'),
    ("YAML", "kind: Namespace\napiVersion: v1\nmetadata: {name: a}\n"),
    (
        "a bad quantity",
        '{"kind": "Node", "apiVersion": "v1", "metadata": {"name": "n"}, "status": {"allocatable": {"cpu": "x"}}}',
    ),
    ("a number", "12"),
]


@pytest.mark.parametrize(("name", "text"), ELSEWHERE, ids=[n for n, _ in ELSEWHERE])
def test_left_to_the_general_reader(name: str, text: str) -> None:
    assert not agree(text)


def test_invalid_utf8_where_no_struct_reads_it() -> None:
    data = b'{"kind": "Namespace", "apiVersion": "v1", "metadata": {"name": "a"}, "junk": "\xff"}'
    assert read_typed(data, MAX_OBJECT_BYTES) is None


def test_an_object_near_the_size_limit_is_measured_by_the_general_reader() -> None:
    big = {"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"name": "a"}, "data": {"k": "x" * 1000}}
    small = {"kind": "Namespace", "apiVersion": "v1", "metadata": {"name": "a"}}
    text = as_list([big, *[small] * 100]).encode()
    assert typed(text) is not None
    assert read_typed(text, len(text) - 1) is None  # the whole text over the limit, 8 bytes a byte of big too
    text = as_list([small] * 100).encode()
    assert read_typed(text, len(text) - 1) is not None  # the small ones are within it by their length


def test_duplicate_keys_keep_the_last_as_json_loads_does() -> None:
    text = '{"kind": "Namespace", "apiVersion": "v1", "metadata": {"name": "a", "name": "b", "labels": {"x": "1", "x": "2"}}}'
    assert agree(text)


def test_load_snapshot_reads_json_typed_and_the_rest_as_before(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text(as_list(SAMPLES))
    assert all(isinstance(o, Decoded) or kind_key(o) not in KINDS for o in load_snapshot(str(path)))
    crlf = tmp_path / "s.yaml"
    crlf.write_bytes((DATA / "local-pvs.yaml").read_bytes().replace(b"\n", b"\r\n"))
    assert load_snapshot(str(crlf)) == load_objects(str(DATA / "local-pvs.yaml"))


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


def _paths(value: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [at]
    if isinstance(value, dict):
        for k, v in value.items():
            out.extend(_paths(v, (*at, k)))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out.extend(_paths(v, (*at, i)))
    return out


def _put(value: Any, path: tuple[Any, ...], new: Any, drop: bool) -> Any:
    if not path:
        return new
    head, rest = path[0], path[1:]
    copy = dict(value) if isinstance(value, dict) else list(value)
    if drop and not rest:
        del copy[head]
        return copy
    copy[head] = _put(value[head], rest, new, drop)
    return copy


@settings(max_examples=300, deadline=None)
@given(data=st.data(), shape=st.sampled_from(["list", "array", "nested"]), indent=st.sampled_from([None, 1]))
def test_changed_objects_read_alike(data: st.DataObject, shape: str, indent: int | None) -> None:
    """Any change to a sample object (a value replaced by any JSON value, or a key dropped): the typed
    reading gives the general reader's objects, or leaves the text to it."""
    objects = data.draw(st.lists(st.sampled_from(SAMPLES), min_size=1, max_size=4))
    i = data.draw(st.integers(0, len(objects) - 1))
    path = data.draw(st.sampled_from(_paths(objects[i])))
    drop = bool(path) and data.draw(st.booleans())
    objects[i] = _put(objects[i], path, data.draw(JSON_VALUES), drop)
    doc: Any = {"kind": "List", "apiVersion": "v1", "items": objects}
    if shape == "array":
        doc = objects
    elif shape == "nested":
        doc = {"kind": "List", "items": [doc]}
    text = json.dumps(doc, indent=indent)
    event("read typed" if agree(text) else "left to the general reader")
