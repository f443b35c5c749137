"""docker-compose.yml without a Docker engine: the Compose specification's schema (vendored from the
docker-compose 1.29.2 wheel, see tests/data/compose/NOTICE.md), berth's settings, and the wiring:
health checks, start order, volumes, topics, the sample replay and the opt-in watcher."""

from __future__ import annotations

import hashlib
import http.server
import json
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from typing import Any, ClassVar

import jsonschema
import pytest
import yaml

from berth.core.config.kubeschedulerconfig import parse_config
from berth.settings import ENV, TopicSettings, from_env
from tests.deploy.helpers import COMPOSE_FILE, ROOT, berth_vars, check_berth_args

SCHEMA_DIR = ROOT / "tests" / "data" / "compose"
BERTH = ("indexer", "scorer", "buffer-controller", "replayer", "watcher")
SERVICES = ("kafka", "redis", "topics", *BERTH)
INTERPOLATION = re.compile(r"\$(\$|\{[A-Za-z_][A-Za-z0-9_]*(:?[-?+][^}]*)?\})")


def _compose() -> dict[str, Any]:
    doc = yaml.safe_load(COMPOSE_FILE.read_text())
    assert isinstance(doc, dict)
    return doc


def _services() -> dict[str, dict[str, Any]]:
    services: dict[str, dict[str, Any]] = _compose()["services"]
    return services


def _env(service: dict[str, Any]) -> dict[str, str]:
    env = service.get("environment") or {}
    if isinstance(env, list):
        env = dict(item.split("=", 1) for item in env)
    return {k: str(v) for k, v in env.items()}


def test_vendored_schema_is_the_one_noted() -> None:
    notice = (SCHEMA_DIR / "NOTICE.md").read_text()
    digest = hashlib.sha256((SCHEMA_DIR / "compose_spec.json").read_bytes()).hexdigest()
    assert f"schema sha256: `{digest}`" in notice
    assert (SCHEMA_DIR / "LICENSE").read_text().lstrip().startswith("Apache License")


def test_matches_the_compose_specification() -> None:
    schema = json.loads((SCHEMA_DIR / "compose_spec.json").read_text())
    validator = jsonschema.Draft201909Validator(schema)
    errors = [f"{'.'.join(map(str, e.path))}: {e.message}" for e in validator.iter_errors(_compose())]
    assert errors == []


def _strings(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for k, v in node.items():
            yield str(k)
            yield from _strings(v)
    elif isinstance(node, list):
        for v in node:
            yield from _strings(v)
    elif isinstance(node, str):
        yield node


def test_interpolation_is_deliberate() -> None:
    """Compose substitutes $VAR and ${VAR} in values: every $ is either $$ (a literal $) or a ${...}
    with a default, and KUBECONFIG is the only variable taken from the shell."""
    for text in _strings(_compose()):
        pos = 0
        while (i := text.find("$", pos)) >= 0:
            m = INTERPOLATION.match(text, i)
            assert m, f"{text[i : i + 30]!r}: write $$ for a literal $"
            if m.group(1) != "$":
                name = re.match(r"\{([A-Za-z0-9_]+)", m.group(1))
                assert name and name.group(1) == "KUBECONFIG" and m.group(2), m.group(0)
            pos = m.end()


def test_services() -> None:
    services = _services()
    assert set(services) == set(SERVICES)
    assert [n for n, s in services.items() if s.get("profiles")] == ["watcher"]
    assert services["watcher"]["profiles"] == ["watcher"]
    for name, s in services.items():
        image = s["image"]
        assert ":" in image and not image.endswith(":latest"), f"{name}: pin the image"
        for port in s.get("ports", []):
            assert str(port).startswith("127.0.0.1:"), f"{name}: publish on localhost only"


def test_berth_settings_are_known_and_valid() -> None:
    unknown = berth_vars(_compose()) - ENV.keys()
    assert not unknown, f"not berth settings: {sorted(unknown)}"
    for name in BERTH:
        env = _env(_services()[name])
        settings = from_env({k: v for k, v in env.items() if k.startswith("BERTH_")})
        assert settings.kafka.bootstrap_servers == "kafka:9092", name
        assert settings.redis.url == "redis://redis:6379/0", name


def test_berth_services_are_hardened_and_share_the_image() -> None:
    for name in BERTH:
        s = _services()[name]
        assert s["image"] == "berth:dev" and s["build"] == ".", name
        assert s["read_only"] is True, name
        assert s["user"] == "10001:10001", name
        assert s["cap_drop"] == ["ALL"], name
        assert "no-new-privileges:true" in s["security_opt"], name
        assert "/tmp" in s["tmpfs"], name
        assert "command" in s and "entrypoint" not in s, f"{name}: the image's entrypoint is berth"


def test_berth_commands_parse() -> None:
    for name in BERTH:
        check_berth_args(_services()[name]["command"])


def _healthcheck_code(service: dict[str, Any]) -> str:
    test = service["healthcheck"]["test"]
    assert test[:3] == ["CMD", "python", "-c"], test
    code: str = test[3]
    return code


def test_health_checks() -> None:
    services = _services()
    for name in ("kafka", "redis", "indexer", "scorer", "buffer-controller", "watcher"):
        check = services[name]["healthcheck"]
        assert not check.get("disable"), name
        assert "curl" not in str(check["test"]) and "wget" not in str(check["test"]), f"{name}: the images lack them"
    for name in ("indexer", "scorer", "buffer-controller", "watcher"):
        assert "/readyz" in _healthcheck_code(services[name]), name
    assert services["replayer"]["healthcheck"] == {"disable": True}


class _Health(http.server.BaseHTTPRequestHandler):
    status = 200
    paths: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        type(self).paths.append(self.path)
        self.send_response(type(self).status)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def health_server() -> Iterator[tuple[int, type[_Health]]]:
    class Handler(_Health):
        paths: ClassVar[list[str]] = []

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1], Handler
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_the_python_health_check_works(health_server: tuple[int, type[_Health]]) -> None:
    """The one-liner, run as the container would: exit 0 on 200 from /readyz on BERTH_HTTP_PORT, else not."""
    port, handler = health_server
    code = _healthcheck_code(_services()["scorer"])
    env = {**os.environ, "BERTH_HTTP_PORT": str(port)}

    def run() -> int:
        return subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, timeout=30, check=False
        ).returncode

    assert run() == 0
    handler.status = 503
    assert run() != 0
    assert handler.paths == ["/readyz", "/readyz"]


def test_start_order() -> None:
    services = _services()
    for name, s in services.items():
        deps = s.get("depends_on", {})
        assert isinstance(deps, dict), f"{name}: depends_on with conditions"
        for dep, spec in deps.items():
            target = services[dep]
            if spec["condition"] == "service_healthy":
                assert "healthcheck" in target and not target["healthcheck"].get("disable"), f"{name} -> {dep}"
            if spec["condition"] == "service_completed_successfully":
                assert target.get("restart") == "no", f"{name} -> {dep}: a one-shot"
            assert not target.get("profiles"), f"{name} -> {dep}: not behind a profile"
    infra = {"kafka": "service_healthy", "redis": "service_healthy", "topics": "service_completed_successfully"}
    for name in BERTH:
        deps = {d: spec["condition"] for d, spec in services[name]["depends_on"].items()}
        assert infra.items() <= deps.items(), name
    replayer = {d: spec["condition"] for d, spec in services["replayer"]["depends_on"].items()}
    assert {"indexer", "scorer", "buffer-controller"} <= {d for d, c in replayer.items() if c == "service_healthy"}
    assert services["topics"]["depends_on"] == {"kafka": {"condition": "service_healthy"}}


def test_volumes() -> None:
    doc = _compose()
    declared = set(doc.get("volumes") or {})
    used = set()
    for name, s in doc["services"].items():
        for v in s.get("volumes", []):
            source = v.split(":")[0]
            if source.startswith(("./", "/", "~", "$")):
                if source.startswith("./"):
                    assert (ROOT / source).exists(), f"{name}: {source}"
                continue
            assert source in declared, f"{name}: volume {source} is not declared"
            used.add(source)
    assert used == declared
    assert "kafka-data:/var/lib/kafka/data" in doc["services"]["kafka"]["volumes"]
    assert "redis-data:/data" in doc["services"]["redis"]["volumes"]
    assert "indexer-data:/var/lib/berth" in doc["services"]["indexer"]["volumes"]


def test_kafka_runs_kraft_and_advertises_what_berth_uses() -> None:
    kafka = _services()["kafka"]
    assert kafka["image"].startswith("apache/kafka:")
    env = _env(kafka)
    assert set(env["KAFKA_PROCESS_ROLES"].split(",")) == {"broker", "controller"}
    assert not any("ZOOKEEPER" in k for k in env)
    assert env["KAFKA_CONTROLLER_QUORUM_VOTERS"] == f"{env['KAFKA_NODE_ID']}@kafka:9093"
    assert "PLAINTEXT://kafka:9092" in env["KAFKA_ADVERTISED_LISTENERS"].split(",")
    listeners = dict(x.split("://") for x in env["KAFKA_LISTENERS"].split(","))
    protocols = dict(x.split(":") for x in env["KAFKA_LISTENER_SECURITY_PROTOCOL_MAP"].split(","))
    assert set(listeners) == set(protocols)
    assert env["KAFKA_CONTROLLER_LISTENER_NAMES"] in listeners
    assert env["KAFKA_LOG_DIRS"] == "/var/lib/kafka/data"
    assert int(env["KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR"]) == 1


def test_topics_are_berths() -> None:
    topics = _services()["topics"]
    assert topics["image"] == _services()["kafka"]["image"]
    script = "\n".join(topics["command"])
    loop = re.search(r"for topic in ([^;]+);", script)
    assert loop is not None
    defaults = TopicSettings()
    assert loop.group(1).split() == [
        defaults.cluster_events,
        defaults.decisions,
        defaults.buffer_status,
        defaults.dead_letter,
    ]
    assert f"--partitions {defaults.partitions}" in script
    assert "--if-not-exists" in script and "--bootstrap-server kafka:9092" in script


def test_replayer_feeds_the_sample_log() -> None:
    replayer = _services()["replayer"]
    command = replayer["command"]
    assert command[0] == "replay" and command[command.index("--bootstrap-servers") + 1] == "kafka:9092"
    log = command[1]
    mounts = {v.split(":")[1]: v.split(":")[0] for v in replayer["volumes"]}
    (target,) = [t for t in mounts if log.startswith(t + "/")]
    assert (ROOT / mounts[target] / log[len(target) + 1 :]).is_file()
    assert log.endswith("small.jsonl.gz") and replayer["volumes"][0].endswith(":ro")
    assert replayer["restart"] == "no"


def test_scorer_reads_the_shared_scheduler_config() -> None:
    scorer = _services()["scorer"]
    path = _env(scorer)["BERTH_SCHEDULER_CONFIG"]
    (mount,) = [v for v in scorer["volumes"] if v.split(":")[1] == path]
    source, _, mode = mount.split(":")
    assert mode == "ro" and source == "./deploy/base/scheduler.yaml"  # the one the Kubernetes ConfigMap is made of
    parse_config(yaml.safe_load((ROOT / source).read_text()))


def test_watcher_mounts_a_kubeconfig() -> None:
    watcher = _services()["watcher"]
    path = _env(watcher)["KUBECONFIG"]
    (mount,) = [v for v in watcher["volumes"] if v.rsplit(":", 2)[1] == path]
    assert mount.startswith("${KUBECONFIG:-") and mount.endswith(":ro")


def test_makefile_targets() -> None:
    text = (ROOT / "Makefile").read_text()
    up = re.search(r"^up:.*?\n((?:\t.*\n)+)", text, re.M)
    down = re.search(r"^down:.*?\n((?:\t.*\n)+)", text, re.M)
    assert up and "docker compose up" in up.group(1)
    assert down and "docker compose" in down.group(1) and " down" in down.group(1)
    phony = re.search(r"^\.PHONY:(.*)$", text, re.M)
    assert phony and {"up", "down"} <= set(phony.group(1).split())
