"""The kind table: one line per kind, and what derives from it."""

from __future__ import annotations

import pytest

from berth.core.api.kinds import BY_NAME, KINDS


@pytest.mark.parametrize("key", list(KINDS), ids=lambda k: k[1])
def test_each_line_is_keyed_by_its_group_and_kind(key: tuple[str, str]) -> None:
    kind = KINDS[key]
    assert (kind.group, kind.name) == key
    assert BY_NAME[kind.name] is kind
    assert kind.plural == kind.plural.lower() and kind.plural.endswith("s")
    assert kind.versions and all(v.startswith("v") for v in kind.versions)


def test_relist_ranks_put_buffers_then_pods_last() -> None:
    ranks = {k.name: k.relist for k in KINDS.values()}
    assert (
        ranks["Pod"] > ranks["CapacityBuffer"] > max(r for n, r in ranks.items() if n not in ("Pod", "CapacityBuffer"))
    )
    assert list(KINDS.values())[-1].name == "Pod"


def test_only_add_on_kinds_are_crds() -> None:
    assert {k.name for k in KINDS.values() if k.crd} == {"NodeMetric", "CapacityBuffer"}
    assert {k.name for k in KINDS.values() if not k.namespaced} >= {"Node", "PersistentVolume", "StorageClass"}
