"""What berth reads of every object's metadata is checked on every kind of the kind table: a bad time or
resourceVersion rejects its line, naming the field (issue 34: such a line used to move the replay clock or
the order valid objects were read in, and a resourceVersion of 5,002 digits crashed `berth evaluate`)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from berth.core.api.kinds import KINDS
from berth.core.api.watch import UnreadableObject, parse_event
from berth.core.cache.state import newer
from berth.core.errors import InputError

# the kinds whose objects need more than their metadata to be read
EXTRA: dict[str, dict[str, Any]] = {"PersistentVolume": {"spec": {"capacity": {"storage": "1Gi"}}}}
OBJECTS: dict[str, dict[str, Any]] = {
    kind.name: {
        "apiVersion": f"{group}/{kind.versions[0]}" if group else kind.versions[0],
        "kind": kind.name,
        "metadata": {"namespace": "d"} if kind.namespaced else {},
        **EXTRA.get(kind.name, {}),
    }
    for (group, _), kind in KINDS.items()
}


def line(kind: str, **meta: Any) -> bytes:
    obj = json.loads(json.dumps(OBJECTS[kind]))
    obj["metadata"].update({"name": "x", **meta})
    return json.dumps({"ts": "2026-11-02T08:00:00Z", "type": "ADDED", "object": obj}).encode()


BIG = "1" + "0" * 5001  # over Python's int-string limit


@pytest.mark.parametrize("kind", list(OBJECTS))
@pytest.mark.parametrize(
    ("field", "value", "problem"),
    [
        ("creationTimestamp", "yesterday", "invalid RFC 3339 time 'yesterday'"),
        ("creationTimestamp", "2026-13-45T99:99:99Z", "invalid RFC 3339 time '2026-13-45T99:99:99Z'"),
        ("creationTimestamp", "9999-12-31T23:59:59-14:00", "outside years 0001..9999 in UTC"),
        ("deletionTimestamp", "soon", "invalid RFC 3339 time 'soon'"),
        ("deletionTimestamp", 5, "invalid RFC 3339 time 5"),
        ("resourceVersion", BIG, "'10000000000000000000'... (5,002 characters) is not a decimal uint64"),
        ("resourceVersion", "18446744073709551616", "'18446744073709551616' is not a decimal uint64"),  # 2**64
        ("resourceVersion", "abc", "'abc' is not a decimal uint64"),
        ("resourceVersion", "\u00b2", "'\u00b2' is not a decimal uint64"),  # a digit to str.isdigit, not to kube
        ("resourceVersion", "-1", "'-1' is not a decimal uint64"),
        ("resourceVersion", "+1", "'+1' is not a decimal uint64"),
    ],
)
def test_bad_metadata_rejects_the_line(kind: str, field: str, value: Any, problem: str) -> None:
    with pytest.raises(UnreadableObject) as e:
        parse_event(line(kind, **{field: value}), 7)
    assert e.value.field == f"metadata.{field}"
    assert problem in e.value.problem
    assert isinstance(e.value, InputError)
    assert len(str(e.value)) < 300  # one line, a huge value cut short


@pytest.mark.parametrize("kind", list(OBJECTS))
def test_good_metadata_is_read(kind: str) -> None:
    ev = parse_event(
        line(
            kind,
            creationTimestamp="2026-11-01T10:00:00Z",
            deletionTimestamp="2026-11-01T11:00:00Z",
            resourceVersion="18446744073709551615",  # 2**64 - 1: kube's largest (strconv.ParseUint base 10)
        )
    )
    assert ev.model is not None


@pytest.mark.parametrize("rv", ["", "0", "7", "000000000000000000000000042"])  # ParseUint takes leading zeros
def test_decimal_resource_versions_are_read(rv: str) -> None:
    assert parse_event(line("Node", resourceVersion=rv)).model is not None


def test_resource_versions_of_any_length_compare_without_int() -> None:
    assert newer(BIG, "9") and not newer("9", BIG)
    assert newer(BIG + "1", BIG) and not newer(BIG, BIG)
    assert newer("010", "9") and not newer("09", "10")
