"""Binder mode (`berth scorer --bind`): berth writes its decisions to the API server.

Two ways in. Pods with `schedulerName: berth` are bound as soon as the scorer decides them (berth is
a secondary scheduler): their volumes first, as kube-scheduler's VolumeBinding PreBind does (claimRef
on the chosen PVs, the selected-node annotation on claims to provision), then the pod's Binding.
kube-scheduler's extender bindVerb hands berth the node it chose after its own PreBind plugins have
bound the volumes: berth creates only the Binding. A 409 from any of them means someone else got
there first: the reservation is released and the pod is decided again later.
"""

from __future__ import annotations

import logging

from berth.adapters.kube.client import (
    KubeClient,
    KubeError,
    bind_pod,
    delete_pod,
    mark_preempted,
    nominate_node,
    prebind_pv,
    select_node,
)
from berth.core.api.core.model import Pod
from berth.core.api.watch import format_time
from berth.core.cache.state import Reservation
from berth.core.pipeline.scorer import ScorerEngine

log = logging.getLogger("berth.scorer")

SCHEDULER_NAME = "berth"


class BindError(Exception):
    def __init__(self, message: str, conflict: bool = False) -> None:
        super().__init__(message)
        self.conflict = conflict


class Binder:
    def __init__(self, client: KubeClient, scheduler_name: str = SCHEDULER_NAME) -> None:
        self.client = client
        self.scheduler_name = scheduler_name

    def ours(self, engine: ScorerEngine, pod_key: str) -> bool:
        """Whether berth schedules this pod itself (its schedulerName)."""
        pod = engine.state.pods.get(pod_key)
        return pod is not None and pod.scheduler_name == self.scheduler_name

    async def write(self, engine: ScorerEngine, held: Reservation, volumes: bool = True) -> None:
        """PreBind the reservation's volumes (unless kube-scheduler has: volumes=False), then bind the
        pod. On failure the reservation is revoked (the pod waits and is retried) and BindError says
        why (conflict: a 409)."""
        pod, state = held.pod, engine.state
        try:
            for claim_key, pv_name in held.bindings if volumes else ():
                pv, pvc = state.pvs.get(pv_name), state.pvcs.get(claim_key)
                if pv is None or pvc is None:
                    raise BindError(f"PV {pv_name} or claim {claim_key} is gone")
                await prebind_pv(self.client, pv_name, pvc.namespace, pvc.name, pvc.uid, pv.resource_version)
            for claim_key in held.provisions if volumes else ():
                namespace, _, name = claim_key.partition("/")
                await select_node(self.client, namespace, name, held.node)
            await bind_pod(self.client, pod.namespace, pod.name, held.node, pod.uid or None)
        except KubeError as e:
            engine.revoke(pod.key)
            log.info("bind failed", extra={"pod": pod.key, "node": held.node, "error": str(e)})
            raise BindError(f"binding {pod.key} to {held.node}: {e}", conflict=e.status == 409) from e
        except BindError:
            engine.revoke(pod.key)
            raise
        log.info("bound", extra={"pod": pod.key, "node": held.node})

    async def preempt(self, engine: ScorerEngine, pod_key: str, node: str, victims: list[str]) -> None:
        """Carry out a preemption as kube-scheduler does: each victim not already going gets the
        DisruptionTarget condition, then is deleted; the preemptor's status.nominatedNodeName is
        the node. The deletions, as the watcher reports them, make the preemptor fit."""
        state = engine.state
        pod = state.pods.get(pod_key)
        if pod is None:
            return
        now = format_time(engine.applier.now)
        message = f"{pod.scheduler_name}: preempting to accommodate a higher priority pod"
        if any((v := state.pods.get(key)) is not None and not v.deleting for key in victims):
            await self._clear_lower(engine, pod, node)
        for key in victims:
            victim = state.pods.get(key)
            if victim is None or victim.deleting:
                continue
            try:
                await mark_preempted(self.client, victim.namespace, victim.name, message, now)
                await delete_pod(self.client, victim.namespace, victim.name)
            except KubeError as e:
                if e.status != 404:
                    log.warning("preemption failed", extra={"pod": pod_key, "victim": key, "error": str(e)})
                    return
            log.info("preempted", extra={"pod": pod_key, "victim": key, "node": node})
        try:
            await nominate_node(self.client, pod.namespace, pod.name, node)
        except KubeError as e:
            log.warning("nomination failed", extra={"pod": pod_key, "node": node, "error": str(e)})

    async def _clear_lower(self, engine: ScorerEngine, preemptor: Pod, node: str) -> None:
        """kube's asynchronous preemption: the pending pods nominated to the node with a priority below
        the preemptor's lose their status.nominatedNodeName (the engine has cleared them already); only
        this scheduler's pods, as kube's nominator holds only its own."""
        mine = engine.state.priority(preemptor)
        for other in engine.state.pending_pods():
            ours = other.scheduler_name == self.scheduler_name
            if not ours or other.nominated_node != node or engine.state.priority(other) >= mine:
                continue
            try:
                await nominate_node(self.client, other.namespace, other.name, None)
            except KubeError as e:
                if e.status != 404:
                    log.warning("clearing a nomination failed", extra={"pod": other.key, "error": str(e)})
                continue
            log.info("nomination cleared", extra={"pod": other.key, "node": node, "by": preemptor.key})
