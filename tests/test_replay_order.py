"""`berth replay` waits for a log's initial lists, as kube-scheduler waits for its caches, whatever the order
of the lines: `kubectl get --watch` per resource appended to one file (pods first, nodes first, lists
interleaved) or written to files replayed one after another in shell-glob order. The oracle is `berth
evaluate` on the same objects as a snapshot. And pods due for a retry when a log ends are retried."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from berth.core.pipeline.initial import InitialState
from berth_cli.main import main
from tests.builders import node, pod, pvc

PENDING = "default/web"


def cluster() -> dict[str, list[dict[str, Any]]]:
    """n1 is nearly full with three bound pods; n2 has room. A scheduler that decides `web` before it has
    listed n1's pods sees n1 empty, and NodeResourcesFit's LeastAllocated puts it there."""
    return {
        "Node": [node("n1", cpu="4"), node("n2", cpu="4")],
        "Pod": [
            pod("web", cpu="1"),  # listed first: `kubectl get pods` sorts by namespace and name
            *(pod(f"worker-{i}", cpu="1200m", node_name="n1") for i in range(3)),
            pod("batch-0", cpu="2", node_name="n2"),
        ],
    }


def watch_lines(objs: list[dict[str, Any]], etype: str = "ADDED") -> list[str]:
    """As `kubectl get --watch --output-watch-events -o json` prints them (no ts)."""
    return [json.dumps({"type": etype, "object": o}) for o in objs]


def evaluated(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[str, str]:
    snapshot = tmp_path / "snapshot.json"
    items = [o for objs in cluster().values() for o in objs]
    snapshot.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    assert main(["evaluate", "--snapshot", str(snapshot), "-o", "json"]) == 0
    got = next(d for d in json.loads(capsys.readouterr().out)["decisions"] if d["pod"] == PENDING)
    return got["status"], got["node"]


def replayed(capsys: pytest.CaptureFixture[str], out: Path, *logs: Path) -> tuple[str, str]:
    assert main(["replay", *map(str, logs), "--decisions", str(out), "--no-progress"]) == 0
    capsys.readouterr()
    first = next(json.loads(line) for line in out.read_text().splitlines() if json.loads(line)["pod"] == PENDING)
    return first["status"], first["node"]


@pytest.mark.parametrize("order", [("Pod", "Node"), ("Node", "Pod")], ids=["pods first", "nodes first"])
def test_one_file_of_kubectl_watches_in_any_order_decides_as_evaluate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], order: tuple[str, str]
) -> None:
    objs = cluster()
    log = tmp_path / "watch.jsonl"
    lines = [line for kind in order for line in watch_lines(objs[kind])]
    # then the watches: a worker's status changes, a pod of another team arrives
    lines += watch_lines([objs["Pod"][1]], "MODIFIED") + watch_lines([pod("late", cpu="100m")])
    log.write_text("\n".join(lines) + "\n")
    want = evaluated(tmp_path, capsys)
    assert want == ("Scheduled", "n2")
    assert replayed(capsys, tmp_path / "d.jsonl", log) == want


def test_files_replayed_one_after_another_in_glob_order(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # `berth replay *.jsonl`: nodes.jsonl after pods.jsonl, each with its own watch events
    objs = cluster()
    pods, nodes = tmp_path / "pods.jsonl", tmp_path / "nodes.jsonl"
    pods.write_text("\n".join(watch_lines(objs["Pod"]) + watch_lines([objs["Pod"][2]], "MODIFIED")) + "\n")
    nodes.write_text("\n".join(watch_lines(objs["Node"]) + watch_lines([objs["Node"][1]], "MODIFIED")) + "\n")
    assert sorted(p.name for p in tmp_path.glob("*.jsonl")) == ["nodes.jsonl", "pods.jsonl"]
    want = evaluated(tmp_path, capsys)
    assert replayed(capsys, tmp_path / "d1.jsonl", pods, nodes) == want
    assert replayed(capsys, tmp_path / "d2.jsonl", nodes, pods) == want


@settings(max_examples=40, deadline=None)
@given(st.randoms(use_true_random=False))
def test_interleaved_lists_decide_as_evaluate(tmp_path_factory: pytest.TempPathFactory, rnd: Any) -> None:
    """Several `kubectl --watch` appending to one file at once: the lists' lines interleave in any way
    (each kind's own order kept), then the watch events."""
    objs = cluster()
    queues = {kind: watch_lines(o) for kind, o in objs.items()}
    lines: list[str] = []
    while any(queues.values()):
        kind = rnd.choice([k for k, q in queues.items() if q])
        lines.append(queues[kind].pop(0))
    lines += watch_lines([objs["Pod"][1]], "MODIFIED")
    folder = tmp_path_factory.mktemp("log")
    log = folder / "watch.jsonl"
    log.write_text("\n".join(lines) + "\n")
    out = folder / "d.jsonl"
    assert main(["replay", str(log), "--decisions", str(out), "--no-progress"]) == 0
    first = next(json.loads(x) for x in out.read_text().splitlines() if json.loads(x)["pod"] == PENDING)
    assert (first["status"], first["node"]) == ("Scheduled", "n2")
    assert first["position"] >= max(i for i, line in enumerate(lines, 1) if '"ADDED"' in line)


# The rule itself (berth.core.pipeline.initial), on (type, kind) sequences; positions from 1.
P, N, S = ("", "Pod"), ("", "Node"), ("storage.k8s.io", "StorageClass")


@pytest.mark.parametrize(
    ("events", "end"),
    [
        ([], 0),
        ([("ADDED", N), ("ADDED", P), ("ADDED", P)], 3),
        ([("ADDED", P), ("MODIFIED", P), ("ADDED", N)], 3),  # nodes listed after the pods' watch began
        ([("ADDED", S), ("ADDED", P), ("MODIFIED", P), ("ADDED", S)], 2),  # a new StorageClass, not a listed one
        ([("ADDED", P), ("ADDED", N), ("DELETED", N), ("ADDED", P)], 2),  # a pod after a change: new
        ([("MODIFIED", P), ("ADDED", P)], 0),
        ([("BOOKMARK", None), ("ADDED", N)], 2),
    ],
)
def test_where_the_initial_state_ends(events: list[tuple[str, tuple[str, str] | None]], end: int) -> None:
    found = InitialState()
    for position, (etype, kind) in enumerate(events, 1):
        found.see(position, etype, kind, None)
    assert found.end == end


def test_with_ts_the_lists_end_at_the_first_later_line() -> None:
    from datetime import UTC, datetime

    t0, t1 = datetime(2026, 11, 1, tzinfo=UTC), datetime(2026, 11, 1, 0, 0, 1, tzinfo=UTC)
    found = InitialState()
    assert found.see(1, "ADDED", N, t0) and found.see(2, "ADDED", P, t0)
    assert not found.see(3, "ADDED", P, t1)  # nothing later can belong to it
    assert found.end == 2


def test_a_pod_due_for_a_retry_when_the_log_ends_is_retried(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # the claim's StorageClass comes last, in the second the pod failed: kube-scheduler would retry the pod
    # when its 1 s backoff is over
    t = "2026-11-01T10:00:{:02d}Z"
    objs = [node("n1"), pvc("data", cls="fast"), pod("db", ("data",))]
    lines = [json.dumps({"ts": t.format(i), "type": "ADDED", "object": o}) for i, o in enumerate(objs)]
    sc = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "fast"}}
    sc |= {"provisioner": "example.com/csi", "volumeBindingMode": "WaitForFirstConsumer"}
    lines.append(json.dumps({"ts": t.format(2), "type": "ADDED", "object": sc}))
    log = tmp_path / "late-class.jsonl"
    log.write_text("\n".join(lines) + "\n")
    out, summary = tmp_path / "d.jsonl", tmp_path / "s.json"
    assert main(["replay", str(log), "--decisions", str(out), "--summary", str(summary), "--no-progress"]) == 0
    assert "retried at the end of the log" in capsys.readouterr().out
    got = [json.loads(x) for x in out.read_text().splitlines()]
    assert [(d["status"], d["attempt"]) for d in got] == [("Unschedulable", 1), ("Scheduled", 2)]
    assert (got[0]["ts"], got[1]["ts"]) == (t.format(2), t.format(3))  # after its backoff
    assert json.loads(summary.read_text())["runs"][0]["podsRetriedAtEnd"] == 1


def test_a_retry_due_past_the_year_9999_is_retried_at_the_latest_time(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # found by the fuzz test: a log's clock at 9999-12-31T23:59:59Z, and a backoff past it
    t = "9999-12-31T23:59:59Z"
    lines = [
        json.dumps({"ts": "9999-12-31T23:59:58Z", "type": "ADDED", "object": o})
        for o in (node("n1"), pvc("data", cls="fast"))
    ]
    lines.append(json.dumps({"ts": t, "type": "ADDED", "object": pod("db", ("data",))}))
    sc = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "fast"}}
    sc |= {"provisioner": "example.com/csi", "volumeBindingMode": "WaitForFirstConsumer"}
    lines.append(json.dumps({"ts": t, "type": "ADDED", "object": sc}))
    log = tmp_path / "late.jsonl"
    log.write_text("\n".join(lines) + "\n")
    out = tmp_path / "d.jsonl"
    assert main(["replay", str(log), "--decisions", str(out), "--no-progress"]) == 0
    capsys.readouterr()
    got = [json.loads(x) for x in out.read_text().splitlines()]
    assert [(d["status"], d["attempt"]) for d in got] == [("Unschedulable", 1), ("Scheduled", 2)]
    assert got[1]["ts"].startswith("9999-12-31T23:59:59")
