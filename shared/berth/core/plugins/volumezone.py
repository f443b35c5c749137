"""VolumeZone (PreFilter, Filter): the zone and region labels of the pod's bound PVs against the
same labels on each node. A node with none of the four topology labels passes (single-zone
clusters); a beta PV label is read from the node's GA label when the node lacks the beta one."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from berth.core import framework as fwk
from berth.core.cache.state import ClusterState

NAME = "VolumeZone"
Args = None
REASON = "node(s) had no available volume zone"
BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
BETA_REGION = "failure-domain.beta.kubernetes.io/region"
ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
TOPOLOGY_KEYS = (BETA_ZONE, BETA_REGION, ZONE, REGION)
GA_OF = {BETA_ZONE: ZONE, BETA_REGION: REGION}


def label_values(value: str) -> tuple[str, ...] | None:
    """A PV label's zone set: split on `__`, trimmed; an empty element makes the label ignored."""
    values = tuple(v.strip() for v in value.split("__"))
    return None if any(not v for v in values) else values


@dataclass(frozen=True)
class _Topology:
    terms: tuple[tuple[str, tuple[str, ...]], ...]  # (label key, allowed values), one per PV label


class VolumeZone:
    name = NAME
    ignores_pods = True  # its verdict never reads the pods on a node (framework.IgnoresPods)

    def pre_filter(self, cycle: fwk.Cycle) -> fwk.Status:
        pod, state = cycle.pod, cycle.state
        terms: list[tuple[str, tuple[str, ...]]] = []
        for vol in pod.volumes:
            if vol.ephemeral:
                continue  # generic ephemeral volumes are not inspected, as upstream
            if not vol.claim_name:
                return fwk.Status(fwk.Code.UNRESOLVABLE, "PersistentVolumeClaim had no name")
            pvc = state.pvcs.get(f"{pod.namespace}/{vol.claim_name}")
            if pvc is None:
                return fwk.Status(fwk.Code.UNRESOLVABLE, f'persistentvolumeclaim "{vol.claim_name}" not found')
            if not pvc.volume_name:
                if not pvc.storage_class:
                    return fwk.Status(
                        fwk.Code.UNRESOLVABLE, "PersistentVolumeClaim had no pv name and storageClass name"
                    )
                sc = state.classes.get(pvc.storage_class)
                if sc is None:
                    return fwk.Status(
                        fwk.Code.UNRESOLVABLE, f'storageclass.storage.k8s.io "{pvc.storage_class}" not found'
                    )
                if sc.binding_mode is None:
                    return fwk.Status(fwk.Code.UNRESOLVABLE, f'VolumeBindingMode not set for StorageClass "{sc.name}"')
                if sc.binding_mode == "WaitForFirstConsumer":
                    continue
                return fwk.Status(fwk.Code.UNRESOLVABLE, "PersistentVolume had no name")
            pv = state.pvs.get(pvc.volume_name)
            if pv is None:
                return fwk.Status(fwk.Code.UNRESOLVABLE, f'persistentvolume "{pvc.volume_name}" not found')
            for key in TOPOLOGY_KEYS:
                if key in pv.labels:
                    values = label_values(pv.labels[key])
                    if values is not None:
                        terms.append((key, values))
        if not terms:
            return fwk.SKIP
        cycle.data[self.name] = _Topology(tuple(terms))
        return fwk.OK

    def filter(self, cycle: fwk.Cycle) -> list[fwk.Failure]:
        topo: _Topology = cycle.data[self.name]
        nodes = cycle.state.nodes
        labelled = np.zeros(len(nodes.valid), dtype=bool)
        for key in TOPOLOGY_KEYS:
            labelled |= nodes.key_mask(key)
        ok = nodes.valid.copy()
        for key, values in topo.terms:
            match = nodes.label_mask(key, values)
            if key in GA_OF:
                match = match | (~nodes.key_mask(key) & nodes.label_mask(GA_OF[key], values))
            ok &= match
        bad = nodes.valid & labelled & ~ok
        return [fwk.Failure(bad, REASON, fwk.Code.UNRESOLVABLE)] if bad.any() else []

    def explain_filter(self, cycle: fwk.Cycle, slots: fwk.Slots) -> dict[int, list[fwk.Why]]:
        """Per bound PV of the pod: its zone and region labels the node's do not match, with the node's
        values; the change tried is the PV labelled as the node is (a PV in the node's zone)."""
        pod, state, nodes = cycle.pod, cycle.state, cycle.state.nodes
        pvs = []
        for vol in pod.volumes:
            pvc = None if vol.ephemeral else state.pvcs.get(f"{pod.namespace}/{vol.claim_name}")
            if pvc is not None and pvc.volume_name and (pv := state.pvs.get(pvc.volume_name)) is not None:
                pvs.append((pvc, pv))
        out: dict[int, list[fwk.Why]] = {}
        for s in slots.tolist():
            node = nodes.node(s)
            if node is None:
                continue
            whys = []
            for pvc, pv in pvs:
                wrong = []
                for key in TOPOLOGY_KEYS:
                    values = label_values(pv.labels[key]) if key in pv.labels else None
                    if values is None:
                        continue
                    have = node.labels.get(key)
                    if have is None and key in GA_OF:
                        have = node.labels.get(GA_OF[key])
                    if have not in values:
                        wrong.append((key, pv.labels[key], have))
                if not wrong:
                    continue
                shown = ", ".join(f"{k}={v} (node: {h if h is not None else 'no such label'})" for k, v, h in wrong)
                text = f"claim {pvc.key} is bound to PV {pv.name}, labelled {shown}"
                facts = {
                    "claim": pvc.key,
                    "pv": pv.name,
                    "labels": [{"key": k, "pv": v, "node": h} for k, v, h in wrong],
                }
                relabel = tuple((k, h) for k, _, h in wrong if h is not None)
                change = fwk.Change(relabel=((pv.name, relabel),)) if len(relabel) == len(wrong) else None
                whys.append(fwk.Why(REASON, text, facts, change))
            if whys:
                out[s] = whys
        return out

    def events_to_register(self) -> tuple[fwk.ClusterEventWithHint, ...]:
        return (
            fwk.ClusterEventWithHint(fwk.ClusterEvent("StorageClass", fwk.Action.ADD)),
            fwk.ClusterEventWithHint(fwk.ClusterEvent("Node", fwk.Action.ADD | fwk.Action.UPDATE)),
            fwk.ClusterEventWithHint(
                fwk.ClusterEvent("PersistentVolumeClaim", fwk.Action.ADD | fwk.Action.UPDATE),
                lambda state, obj, now: fwk.claim_hint(obj),
            ),
            fwk.ClusterEventWithHint(fwk.ClusterEvent("PersistentVolume", fwk.Action.ADD | fwk.Action.UPDATE)),
        )


def new(args: Any, handle: ClusterState) -> VolumeZone:
    return VolumeZone()
