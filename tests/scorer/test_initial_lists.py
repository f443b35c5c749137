"""The scorer engine waits for berth's watcher's first lists, as kube-scheduler waits for its caches: after
the BOOKMARK that names the kinds about to be listed, nothing is decided until each kind's list has ended
(kube's `k8s.io/initial-events-end`). The services and `berth replay` of a recording decide the same."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from berth.core.api.watch import WatchEvent, begin_marker, encode_event, end_marker, parse_event
from berth.core.config.kubeschedulerconfig import parse_config
from berth.core.pipeline.scorer import ScorerEngine
from tests.builders import node, pod

T0 = datetime(2026, 11, 1, 10, 0, tzinfo=UTC)
NODES, PODS = ("", "Node"), ("", "Pod")


def lines(marked: bool) -> list[bytes]:
    """berth's watcher's first lists: nodes, then pods (sorted by name: the pending `web` before the pods
    that fill n1), then a watch event."""
    objs: list[tuple[str, dict[str, Any]]] = []
    if marked:
        objs.append(("BOOKMARK", begin_marker([NODES, PODS])))
    objs += [("ADDED", node("n1", cpu="4")), ("ADDED", node("n2", cpu="4"))]
    if marked:
        objs.append(("BOOKMARK", end_marker("v1", "Node", "10")))
    objs += [("ADDED", pod("a-web", cpu="1"))]
    objs += [("ADDED", pod(f"b-worker-{i}", cpu="1200m", node_name="n1")) for i in range(3)]
    objs += [("ADDED", pod("c-batch", cpu="2", node_name="n2"))]
    if marked:
        objs.append(("BOOKMARK", end_marker("v1", "Pod", "20")))
    objs.append(("MODIFIED", pod("c-batch", cpu="2", node_name="n2")))
    return [encode_event(WatchEvent(t, o, T0 + timedelta(milliseconds=i), i + 1)) for i, (t, o) in enumerate(objs)]


def decided(marked: bool) -> list[tuple[str, str | None, int]]:
    engine = ScorerEngine(parse_config(None))
    out = []
    for n, line in enumerate(lines(marked), 1):
        out += [(r.pod, r.node, r.position) for r in engine.handle(parse_event(line, n))]
    return out


def test_the_first_lists_end_before_anything_is_decided() -> None:
    assert decided(marked=True) == [("default/a-web", "n2", 10)]  # at the pods' list's end


def test_without_the_markers_a_pod_is_decided_as_it_comes() -> None:
    # the engine cannot know more is coming: n1 looks empty (what `berth replay` avoids by reading ahead)
    assert decided(marked=False) == [("default/a-web", "n1", 3)]


def test_a_recording_with_the_markers_replays_as_the_services_decide(tmp_path: Any) -> None:
    from berth_cli.main import main

    log = tmp_path / "rec.jsonl"
    log.write_bytes(b"\n".join(lines(marked=True)) + b"\n")
    out = tmp_path / "d.jsonl"
    assert main(["replay", str(log), "--decisions", str(out), "--no-progress"]) == 0
    got = [json.loads(x) for x in out.read_text().splitlines()]
    assert [(d["pod"], d["node"], d["position"]) for d in got] == decided(marked=True)


def test_a_list_that_never_ends_is_released_at_the_end_of_the_log() -> None:
    engine = ScorerEngine(parse_config(None))
    cut = lines(marked=True)[:-2]  # the recording stopped before the pods' list ended
    for n, line in enumerate(cut, 1):
        assert engine.handle(parse_event(line, n)) == []
    assert [(r.pod, r.node) for r in engine.end_of_log()] == [("default/a-web", "n2")]
