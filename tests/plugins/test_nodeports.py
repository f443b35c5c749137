"""NodePorts, as upstream's TestNodePorts says (pkg/scheduler/framework/plugins/nodeports/node_ports_test.go)."""

from __future__ import annotations

from typing import Any

import pytest

from berth.core.api.kinds import convert
from berth.core.framework.status import Code
from tests.plugins.helpers import filter_run

CONFLICT = [("node(s) didn't have free ports for the requested pod ports", Code.UNSCHEDULABLE)]


def ports_pod(name: str, *ports: str, node: str = "", sidecar: bool = False) -> dict[str, Any]:
    """Ports as upstream's newPod writes them: "PROTO/IP/PORT"."""
    entries = []
    for p in ports:
        proto, ip, port = p.split("/")
        entries.append({"protocol": proto, "hostIP": ip, "hostPort": int(port), "containerPort": int(port)})
    spec: dict[str, Any] = {"containers": [{"name": "c", "ports": entries}]}
    if sidecar:
        spec = {
            "containers": [{"name": "c"}],
            "initContainers": [{"name": "s", "restartPolicy": "Always", "ports": entries}],
        }
    if node:
        spec["nodeName"] = node
    status = {"phase": "Running" if node else "Pending"}
    return {
        "kind": "Pod",
        "apiVersion": "v1",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
        "status": status,
    }


NODE = {"kind": "Node", "apiVersion": "v1", "metadata": {"name": "n"}}

CASES = [
    ("other port", ["UDP/127.0.0.1/8080"], ["UDP/127.0.0.1/9090"], []),
    ("same udp port", ["UDP/127.0.0.1/8080"], ["UDP/127.0.0.1/8080"], CONFLICT),
    ("same tcp port", ["TCP/127.0.0.1/8080"], ["TCP/127.0.0.1/8080"], CONFLICT),
    ("different host ip", ["TCP/127.0.0.1/8080"], ["TCP/127.0.0.2/8080"], []),
    ("different protocol", ["UDP/127.0.0.1/8080"], ["TCP/127.0.0.1/8080"], []),
    ("second udp port conflict", ["UDP/127.0.0.1/8000", "UDP/127.0.0.1/8080"], ["UDP/127.0.0.1/8080"], CONFLICT),
    (
        "first tcp port conflict",
        ["TCP/127.0.0.1/8001", "UDP/127.0.0.1/8080"],
        ["TCP/127.0.0.1/8001", "UDP/127.0.0.1/8081"],
        CONFLICT,
    ),
    ("first tcp port conflict due to 0.0.0.0 hostIP", ["TCP/0.0.0.0/8001"], ["TCP/127.0.0.1/8001"], CONFLICT),
    (
        "TCP hostPort conflict due to 0.0.0.0 hostIP",
        ["TCP/10.0.10.10/8001", "TCP/0.0.0.0/8001"],
        ["TCP/127.0.0.1/8001"],
        CONFLICT,
    ),
    ("second tcp port conflict to 0.0.0.0 hostIP", ["TCP/127.0.0.1/8001"], ["TCP/0.0.0.0/8001"], CONFLICT),
    ("second different protocol", ["UDP/0.0.0.0/8001"], ["TCP/0.0.0.0/8001"], []),
    (
        "UDP hostPort conflict due to 0.0.0.0 hostIP",
        ["UDP/0.0.0.0/8001"],
        ["TCP/0.0.0.0/8001", "UDP/0.0.0.0/8001"],
        CONFLICT,
    ),
]


@pytest.mark.parametrize(("name", "wanted", "used", "want"), CASES, ids=[c[0] for c in CASES])
def test_node_ports_match_upstream(name: str, wanted: list[str], used: list[str], want: list[tuple[str, Code]]) -> None:
    status, reasons = filter_run("NodePorts", ports_pod("p", *wanted), [NODE, ports_pod("e", *used, node="n")])
    assert status.code is Code.SUCCESS and reasons["n"] == want


def test_nothing_running_skips() -> None:
    # TestNodePorts "nothing running": a pod without host ports is skipped at PreFilter
    assert filter_run("NodePorts", ports_pod("p"), [NODE])[0].code is Code.SKIP


def test_sidecar_ports_are_in_use_and_ports_free_when_the_pod_goes() -> None:
    # TestNodePorts "restartable init container ports" shape: a sidecar's host port is used too
    status, reasons = filter_run(
        "NodePorts", ports_pod("p", "TCP/0.0.0.0/80"), [NODE, ports_pod("e", "TCP/0.0.0.0/80", node="n", sidecar=True)]
    )
    assert reasons["n"] == CONFLICT
    gone = ports_pod("e", "TCP/0.0.0.0/80", node="n", sidecar=True)
    gone["status"] = {"phase": "Succeeded"}
    status, reasons = filter_run(
        "NodePorts", ports_pod("p", "TCP/0.0.0.0/80"), [NODE, ports_pod("e", "TCP/0.0.0.0/80", node="n"), gone]
    )
    assert status.code is Code.SUCCESS and reasons["n"] == []


def test_unset_address_and_protocol_default() -> None:
    raw = ports_pod("p", "TCP/0.0.0.0/80")
    raw["spec"]["containers"][0]["ports"] = [{"hostPort": 80, "containerPort": 80}, {"containerPort": 81}]
    assert convert(raw).host_ports == (("0.0.0.0", "TCP", 80),)
