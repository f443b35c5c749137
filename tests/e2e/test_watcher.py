"""`berth watcher` against the real API server: every kind berth reads (its CRDs from deploy/ included), as the
berth-watcher ServiceAccount with deploy/'s RBAC only, through churn, an apiserver restart and a 410 Gone from
an etcd compaction; what it publishes (to the real broker) and records replays in berth to the objects a fresh
`kubectl get -o json` of the cluster gives."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import subprocess
import time
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from berth.adapters.bus.kafka import KafkaBus
from berth.adapters.files.eventlog import EventWriter, read_events
from berth.adapters.kube.client import BY_PLURAL, KINDS, KubeClient, Timeouts
from berth.adapters.kube.watch import Watcher, WatchOptions
from berth.core.api.watch import decode_message, parse_event
from berth.settings import from_env
from berth_cli.main import main
from berth_watcher.main import Options, serve
from berth_watcher.service import WatcherService
from tests.e2e.berth import (
    BERTH,
    Accounts,
    Held,
    differences,
    every_kind,
    held_after,
    held_in_fresh_list,
    held_in_record,
    wait_quiet,
)
from tests.e2e.cluster import Kube, wait_for
from tests.e2e.controlplane import UNCACHED, ControlPlane
from tests.servers import Server, free_port

pytestmark = pytest.mark.e2e


def berth_env(**settings: str) -> dict[str, str]:
    """This environment without BERTH_ settings, KUBECONFIG or in-cluster hints, plus these settings."""
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("BERTH_", "KUBERNETES_SERVICE_")) and k != "KUBECONFIG"
    }
    env.update(settings)
    return env


@contextlib.contextmanager
def watcher_process(args: list[str], env: dict[str, str], log: Path) -> Iterator[subprocess.Popen[bytes]]:
    """`berth watcher ARGS` running; SIGKILLed if still running at the end."""
    with open(log, "wb") as out:
        proc = subprocess.Popen([BERTH, "watcher", *args], env=env, stdout=out, stderr=subprocess.STDOUT)
        try:
            yield proc
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)


def ready(port: int) -> bool | None:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=1) as resp:
            return resp.status == 200 or None
    except OSError:
        return None


def published(broker: Server, topic: str) -> Held:
    """The objects berth holds after the topic's events, decoded as its consumers decode them."""

    async def read() -> Held:
        bus = KafkaBus(broker.address, client_id="e2e-reader")
        return held_after(decode_message(m) for m in await bus.records(topic))

    return asyncio.run(read())


def churn(kube: Kube, step: int) -> None:
    """Changes, deletions and new objects across kinds, built-in and CRDs."""
    api, ns = kube.api, kube.ns
    if step == 1:
        api.patch(kube.path("podtemplates", "chunk"), {"metadata": {"labels": {"step": "1"}}})
        api.patch(
            f"/apis/autoscaling.x-k8s.io/v1beta1/namespaces/{ns}/capacitybuffers/headroom", {"spec": {"replicas": 3}}
        )
        api.delete(kube.path("services", "web"))
        api.delete(f"/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets/web")
        kube.pod("web-1", {"cpu": "100m"}, labels={"app": "web"})
    else:
        api.patch(f"/apis/apps/v1/namespaces/{ns}/deployments/web", {"spec": {"replicas": 2}})
        api.delete(f"/apis/apps/v1/namespaces/{ns}/replicasets/web")
        api.delete(f"/apis/batch/v1/namespaces/{ns}/jobs/once", propagationPolicy="Background")
        api.create(kube.path("podtemplates"), {"metadata": {"name": "chunk-2"}, "template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}})  # fmt: skip
        api.delete(kube.path("pods", "web-0"), gracePeriodSeconds=0)
        kube.pod("web-2", {"cpu": "100m"})


@pytest.mark.timeout(150)
@pytest.mark.usefixtures("berth_crds")
def test_every_kind_recorded_published_and_snapshotted_through_churn_and_an_apiserver_restart(
    control_plane: ControlPlane, kube: Kube, accounts: Accounts, broker: Server, tmp_path: Path
) -> None:
    wait_quiet(kube)
    node = kube.node("n1", cpu="4")
    made = every_kind(kube, node)
    kube.wait_bound("web-0")
    kubeconfig = accounts.kubeconfig("berth-watcher", tmp_path)
    topic, port = f"e2e.{uuid.uuid4().hex[:8]}.cluster-events", free_port()
    env = berth_env(
        BERTH_KAFKA_BOOTSTRAP_SERVERS=broker.address, BERTH_TOPIC_CLUSTER_EVENTS=topic, BERTH_HTTP_PORT=str(port)
    )
    record, log = tmp_path / "cluster.jsonl.gz", tmp_path / "watcher.log"
    with watcher_process(["--kubeconfig", str(kubeconfig), "--record", str(record)], env, log) as proc:
        wait_for("the watcher ready (every kind listed)", lambda: ready(port), timeout=60, describe=log.read_text)
        churn(kube, 1)
        kube.wait_bound("web-1")
        control_plane.restart_apiserver()
        churn(kube, 2)
        kube.wait_bound("web-2")

        def caught_up() -> Held | None:
            fresh = held_in_fresh_list(control_plane, tmp_path)
            return fresh if published(broker, topic) == fresh else None

        def mismatch() -> str:
            return "\n".join(differences(published(broker, topic), held_in_fresh_list(control_plane, tmp_path)))

        wait_for("the topic's objects equal a fresh list", caught_up, timeout=30, describe=mismatch)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(20) == 0, log.read_text()
    fresh = held_in_fresh_list(control_plane, tmp_path)
    topic_held, record_held = published(broker, topic), held_in_record(record)
    assert not differences(record_held, fresh), differences(record_held, fresh)
    assert not differences(topic_held, fresh), differences(topic_held, fresh)
    # and a snapshot (--once) of the same cluster, as the same account, is that list too
    snapshot = tmp_path / "snapshot.jsonl"
    args = ["--kubeconfig", str(kubeconfig), "--record", str(snapshot), "--no-publish", "--once"]
    with watcher_process(args, berth_env(), tmp_path / "snapshot.log") as once:
        assert once.wait(60) == 0, (tmp_path / "snapshot.log").read_text()
    assert '"level":"WARNING"' not in (tmp_path / "snapshot.log").read_text()  # deploy/'s RBAC: every kind listed
    assert not differences(held_in_record(snapshot), fresh), differences(held_in_record(snapshot), fresh)
    kinds_recorded = {ev.kind[1] for ev in read_events(str(record)) if ev.kind is not None}
    assert kinds_recorded == {k.kind for k in KINDS}
    gone = {made["Service"], made["PodDisruptionBudget"], made["ReplicaSet"], made["Job"], made["Pod"]}
    assert not gone & record_held.keys()
    assert {f"PodTemplate/{kube.ns}/chunk-2", f"Pod/{kube.ns}/web-2"} <= record_held.keys()
    # (just after the restart, the new apiserver answered 403 for a moment, its RBAC roles not loaded yet:
    # the watcher retried those kinds with its backoff)
    text = log.read_text()
    assert "skipping" not in text and '"level":"ERROR"' not in text, text
    assert "relisting" in text  # the new apiserver's watch cache began after the resume points: 410


class Gate:
    """The watcher's sleep (its backoff): held while the test changes the cluster behind its back, then
    released; otherwise a short sleep."""

    def __init__(self) -> None:
        self.closed = False
        self.waiting = asyncio.Event()
        self.opened = asyncio.Event()

    async def __call__(self, seconds: float) -> None:
        if self.closed:
            self.waiting.set()
            await self.opened.wait()
        await asyncio.sleep(min(seconds, 0.05))


@pytest.mark.asyncio
async def test_a_410_after_etcd_compaction_relists_and_misses_nothing(
    control_plane: ControlPlane, kube: Kube, accounts: Accounts, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """PodTemplates are served without a watch cache here (the fixture's --watch-cache-sizes), so their
    watches resume from etcd, and once etcd has compacted past the resume point the apiserver answers 410."""
    api = kube.api
    for name in ("keep", "change", "drop"):
        api.create(kube.path(UNCACHED), {"metadata": {"name": name}, "template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}})  # fmt: skip
    client = await KubeClient.connect(str(accounts.kubeconfig("berth-watcher", tmp_path)))
    gate = Gate()
    # watches that the server ends after 1-2 s: an idle one ends without a line and backs off, into the gate
    options = WatchOptions(timeouts=Timeouts(watch=1, watch_grace=5))
    watcher = Watcher(client, [BY_PLURAL[UNCACHED]], namespace=kube.ns, options=options, sleep=gate)
    kind = watcher.kinds[0]
    record = tmp_path / "templates.jsonl"
    service = WatcherService(watcher, None, record=EventWriter(str(record)))
    task = asyncio.create_task(service.run())
    try:
        with caplog.at_level(logging.INFO, logger="berth.watcher"):
            async with asyncio.timeout(30):
                while service.published < 5:  # the three templates, between the BOOKMARKs marking the list
                    await asyncio.sleep(0.02)
                gate.closed = True
                await gate.waiting.wait()  # the watch ended quietly: the watcher waits to reconnect
                resume = int(kind.resource_version or 0)
                api.patch(kube.path(UNCACHED, "change"), {"metadata": {"labels": {"changed": "yes"}}})
                api.delete(kube.path(UNCACHED, "drop"))
                api.create(kube.path(UNCACHED), {"metadata": {"name": "new"}, "template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}})  # fmt: skip
                compacted = control_plane.compact_etcd()
                assert compacted > resume + 1  # past the resume point: a watch from there is answered 410
                gate.closed = False
                gate.opened.set()
                while kind.lists < 2 or kind.resource_version is None or watcher.backlog:
                    await asyncio.sleep(0.02)
                await asyncio.sleep(0.2)
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        service.record.close()  # type: ignore[union-attr]
        await client.close()
    assert any("relisting" in r.getMessage() and "410" in r.getMessage() for r in caplog.records), caplog.text
    events = [parse_event(line) for line in record.read_bytes().splitlines()]
    assert [e.type for e in events[:5:4]] == ["BOOKMARK", "BOOKMARK"]  # the first list, marked
    after = [(e.type, e.key.decode().rsplit("/", 1)[1]) for e in events[5:]]
    assert sorted(after) == [("ADDED", "new"), ("DELETED", "drop"), ("MODIFIED", "change")]  # each once
    fresh = {
        k: v for k, v in held_in_fresh_list(control_plane, tmp_path).items() if k.startswith(f"PodTemplate/{kube.ns}/")
    }
    assert held_in_record(record) == fresh and len(fresh) == 3


# ---------------------------------------------------------------- failing clearly


def test_an_unreachable_server_is_retried_then_given_up_with_one_line(tmp_path: Path) -> None:
    port = free_port()  # nothing listens there
    kubeconfig = unreachable_kubeconfig(tmp_path, port)
    record = tmp_path / "snapshot.jsonl"
    started = time.monotonic()
    done = subprocess.run(
        [BERTH, "watcher", "--kubeconfig", str(kubeconfig), "--record", str(record), "--no-publish", "--once"],
        env=berth_env(), capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    took = time.monotonic() - started
    assert done.returncode == 1, done.stderr
    lines = done.stderr.strip().splitlines()
    assert lines[-1].startswith(
        f"berth watcher: cannot go on: Kubernetes API https://127.0.0.1:{port}: storageclasses list failed 5 times"
    )
    assert "Connect call failed" in lines[-1]
    retries = [line for line in lines if "retrying in" in line]
    assert len(retries) == 4 and all("storageclasses list" in line for line in retries), lines  # one per attempt
    assert [line.split("(attempt ")[1][0] for line in retries] == ["1", "2", "3", "4"]
    assert "Traceback" not in done.stderr
    assert not record.exists()  # no empty (or partial) snapshot left behind
    assert took < 30


@pytest.mark.asyncio
async def test_watching_an_unreachable_server_logs_one_line_per_attempt_and_leaves_no_record(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    port = free_port()
    client = await KubeClient.connect(str(unreachable_kubeconfig(tmp_path, port)))
    record = tmp_path / "cluster.jsonl"
    stop = asyncio.Event()
    options = Options(record=str(record), publish=False)
    try:
        with caplog.at_level(logging.INFO, logger="berth.watcher"):
            task = asyncio.create_task(serve(from_env({}), stop, options, client=client))
            await asyncio.sleep(2.5)
            stop.set()
            service = await asyncio.wait_for(task, 10)
    finally:
        await client.close()
    assert service.published == 0
    retries = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(retries) >= 2, retries
    assert all(m.startswith("storageclasses list: Cannot connect to host") for m in retries), retries  # one kind probes
    assert [m.rsplit("(attempt ", 1)[1].rstrip(")") for m in retries] == [str(n) for n in range(1, len(retries) + 1)]
    assert not record.exists()  # no empty record left behind


def unreachable_kubeconfig(folder: Path, port: int) -> Path:
    path = folder / "kubeconfig"
    cluster = {"server": f"https://127.0.0.1:{port}", "insecure-skip-tls-verify": True}
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": cluster}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "c",
    }
    path.write_text(json.dumps(config))
    return path


@pytest.fixture
def root_logging() -> Iterator[None]:
    """The command sets up JSON logs on the root logger; put pytest's handlers back afterwards."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


@pytest.mark.usefixtures("root_logging")
@pytest.mark.parametrize(
    ("args", "env", "want"),
    [
        (
            [],
            {},
            "berth watcher: config: kubeconfig: none found: KUBECONFIG is not set, {tmp}/.kube/config does not exist, "
            "and there is no in-cluster service account (KUBERNETES_SERVICE_HOST is not set); "
            "point berth at one with --kubeconfig FILE or KUBECONFIG=FILE",
        ),
        (
            ["--kubeconfig", "{tmp}/nope"],
            {},
            "berth watcher: config: kubeconfig: {tmp}/nope (--kubeconfig) does not exist; "
            "point berth at one with --kubeconfig FILE or KUBECONFIG=FILE",
        ),
        (
            [],
            {"KUBECONFIG": "{tmp}/nope:{tmp}/nope-2"},
            "berth watcher: config: kubeconfig: {tmp}/nope:{tmp}/nope-2 (KUBECONFIG) do not exist; "
            "point berth at one with --kubeconfig FILE or KUBECONFIG=FILE",
        ),
        (
            [],
            {"KUBECONFIG": "{tmp}/empty"},
            "berth watcher: config: kubeconfig: {tmp}/empty (KUBECONFIG): Invalid kube-config file. Expected key "
            "current-context in {tmp}/empty; name a context with --context NAME (or set current-context in it), "
            "or point berth at one with --kubeconfig FILE or KUBECONFIG=FILE",
        ),
    ],
    ids=["none", "missing-file", "missing-files", "no-context"],
)
def test_a_missing_or_bad_kubeconfig_is_one_line_with_a_hint(
    args: list[str],
    env: dict[str, str],
    want: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    (tmp_path / "empty").write_text("apiVersion: v1\nkind: Config\n")
    for name in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    for name, value in env.items():
        monkeypatch.setenv(name, value.format(tmp=tmp_path))
    record = tmp_path / "snapshot.jsonl"
    argv = ["watcher", *(a.format(tmp=tmp_path) for a in args), "--record", str(record), "--no-publish", "--once"]
    assert main(argv) == 2
    assert capsys.readouterr().err.strip() == want.format(tmp=tmp_path)  # one line, nothing else
    assert not record.exists()
