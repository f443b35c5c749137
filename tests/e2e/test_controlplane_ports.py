"""The fixture's own start: a port handed out free and taken before the process binds it (clients'
ephemeral ports share the range) starts the control plane again on other ports."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from tests.e2e import controlplane
from tests.servers import free_port as real_free_port

pytestmark = pytest.mark.timeout(180)


def test_a_port_taken_before_the_scheduler_binds_it_starts_again_on_others(
    kube_assets: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        handed: list[int] = []

        def free_port() -> int:  # the fifth port of the first start is the scheduler's: one taken
            handed.append(port if len(handed) == 4 else real_free_port())
            return handed[-1]

        monkeypatch.setattr(controlplane, "free_port", free_port)
        plane = controlplane.start_control_plane(kube_assets)
        try:
            assert handed[4] == port and plane.ports["scheduler"] != port
            assert len(handed) == 10  # two starts of five ports each
            assert plane.client.exists(controlplane.SA_DEFAULT)
        finally:
            plane.stop()
