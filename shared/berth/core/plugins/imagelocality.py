"""ImageLocality (Score): favours nodes that already have the pod's images, each image's size scaled
by the share of all nodes that have it (so an image on every node counts fully, one on few barely),
clamped to 23 MiB..1000 MiB per container and scaled to 0..100. No NormalizeScore, as upstream."""

from __future__ import annotations

from typing import Any

import numpy as np

from berth.core import framework as fwk
from berth.core.cache.extension import StateExtension
from berth.core.cache.state import ClusterState

NAME = "ImageLocality"
Args = None
MB = 1024 * 1024
MIN_THRESHOLD = 23 * MB
MAX_CONTAINER_THRESHOLD = 1000 * MB


class ImageSpread(StateExtension):
    """Per image name, the slots of the nodes listing it and its size there (a ClusterState extension)."""

    assigned_only = True

    def __init__(self) -> None:
        self.on: dict[str, dict[int, int]] = {}  # image name -> slot -> size
        # image name -> its size as kube's cache keeps it: the size on the first node that listed it, kept
        # while any node lists it (backend/cache addNodeImageStates: one ImageStateSummary per name)
        self.size: dict[str, int] = {}
        self._listed: dict[int, tuple[str, ...]] = {}

    def node_changed(self, state: ClusterState, slot: int) -> None:
        for name in self._listed.pop(slot, ()):
            slots = self.on[name]
            slots.pop(slot, None)
            if not slots:
                del self.on[name]
                del self.size[name]
        node = state.nodes.node(slot)
        if node is not None and node.images:
            self._listed[slot] = tuple(node.images)
            for name, size in node.images.items():
                self.size.setdefault(name, size)
                self.on.setdefault(name, {})[slot] = size


class ImageLocality:
    name = NAME

    def __init__(self) -> None:
        self.spread = ImageSpread()

    def extension(self) -> ImageSpread:
        return self.spread

    def score(self, cycle: fwk.Cycle, feasible: fwk.Mask) -> fwk.Scores:
        total_nodes = len(cycle.state.nodes)
        sums = np.zeros(len(feasible), dtype=np.int64)
        found = False
        for image in cycle.pod.images:
            slots = self.spread.on.get(image)
            if not slots or total_nodes == 0:
                continue
            found = True
            scaled = int(self.spread.size[image] * (len(slots) / total_nodes))  # kube's scaledImageScore
            for slot in slots:
                if slot < len(sums):
                    sums[slot] += scaled
        if not found:  # every sum 0, below the threshold: 0 everywhere
            return sums
        top = MAX_CONTAINER_THRESHOLD * len(cycle.pod.images)
        clamped = np.clip(sums, MIN_THRESHOLD, max(top, MIN_THRESHOLD))
        out: fwk.Scores = fwk.MAX_NODE_SCORE * (clamped - MIN_THRESHOLD) // max(top - MIN_THRESHOLD, 1)
        return out


def new(args: Any, handle: ClusterState) -> ImageLocality:
    return ImageLocality()
