"""Work the embedded pipeline's engines share: converted models and the collector's freezing."""

from __future__ import annotations

import gc
from typing import Any

import pytest

from berth.adapters.collector import Collector
from berth.core.convert import node_from_raw
from berth.core.errors import InputError
from berth.core.pipeline.applier import Converted
from tests.builders import node


class Counting:
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, raw: dict[str, Any]) -> Any:
        self.calls += 1
        return node_from_raw(raw)


def test_a_raw_object_is_converted_once_for_every_reader() -> None:
    converted, convert = Converted(), Counting()
    raw = node("n1")
    first = converted.convert(convert, raw)
    assert converted.convert(convert, raw) is first
    assert convert.calls == 1
    twin = node("n1")  # equal but another object: another event, converted again
    assert converted.convert(convert, twin) == first
    assert convert.calls == 2


def test_the_oldest_entries_go_first_and_are_converted_again() -> None:
    converted, convert = Converted(size=2), Counting()
    a, b, c = node("a"), node("b"), node("c")
    for raw in (a, b, c):
        converted.convert(convert, raw)
    converted.convert(convert, c)
    converted.convert(convert, b)
    assert convert.calls == 3
    assert converted.convert(convert, a).name == "a"
    assert convert.calls == 4


def test_a_conversion_error_is_raised_to_every_reader() -> None:
    converted = Converted()
    raw = node("n1")
    raw["status"]["allocatable"]["cpu"] = "lots"
    for _ in range(2):
        with pytest.raises(InputError, match=r"Node n1: status\..*\.cpu"):
            converted.convert(node_from_raw, raw)


def test_survivors_are_frozen_per_batch_and_thawed_for_a_full_collection() -> None:
    gc.unfreeze()
    collector = Collector(freeze_every=100, thaw_every=1000)
    try:
        collector.handled(99)
        assert gc.get_freeze_count() == 0
        kept = [[i] for i in range(50)]  # noqa: F841 - alive while frozen
        collector.handled(1)
        assert gc.get_freeze_count() > 0
        collector.handled(899)
        assert gc.get_freeze_count() > 0
        collector.handled(1)  # the thaw: everything back with the collector
        assert gc.get_freeze_count() == 0
    finally:
        collector.close()
    assert gc.get_freeze_count() == 0
