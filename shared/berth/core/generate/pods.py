"""Pod plumbing shared by every workload: containers, what admission adds, owner references, running pods."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from berth.core.generate.ids import Ids, cpu, mem, rfc3339

APPS = "apps/v1"
DEFAULT_TOLERATIONS = [
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
]


def container(name: str, image: str, cpu_milli: int, mem_mib: int, mounts: list[dict[str, Any]]) -> dict[str, Any]:
    """Burstable: cpu limit twice the request, memory limit equal to it."""
    c: dict[str, Any] = {
        "name": name,
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "resources": {
            "requests": {"cpu": cpu(cpu_milli), "memory": mem(mem_mib)},
            "limits": {"cpu": cpu(2 * cpu_milli), "memory": mem(mem_mib)},
        },
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
    }
    if mounts:
        c["volumeMounts"] = mounts
    return c


def owner(api_version: str, kind: str, name: str, uid: str) -> dict[str, Any]:
    return {
        "apiVersion": api_version,
        "kind": kind,
        "name": name,
        "uid": uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }


def _token_volume(ids: Ids) -> tuple[dict[str, Any], dict[str, Any]]:
    name = f"kube-api-access-{ids.suffix()}"
    volume = {
        "name": name,
        "projected": {
            "defaultMode": 420,
            "sources": [
                {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                {
                    "downwardAPI": {
                        "items": [
                            {"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}
                        ]
                    }
                },
            ],
        },
    }
    mount = {"name": name, "readOnly": True, "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}
    return volume, mount


def admitted_spec(spec: dict[str, Any], ids: Ids, volumes: list[dict[str, Any]]) -> dict[str, Any]:
    """A template spec as the API server stores it in a pod: service account, token volume, tolerations."""
    token, mount = _token_volume(ids)
    containers = [{**c, "volumeMounts": [*c.get("volumeMounts", []), mount]} for c in spec["containers"]]
    out = {**spec, "containers": containers, "volumes": [*volumes, token]}
    out.update(
        serviceAccountName="default",
        serviceAccount="default",
        tolerations=[*spec.get("tolerations", []), *DEFAULT_TOLERATIONS],
        priority=0,
        enableServiceLinks=True,
        preemptionPolicy="PreemptLowerPriority",
    )
    return out


def running(pod: dict[str, Any], node: str, host_ip: str, pod_ip: str, since: datetime) -> dict[str, Any]:
    """A pod that was bound and started before the recording began."""
    t = rfc3339(since)
    conditions = [
        {"type": k, "status": "True", "lastProbeTime": None, "lastTransitionTime": t}
        for k in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled")
    ]
    statuses = [
        {
            "name": c["name"],
            "image": c["image"],
            "imageID": "",
            "containerID": f"containerd://{pod['metadata']['uid'].replace('-', '')}",
            "ready": True,
            "started": True,
            "restartCount": 0,
            "state": {"running": {"startedAt": t}},
        }
        for c in pod["spec"]["containers"]
    ]
    status = {
        **pod["status"],
        "phase": "Running",
        "conditions": conditions,
        "hostIP": host_ip,
        "hostIPs": [{"ip": host_ip}],
        "podIP": pod_ip,
        "podIPs": [{"ip": pod_ip}],
        "startTime": t,
        "containerStatuses": statuses,
    }
    return {**pod, "spec": {**pod["spec"], "nodeName": node}, "status": status}


def daemon_pod(node: str, ds_uid: str, revision: str, ids: Ids, created: datetime) -> dict[str, Any]:
    """A node-exporter DaemonSet pod pinned to `node` (pending until `running` binds it)."""
    name = f"node-exporter-{ids.suffix()}"
    c = container("node-exporter", "quay.io/prometheus/node-exporter:v1.8.2", 100, 128, [])
    spec = {
        "containers": [c],
        "restartPolicy": "Always",
        "terminationGracePeriodSeconds": 30,
        "dnsPolicy": "ClusterFirst",
        "hostNetwork": True,
        "hostPID": True,
        "securityContext": {},
        "schedulerName": "default-scheduler",
        "priorityClassName": "system-node-critical",
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
                    ]
                }
            }
        },
        "tolerations": [
            {"key": f"node.kubernetes.io/{t}", "operator": "Exists", "effect": "NoSchedule"}
            for t in ("disk-pressure", "memory-pressure", "pid-pressure", "unschedulable", "network-unavailable")
        ],
    }
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "generateName": "node-exporter-",
            "namespace": "monitoring",
            "uid": ids.uid(),
            "creationTimestamp": rfc3339(created),
            "labels": {
                "app.kubernetes.io/name": "node-exporter",
                "controller-revision-hash": revision,
                "pod-template-generation": "1",
            },
            "ownerReferences": [owner(APPS, "DaemonSet", "node-exporter", ds_uid)],
        },
        "spec": {**admitted_spec(spec, ids, []), "priority": 2000001000},
        "status": {"phase": "Pending", "qosClass": "Burstable"},
    }
    return pod
