"""Fixtures for the end-to-end tests on a real control plane (tests/e2e/controlplane.py).

control_plane: one for the whole session, started on first use (a few seconds); the tests skip, saying how
to get the binaries, when KUBEBUILDER_ASSETS is unset and ../shared/kube/unpack.sh is not beside the repo.
kube: a namespace per test and the Nodes and other cluster-scoped objects it makes, removed at its end.
berth_crds, accounts: berth's CRDs, and its ServiceAccounts with the RBAC of deploy/ (tests/e2e/berth.py).
A failed test's report ends with the end of every component's log, and the logs stay in the temp dir.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import pytest_asyncio

from berth.adapters.bus.kafka import KafkaBus
from tests.e2e.berth import Accounts, install_crds, install_rbac
from tests.e2e.cluster import Kube
from tests.e2e.controlplane import ControlPlane, MissingBinaries, find_assets, start_control_plane
from tests.servers import Server


@pytest.fixture(scope="session")
def kube_assets() -> Path:
    """The folder with the binaries (or a skip saying how to get them): for a test module that starts its
    own control plane, e.g. start_control_plane(kube_assets, scheduler_config=...)."""
    try:
        return find_assets()
    except MissingBinaries as err:
        pytest.skip(str(err))


@pytest.fixture(scope="session")
def control_plane(kube_assets: Path) -> Iterator[ControlPlane]:
    """kube's default scheduler profile; a test that runs the scheduler with another config
    (restart_scheduler) or restarts the apiserver leaves it as it found it."""
    plane = start_control_plane(kube_assets)
    try:
        yield plane
    finally:
        plane.stop()


@pytest.fixture(scope="session")
def berth_crds(control_plane: ControlPlane) -> None:
    """deploy/crds installed (NodeMetric, CapacityBuffer), for the rest of the session."""
    install_crds(control_plane)


@pytest.fixture(scope="session")
def accounts(control_plane: ControlPlane) -> Iterator[Accounts]:
    """berth's ServiceAccounts with exactly the rights deploy/ grants them (the binder and write-status
    overlays' Roles and bindings), for the rest of the session; .kubeconfig(account, folder) authenticates
    as one with a token from the TokenRequest API."""
    made = install_rbac(control_plane)
    try:
        yield made
    finally:
        made.remove()


@pytest.fixture
def kube(control_plane: ControlPlane, request: pytest.FixtureRequest) -> Iterator[Kube]:
    k = Kube(control_plane, request.node.name)
    k.setup()
    try:
        yield k
    finally:
        k.cleanup()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    report: pytest.TestReport = yield
    plane = getattr(item, "funcargs", {}).get("control_plane")
    if report.failed and isinstance(plane, ControlPlane):
        plane.keep_workdir = True
        report.sections.append(("kube control plane logs", plane.logs()))
    return report


@pytest_asyncio.fixture
async def bus(broker: Server) -> AsyncIterator[KafkaBus]:
    """berth's Kafka bus on the session's broker (tests/conftest.py), for the services a test runs."""
    made = KafkaBus(broker.address, client_id="e2e")
    await made.start()
    try:
        yield made
    finally:
        await made.stop()
