"""An object's metadata times are checked on every kind: a bad one rejects its line, naming the field
(issue 34: such a line used to move the replay clock or the order valid objects were read in)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from berth.core.api.watch import UnreadableObject, parse_event
from berth.core.errors import InputError

OBJECTS: dict[str, dict[str, Any]] = {
    "PersistentVolume": {"apiVersion": "v1", "kind": "PersistentVolume", "spec": {"capacity": {"storage": "1Gi"}}},
    "PersistentVolumeClaim": {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"namespace": "d"}},
    "NodeMetric": {"apiVersion": "slo.koordinator.sh/v1alpha1", "kind": "NodeMetric"},
    "StatefulSet": {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"namespace": "d"}},
    "PodTemplate": {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"namespace": "d"}},
    "Node": {"apiVersion": "v1", "kind": "Node"},
    "Pod": {"apiVersion": "v1", "kind": "Pod", "metadata": {"namespace": "d"}},
}


def line(kind: str, **meta: Any) -> bytes:
    obj = json.loads(json.dumps(OBJECTS[kind]))
    obj.setdefault("metadata", {}).update({"name": "x", **meta})
    return json.dumps({"ts": "2026-11-02T08:00:00Z", "type": "ADDED", "object": obj}).encode()


@pytest.mark.parametrize("kind", list(OBJECTS))
@pytest.mark.parametrize(
    ("field", "value", "problem"),
    [
        ("creationTimestamp", "yesterday", "invalid RFC 3339 time 'yesterday'"),
        ("creationTimestamp", "2026-13-45T99:99:99Z", "invalid RFC 3339 time '2026-13-45T99:99:99Z'"),
        ("creationTimestamp", "9999-12-31T23:59:59-14:00", "outside years 0001..9999 in UTC"),
        ("deletionTimestamp", "soon", "invalid RFC 3339 time 'soon'"),
        ("deletionTimestamp", 5, "invalid RFC 3339 time 5"),
    ],
)
def test_a_bad_metadata_time_rejects_the_line(kind: str, field: str, value: Any, problem: str) -> None:
    with pytest.raises(UnreadableObject) as e:
        parse_event(line(kind, **{field: value}), 7)
    assert e.value.field == f"metadata.{field}"
    assert problem in e.value.problem
    assert isinstance(e.value, InputError)


@pytest.mark.parametrize("kind", list(OBJECTS))
def test_good_metadata_times_are_read(kind: str) -> None:
    ev = parse_event(line(kind, creationTimestamp="2026-11-01T10:00:00Z", deletionTimestamp="2026-11-01T11:00:00Z"))
    assert ev.model is not None
