"""A service is ready once it has caught up, also when nothing has been published yet: a scorer and a
buffer controller started on an empty cluster-events topic (a fresh install, before the watcher's first
list) answer /readyz with 200. The real broker and redis-server, the services as processes."""

from __future__ import annotations

import time
import urllib.error
from pathlib import Path

import pytest

from tests.integration.services import isolated_env, service
from tests.integration.test_bootstrap import http
from tests.servers import Server, free_port

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("name", ["scorer", "buffer-controller"])
def test_ready_on_an_empty_topic(broker: Server, redis_server: Server, tmp_path: Path, name: str) -> None:
    port = free_port()
    env = isolated_env(broker, redis_server, BERTH_HTTP_PORT=str(port))
    with service(name, env, log_dir=tmp_path):
        deadline = time.monotonic() + 60
        answer = ""
        while time.monotonic() < deadline:
            try:
                answer = http(port, "/readyz")
            except urllib.error.URLError:  # not listening yet
                answer = ""
            if answer.startswith("ready"):
                break
            time.sleep(0.2)
    assert answer.startswith("ready\nstate: from "), answer
