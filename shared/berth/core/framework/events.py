"""Cluster events and queueing hints (kube: fwk.ClusterEvent, QueueingHintFn)."""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np

from berth.core.api.core.model import Pod

if TYPE_CHECKING:
    from berth.core.cache.state import ClusterState


from berth.core.framework.types import Mask


class Action(enum.IntFlag):
    """kube's ActionType. For pods berth reports DELETE when an assigned pod leaves its node:
    deleted, finished or bound elsewhere (kube's AssignedPodDelete), and an assigned pod's update
    as UPDATE_POD_LABEL (its labels changed) and/or UPDATE_POD_SCALE_DOWN (some of its requests
    went down: pod_update). Both are parts of UPDATE, as in kube: a plugin registered for UPDATE
    sees either. Updates of other kinds are reported as UPDATE."""

    ADD = 1
    UPDATE_POD_LABEL = 2
    DELETE = 4
    UPDATE_POD_SCALE_DOWN = 8
    UPDATE = UPDATE_POD_LABEL | UPDATE_POD_SCALE_DOWN
    ALL = ADD | UPDATE | DELETE


@dataclass(frozen=True)
class PodUpdate:
    """What the hints of an assigned pod's update read: the pod before and after."""

    old: Pod
    new: Pod


def pod_update(old: Pod, new: Pod) -> Action:
    """What an assigned pod's update is (kube's PodSchedulingPropertiesChange, the parts berth
    reports): UPDATE_POD_LABEL for new labels, UPDATE_POD_SCALE_DOWN when a request of the old pod is
    gone or smaller in the new one (extractPodScaleDown, over PodRequests with UseStatusResources,
    which Pod.requests holds); Action(0) for neither (kube's updatePodOther)."""
    action = Action.UPDATE_POD_LABEL if old.labels != new.labels else Action(0)
    now = new.requests
    if any(k not in now or now[k] < v for k, v in old.requests.items()):
        action |= Action.UPDATE_POD_SCALE_DOWN
    return action


@dataclass(frozen=True)
class ClusterEvent:
    """A change of a resource (a kind, as berth's models name it) that can make a rejected pod fit."""

    resource: str
    action: Action = Action.ALL

    def matches(self, resource: str, action: Action) -> bool:
        return self.resource == resource and bool(self.action & action)


# A vectorised queueing hint (kube's QueueingHintFn) over many waiting pods at once: which of them
# the change can help. The int names the pod list (same number, same pods), so a plugin may cache per list.
Hint = Callable[[list[Pod | None], int | None], Mask]
# Made once per change: (state, changed object, now) -> the hint for that change.
HintFactory = Callable[["ClusterState", Any, datetime], Hint]


def never(pods: list[Pod | None], version: int | None) -> Mask:
    """The hint of a change that helps none of the waiting pods: the retry queue passes over the
    plugin for that change without calling it (the answer would be all false)."""
    return np.zeros(len(pods), dtype=bool)


def each_pod(pods: list[Pod | None], helps: Callable[[Pod], bool]) -> Mask:
    """A hint's answer pod by pod (kube's QueueingHintFn is per pod); a pod gone is retried (and so leaves
    the queue)."""
    return np.fromiter((p is None or helps(p) for p in pods), dtype=bool, count=len(pods))


def claim_hint(obj: Any) -> Hint:
    """kube's hint for a PersistentVolumeClaim added or updated: retry a pod that uses that claim."""
    ns, name = obj.namespace, obj.name
    return lambda pods, version: each_pod(
        pods, lambda p: p.namespace == ns and any(v.claim_name == name for v in p.volumes)
    )


@dataclass(frozen=True)
class ClusterEventWithHint:
    event: ClusterEvent
    hint: HintFactory | None = None  # None: every such change is worth a retry
