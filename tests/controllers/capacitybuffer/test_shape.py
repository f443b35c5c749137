"""Pod shape resolution: PodTemplates, live pods, workload templates, and their failures."""

from __future__ import annotations

from typing import Any

import pytest

from berth.core.api.workloads.model import PodTemplate
from berth.core.controllers.capacitybuffer.shape import (
    chunk_from_template,
    managed_generation,
    managed_name,
    managed_template,
    resolve_spec,
)
from tests.controllers.capacitybuffer.builders import (
    buffer,
    live_pod,
    one,
    pod_spec,
    pod_template,
    ready_message,
    workload,
)

PREFIX = "Buffer not ready for provisioning: "


def test_pod_template_ref_resolves_to_the_managed_template() -> None:
    r = one(pod_template("tpl", cpu="250m", memory="1Gi", labels={"app": "x"}), buffer("b", template="tpl", replicas=2))
    assert ready_message(r) == ("True", "AttributesSetSuccessfully", "ready")
    assert (r.status.pod_template_ref, r.status.replicas, r.status.pod_template_generation) == (
        "capacitybuffer-b-pod-template",
        2,
        1,
    )
    assert r.chunk is not None
    assert r.chunk.pod.requests == {"cpu": 250, "memory": 2**30}
    assert r.chunk.labels == {"app": "x"}


def test_defaulting_resolver_copies_limits_and_drops_api_access_volumes() -> None:
    spec = {
        "nodeName": "node-a",
        "containers": [
            {
                "name": "main",
                "resources": {"limits": {"cpu": "2", "memory": "1Gi"}, "requests": {"cpu": "1"}},
                "volumeMounts": [
                    {"name": "kube-api-access-x1", "mountPath": "/var/run"},
                    {"name": "data", "mountPath": "/d"},
                ],
            }
        ],
        "volumes": [{"name": "kube-api-access-x1", "projected": {}}, {"name": "data", "emptyDir": {}}],
        "resources": {"limits": {"cpu": "3"}},
    }
    out = resolve_spec(spec)
    assert "nodeName" not in out
    assert out["containers"][0]["resources"]["requests"] == {"cpu": "1", "memory": "1Gi"}
    assert out["containers"][0]["volumeMounts"] == [{"name": "data", "mountPath": "/d"}]
    assert out["volumes"] == [{"name": "data", "emptyDir": {}}]
    assert out["resources"]["requests"] == {"cpu": "3"}
    assert spec["nodeName"] == "node-a"  # the input is not touched


def test_effective_requests_follow_kube() -> None:
    spec = {
        "initContainers": [
            {"name": "sidecar", "restartPolicy": "Always", "resources": {"requests": {"cpu": "500m"}}},
            {"name": "setup", "resources": {"requests": {"cpu": "2"}}},
        ],
        "containers": [{"name": "main", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}],
        "overhead": {"cpu": "100m"},
    }
    chunk = chunk_from_template("ns", "t", {"spec": spec})
    # init peak 2 + sidecar 0.5 beats 1 + 0.5; overhead on top
    assert chunk.pod.requests == {"cpu": 2600, "memory": 2**30}


def test_managed_name_is_truncated() -> None:
    assert managed_name("b") == "capacitybuffer-b-pod-template"
    assert len(managed_name("x" * 300)) == 253


def test_managed_generation() -> None:
    chunk = chunk_from_template("ns", "t", {"metadata": {"labels": {"a": "b"}}, "spec": pod_spec()})
    same = PodTemplate("ns", "m", generation=4, template=managed_template(chunk))
    other = PodTemplate("ns", "m", generation=4, template={"spec": pod_spec(cpu="2")})
    assert managed_generation(None, chunk) == 1
    assert managed_generation(same, chunk) == 4
    assert managed_generation(other, chunk) == 5


def test_existing_managed_template_generation_is_reported() -> None:
    managed = pod_template("capacitybuffer-b-pod-template", generation=7, cpu="3")
    r = one(pod_template("tpl", cpu="1"), managed, buffer("b", template="tpl", replicas=1))
    assert r.status.pod_template_generation == 8


# ---- scalableRef -------------------------------------------------------------------------


def test_newest_live_pod_wins_and_scale_status_counts() -> None:
    r = one(
        workload("web", replicas=10, ready=4, cpu="1"),
        live_pod("web-old", labels={"app": "web"}, cpu="300m", created="2026-11-01T08:00:00Z"),
        live_pod("web-new", labels={"app": "web"}, cpu="700m", created="2026-11-01T09:00:00Z"),
        live_pod("other", labels={"app": "other"}, cpu="5", created="2026-11-01T11:00:00Z"),
        buffer("b", scalable=("apps", "Deployment", "web"), percentage=50),
    )
    assert r.chunk is not None and r.chunk.pod.requests["cpu"] == 700
    assert r.chunk.pod.node_name == ""
    assert r.status.replicas == 2  # ceil(50% of status.replicas 4), not of spec.replicas 10


def test_live_pod_shape_keeps_scheduling_fields() -> None:
    r = one(
        workload("web"),
        live_pod(
            "web-1",
            labels={"app": "web"},
            cpu="1",
            nodeSelector={"disk": "ssd"},
            tolerations=[{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}],
            priorityClassName="high",
        ),
        buffer("b", scalable=("apps", "Deployment", "web"), replicas=1),
    )
    assert r.chunk is not None
    spec = r.chunk.spec
    assert spec["nodeSelector"] == {"disk": "ssd"}
    assert spec["tolerations"] == [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}]
    assert spec["priorityClassName"] == "high"
    assert spec["containers"][0]["resources"]["requests"] == {"cpu": "1000m", "memory": str(2**30)}


@pytest.mark.parametrize(
    ("kind", "group", "count_field"),
    [
        ("Deployment", "apps", "replicas"),
        ("ReplicaSet", "apps", "replicas"),
        ("StatefulSet", "apps", "replicas"),
        ("Job", "batch", "parallelism"),
        ("ReplicationController", "core", "replicas"),
    ],
)
def test_workload_template_fallback(kind: str, group: str, count_field: str) -> None:
    r = one(workload("w", kind=kind, replicas=8, cpu="2"), buffer("b", scalable=(group, kind, "w"), percentage=25))
    assert ready_message(r)[0] == "True"
    assert r.chunk is not None and r.chunk.pod.requests["cpu"] == 2000
    assert r.status.replicas == 2  # 25% of spec.replicas (Job: parallelism) 8


def test_job_never_uses_live_pods() -> None:
    r = one(
        workload("j", kind="Job", replicas=4, cpu="2"),
        live_pod("j-1", labels={"app": "j"}, cpu="9"),
        buffer("b", scalable=("batch", "Job", "j"), replicas=1),
    )
    assert r.chunk is not None and r.chunk.pod.requests["cpu"] == 2000


def test_missing_spec_replicas_defaults_to_one() -> None:
    r = one(workload("w", replicas=None), buffer("b", scalable=("apps", "Deployment", "w"), percentage=100))
    assert r.status.replicas == 1


def test_rc_in_the_empty_group_resolves_only_through_live_pods() -> None:
    rc = workload("rc", kind="ReplicationController", replicas=2, ready=2)
    pod = live_pod("rc-1", labels={"app": "rc"}, cpu="3")
    with_pod = one(rc, pod, buffer("b", scalable=("", "ReplicationController", "rc"), replicas=1))
    assert with_pod.chunk is not None and with_pod.chunk.pod.requests["cpu"] == 3000
    without = one(rc, buffer("b", scalable=("", "ReplicationController", "rc"), replicas=1))
    assert ready_message(without)[2] == PREFIX + (
        "failed to resolve scalable object: kind /ReplicationController is not supported to use pod template"
    )


FAILURES: list[tuple[str, list[dict[str, Any]], tuple[str, str, str], str]] = [
    (
        "missing template",
        [],
        ("", "", ""),
        'capacity buffer client can\'t get pod template: podtemplates "tpl" not found',
    ),
    (
        "missing deployment",
        [],
        ("apps", "Deployment", "web"),
        'failed to resolve live pod: failed to get scale object: failed to get scale sub resource: deployments.apps "web" '
        'not found, failed to resolve scalable object: failed to get Deployment: failed to get Deployment: deployment.apps "web" not found',
    ),
    (
        "missing job",
        [],
        ("batch", "Job", "j"),
        "failed to resolve live pod: failed to get scale object: failed to get scale sub resource: the server could not "
        "find the requested resource, failed to resolve scalable object: failed to get Deployment: failed to get Job: "
        'job.batch "j" not found',
    ),
    (
        "unknown kind",
        [],
        ("example.com", "Widget", "w"),
        'failed to resolve live pod: failed to get scale object: no matches for kind "Widget" in group "example.com", '
        "failed to resolve scalable object: kind example.com/Widget is not supported to use pod template",
    ),
    (
        "wrong group",
        [workload("web")],
        ("", "Deployment", "web"),
        'failed to resolve live pod: failed to get scale object: no matches for kind "Deployment" in group "", '
        "failed to resolve scalable object: kind /Deployment is not supported to use pod template",
    ),
    (
        "bad template quantity",
        [pod_template("tpl", cpu="lots")],
        ("", "", ""),
        "failed to create fake pod: spec.containers[0].resources.requests.cpu: quantities must match the regular "
        "expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$': got 'lots'",
    ),
    (
        "bad workload template",
        [workload("web", cpu="lots")],
        ("apps", "Deployment", "web"),
        "failed to resolve pod spec: spec.containers[0].resources.requests.cpu: quantities must match the regular "
        "expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$': got 'lots'",
    ),
]


@pytest.mark.parametrize(("objects", "ref", "message"), [f[1:] for f in FAILURES], ids=[f[0] for f in FAILURES])
def test_resolution_failures(objects: list[dict[str, Any]], ref: tuple[str, str, str], message: str) -> None:
    b = buffer("b", template="tpl", replicas=1) if not ref[1] else buffer("b", scalable=ref, replicas=1)
    r = one(*objects, b)
    assert ready_message(r) == ("False", "error", PREFIX + message)
    assert (r.status.pod_template_ref, r.status.pod_template_generation, r.status.replicas) == (None, None, None)
    assert r.status.provisioning_strategy == "buffer.x-k8s.io/active-capacity"


def test_replica_failure_keeps_the_managed_reference() -> None:
    r = one(pod_template("tpl"), buffer("b", template="tpl", percentage=50))
    assert ready_message(r) == (
        "False",
        "error",
        PREFIX + "couldn't get number of replicas for buffer: replicas, percentage and limits are not defined",
    )
    assert (r.status.pod_template_ref, r.status.pod_template_generation, r.status.replicas) == (
        "capacitybuffer-b-pod-template",
        1,
        None,
    )


def test_limits_without_overlap_are_an_error() -> None:
    r = one(pod_template("tpl", cpu="8"), buffer("b", template="tpl", limits={"mem": "5120Mi", "cpi": 40}))
    assert ready_message(r)[2] == PREFIX + (
        "couldn't get number of replicas for buffer: resources in configured limits not found in the pod template"
    )
