"""ImageLocality, as upstream's TestImageLocalityPriority and TestNormalizedImageName say
(pkg/scheduler/framework/plugins/imagelocality/image_locality_test.go)."""

from __future__ import annotations

from typing import Any

import pytest

from berth.core.api.core.normalise import image_name
from berth.core.api.kinds import convert
from berth.core.cache.state import ClusterState
from berth.core.framework.cycle import Cycle
from berth.core.plugins.imagelocality import new
from tests.builders import NOW
from tests.plugins.helpers import scores

MB = 1024 * 1024


def inode(name: str, *images: tuple[list[str], int]) -> dict[str, Any]:
    status = {"images": [{"names": names, "sizeBytes": size * MB} for names, size in images]}
    return {"kind": "Node", "apiVersion": "v1", "metadata": {"name": name}, "status": status}


def ipod(*images: str, init: tuple[str, ...] = ()) -> dict[str, Any]:
    spec = {
        "containers": [{"name": f"c{i}", "image": im} for i, im in enumerate(images)],
        "initContainers": [{"name": f"i{i}", "image": im} for i, im in enumerate(init)],
    }
    return {"kind": "Pod", "apiVersion": "v1", "metadata": {"name": "p", "namespace": "default"}, "spec": spec}


N403002000 = (
    (["gcr.io/40:latest", "gcr.io/40:v1", "gcr.io/40:v1"], 40),
    (["gcr.io/300:latest", "gcr.io/300:v1"], 300),
    (
        ["gcr.io/2000:latest"],
        2000,
    ),
)
N25010 = (["gcr.io/250:latest"], 250), (["gcr.io/10:latest", "gcr.io/10:v1"], 10)
N60040900 = (["gcr.io/600:latest"], 600), (["gcr.io/40:latest"], 40), (["gcr.io/900:latest"], 900)
N300600900 = (["gcr.io/300:latest"], 300), (["gcr.io/600:latest"], 600), (["gcr.io/900:latest"], 900)
N400030 = (["gcr.io/4000:latest"], 4000), (["gcr.io/30:latest"], 30)
N203040 = (["gcr.io/20:latest"], 20), (["gcr.io/30:latest"], 30), (["gcr.io/40:latest"], 40)

CASES = [
    (
        "two images spread on two nodes, prefer the larger image one",
        ipod("gcr.io/40", "gcr.io/250"),
        [inode("node1", *N403002000), inode("node2", *N25010)],
        [0, 5],
    ),
    (
        "two images on one node, prefer this node",
        ipod("gcr.io/40", "gcr.io/300"),
        [inode("node1", *N403002000), inode("node2", *N25010)],
        [7, 0],
    ),
    (
        "if exceed limit, use limit",
        ipod("gcr.io/10", "gcr.io/4000"),
        [inode("node1", *N400030), inode("node2", *N25010)],
        [100, 0],
    ),
    (
        "if exceed limit, use limit (with node which has no images present)",
        ipod("gcr.io/10", "gcr.io/4000"),
        [inode("node1", *N400030), inode("node2", *N25010), inode("node3")],
        [66, 0, 0],
    ),
    (
        "pod with multiple large images, node2 is preferred",
        ipod("gcr.io/300", "gcr.io/600", "gcr.io/900"),
        [inode("node1", *N60040900), inode("node2", *N300600900), inode("node3")],
        [32, 36, 0],
    ),
    (
        "pod with multiple small images",
        ipod("gcr.io/30", "gcr.io/40"),
        [inode("node1", *N203040), inode("node2", *N400030)],
        [1, 0],
    ),
    (
        "include InitContainers: two images spread on two nodes, prefer the larger image one",
        ipod("gcr.io/30", init=("gcr.io/300",)),
        [inode("node1", *N403002000), inode("node2", *N203040)],
        [6, 0],
    ),
]


@pytest.mark.parametrize(("name", "pod", "nodes", "want"), CASES, ids=[c[0] for c in CASES])
def test_image_locality_priority(name: str, pod: dict[str, Any], nodes: list[dict[str, Any]], want: list[int]) -> None:
    got = scores("ImageLocality", None, pod, nodes)
    assert got is not None and list(got.values()) == want


@pytest.mark.parametrize(
    ("name", "given", "want"),
    [
        ("add :latest postfix 1", "root", "root:latest"),
        ("add :latest postfix 2", "gcr.io:5000/root", "gcr.io:5000/root:latest"),
        ("keep it as is 1", "root:tag", "root:tag"),
        ("keep it as is 2", "root@sha256:abc", "root@sha256:abc"),
    ],
)
def test_normalized_image_name(name: str, given: str, want: str) -> None:
    assert image_name(given) == want


def test_the_spread_follows_nodes_as_they_change_and_go() -> None:
    state = ClusterState()
    plugin = new(None, state)
    state.attach(plugin.extension())
    for raw in (
        inode("node1", (["gcr.io/4000:latest"], 4000)),
        inode("node2", (["gcr.io/4000:latest"], 4000)),
        inode("node3"),
    ):
        state.apply(convert(raw))
    pod = convert(ipod("gcr.io/4000", "gcr.io/10"))

    def node1() -> int:
        return int(plugin.score(Cycle(pod, state, NOW), state.nodes.valid.copy())[state.nodes.slot["node1"]])

    assert node1() == 100  # 4000M x 2/3 >= 2000M
    state.apply(convert(inode("node2")))  # the image leaves node2: 4000M x 1/3
    assert node1() == 66
    state.apply(convert(inode("node3")), deleted=True)  # two nodes: 4000M x 1/2
    assert node1() == 100


def test_an_images_size_is_the_first_node_that_listed_it() -> None:
    # kube's cache keeps one ImageStateSummary per image name (backend/cache addNodeImageStates): the size
    # the first node listed, for every node that lists it, until no node does. Seen on kube 1.36 (the
    # side-by-side comparison, tests/e2e/compare): 900 MiB on n1, 50 MiB on n2 scores n2 as 900 MiB.
    nodes = [inode("n1", (["app:1"], 900)), inode("n2", (["app:1"], 50)), inode("n3")]
    # 900 MiB x 2/3 nodes = 600 MiB: 100 x (600 - 23) // (1000 - 23) = 59 on both
    assert scores("ImageLocality", None, ipod("app:1"), nodes) == {"n1": 59, "n2": 59, "n3": 0}
