"""The commands that work on files import no network client and not the services' metrics: `berth
replay` embeds the services, with the in-memory bus and store, and its start-up is part of what the
kube bench times (aiohttp alone is 0.15 s: it builds TLS contexts on import; prometheus_client 0.03 s)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

CLIENTS = ("aiohttp", "aiokafka", "faust", "kubernetes_asyncio", "redis", "prometheus_client")
PROBE = """
import json, sys
from berth_cli.main import parser
parser(sys.argv[1])
print(json.dumps(sorted(m for m in {clients} if m in sys.modules)))
"""


@pytest.mark.timeout(60)
@pytest.mark.parametrize("command", ["replay", "evaluate", "explain", "buffers", "generate"])
def test_file_commands_import_no_client(command: str) -> None:
    probe = PROBE.format(clients=repr(CLIENTS))
    out = subprocess.run([sys.executable, "-c", probe, command], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == []


@pytest.mark.timeout(60)
def test_the_probe_sees_a_client_command_import_its_clients() -> None:
    probe = PROBE.format(clients=repr(CLIENTS))
    out = subprocess.run([sys.executable, "-c", probe, "watcher"], capture_output=True, text=True, check=True)
    assert {"aiohttp", "aiokafka"} <= set(json.loads(out.stdout))
