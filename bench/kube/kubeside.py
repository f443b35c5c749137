"""kube-scheduler 1.36 in the real control plane (tests/e2e/controlplane.py), unmodified: the workload's
cluster is made and left to settle, then its pods are created as fast as the API server takes them (many
requests in flight) while one watch follows them. The clock runs from the first create sent to the last
pod bound or marked unschedulable without a nominated node. A preemption's victims are deleted at once
when the scheduler marks them for deletion, as a kubelet would. CPU-seconds of each control-plane
process come from /proc/<pid>/stat, read when the clock starts and when it stops.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
from tests.e2e.controlplane import ControlPlane, start_control_plane

from bench.kube.workloads import NS, Obj, Workload

IN_FLIGHT = 64  # concurrent requests while creating
CREATE_DEADLINE = 30.0  # seconds for one try of a create: one here takes milliseconds
CREATE_TRIES = 4
# scheduler_perf's own client settings for the scheduler (util.go): the default 50 queries/s would cap binding
CLIENT = {"qps": 5000, "burst": 5000}
PROCESSES = ("kube-apiserver", "etcd", "kube-scheduler", "kube-controller-manager")
# the objects berth reads, as the API serves them: (path, apiVersion, kind)
LISTS = (
    ("/api/v1/namespaces", "v1", "Namespace"),
    ("/api/v1/nodes", "v1", "Node"),
    ("/apis/storage.k8s.io/v1/storageclasses", "storage.k8s.io/v1", "StorageClass"),
    ("/apis/scheduling.k8s.io/v1/priorityclasses", "scheduling.k8s.io/v1", "PriorityClass"),
    ("/api/v1/persistentvolumes", "v1", "PersistentVolume"),
    ("/api/v1/persistentvolumeclaims", "v1", "PersistentVolumeClaim"),
    ("/api/v1/pods", "v1", "Pod"),
)


def scheduler_config(all_nodes: bool) -> dict[str, Any]:
    """kube's default profile; with all_nodes, percentageOfNodesToScore 100 (berth scores every node)."""
    profile: dict[str, Any] = {"schedulerName": "default-scheduler"}
    if all_nodes:
        profile["percentageOfNodesToScore"] = 100
    return {"clientConnection": dict(CLIENT), "profiles": [profile]}


@dataclass
class KubeRun:
    label: str
    pods: int
    wall: float = 0.0  # seconds, first create to last settled
    created_in: float = 0.0  # seconds until the API server had taken every pod
    bound: int = 0
    unschedulable: int = 0
    victims: int = 0
    timed_out: bool = False
    rewatches: int = 0  # times the watch on the pods was resumed
    retried: int = 0  # creates of the timed pods tried again (a try past CREATE_DEADLINE, or dropped)
    cpu: dict[str, float] = field(default_factory=dict)  # process -> CPU-seconds while timed
    load: tuple[float, float] = (0.0, 0.0)  # 1-minute load average at start and end
    setup: list[Obj] = field(default_factory=list)  # the cluster before the pods, as listed (kind set)
    created: list[Obj] = field(default_factory=list)  # the pods as the API server returned them

    @property
    def settled(self) -> int:
        """Pods bound or unschedulable (all of them, unless the run timed out)."""
        return self.bound + self.unschedulable


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process from /proc/<pid>/stat."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _cpu(plane: ControlPlane) -> dict[str, float]:
    out = {}
    for name in PROCESSES:
        proc = plane.processes[name].proc
        if proc is not None:
            out[name] = cpu_seconds(proc.pid)
    return out


class Api:
    """aiohttp against the control plane's apiserver, as admin."""

    def __init__(self, plane: ControlPlane, session: aiohttp.ClientSession) -> None:
        self.server = plane.server
        self.session = session
        self.retried = 0

    async def request(self, method: str, path: str, body: Any = None, **query: str) -> Any:
        async with self.session.request(method, self.server + path, json=body, params=query or None) as resp:
            data = await resp.read()
            if resp.status >= 300:
                raise RuntimeError(f"{method} {path}: {resp.status} {data[:300]!r}")
            return json.loads(data)

    async def delete(self, path: str) -> None:
        """At once (grace period 0); gone already is fine."""
        async with self.session.delete(self.server + path, params={"gracePeriodSeconds": "0"}) as resp:
            if resp.status >= 300 and resp.status != 404:
                raise RuntimeError(f"DELETE {path}: {resp.status} {(await resp.read())[:300]!r}")

    async def create(self, path: str, obj: Obj) -> Obj:
        """POST with a deadline per try, tried again when it passes or the connection drops (a setup
        once stalled here for ten minutes); a try that went through before its answer was lost makes
        the next one 409 AlreadyExists, and the object is read back."""
        attempt = 0
        while True:
            attempt += 1
            try:
                async with asyncio.timeout(CREATE_DEADLINE):
                    async with self.session.post(self.server + path, json=obj) as resp:
                        data = await resp.read()
            except (TimeoutError, aiohttp.ClientError) as e:
                if attempt == CREATE_TRIES:
                    raise RuntimeError(f"POST {path}: {e!r}, {CREATE_TRIES} tries") from e
                self.retried += 1
                continue
            if resp.status == 409 and attempt > 1:
                made: Obj = await self.request("GET", f"{path}/{obj['metadata']['name']}")
                return made
            if resp.status >= 300:
                raise RuntimeError(f"POST {path}: {resp.status} {data[:300]!r}")
            made = json.loads(data)
            return made

    async def create_all(self, items: Iterable[tuple[str, Obj]]) -> list[Obj]:
        gate = asyncio.Semaphore(IN_FLIGHT)

        async def one(path: str, obj: Obj) -> Obj:
            async with gate:
                return await self.create(path, obj)

        return list(await asyncio.gather(*(one(p, o) for p, o in items)))


def session(plane: ControlPlane) -> aiohttp.ClientSession:
    return aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=plane.client.context, limit=IN_FLIGHT))


def _settle_seconds(workload: Workload) -> float:
    """How long the scheduler and controllers get to see the cluster before the clock starts."""
    return 2.0 + (len(workload.cluster) + len(workload.namespaced)) / 2000


async def setup(plane: ControlPlane, workload: Workload) -> list[Obj]:
    async with session(plane) as s:
        api = Api(plane, s)
        await api.create_all(workload.cluster)
        await api.request("POST", "/api/v1/namespaces", {"metadata": {"name": NS}})
        while True:  # the ServiceAccount admission plugin refuses pods until the default account exists
            async with s.get(f"{plane.server}/api/v1/namespaces/{NS}/serviceaccounts/default") as resp:
                if resp.status == 200:
                    break
            await asyncio.sleep(0.05)
        await api.create_all((f"/api/v1/namespaces/{NS}/{plural}", obj) for plural, obj in workload.namespaced)
        await _available(api)
        await asyncio.sleep(_settle_seconds(workload))
        listed = []
        for path, version, kind in LISTS:
            for item in (await api.request("GET", path))["items"]:
                listed.append({"apiVersion": version, "kind": kind, **item})
        return listed


async def _available(api: Api, timeout: float = 600.0) -> None:
    """Until the PV controller has made every PV Available (the scheduler passes over Pending ones):
    1,000 PVs take it tens of seconds here."""
    deadline = time.monotonic() + timeout
    while True:
        pvs = (await api.request("GET", "/api/v1/persistentvolumes"))["items"]
        if all(pv.get("status", {}).get("phase") == "Available" for pv in pvs):
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"PVs not Available after {timeout:.0f} s")
        await asyncio.sleep(1.0)


def _settled(obj: Mapping[str, Any]) -> str | None:
    """How the pod stands: bound, unschedulable (nominating no node) or None (not yet either)."""
    if obj["spec"].get("nodeName"):
        return "bound"
    status = obj.get("status", {})
    for cond in status.get("conditions") or []:
        if (
            cond.get("type") == "PodScheduled"
            and cond.get("status") == "False"
            and cond.get("reason") == "Unschedulable"
        ):
            return None if status.get("nominatedNodeName") else "unschedulable"
    return None


async def measure(plane: ControlPlane, workload: Workload, run: KubeRun, timeout: float) -> None:
    names = {p["metadata"]["name"] for p in workload.pending}
    state: dict[str, tuple[str, float]] = {}  # pod -> (how it settled, when)
    done = asyncio.Event()
    async with session(plane) as s:
        api = Api(plane, s)
        pods = f"/api/v1/namespaces/{NS}/pods"
        listing = await api.request("GET", pods)
        before, rv = len(listing["items"]), listing["metadata"]["resourceVersion"]
        deleting: set[asyncio.Task[Any]] = set()
        gone: set[str] = set()
        connected = asyncio.Event()

        def seen(obj: Obj) -> None:
            name = obj["metadata"]["name"]
            if name in names:
                how = _settled(obj)
                if how is None and name in state and state[name][0] == "unschedulable":
                    del state[name]  # it nominated a node after all
                elif how is not None and (name not in state or state[name][0] != how):
                    state[name] = (how, time.perf_counter())
                    if len(state) == len(names):
                        done.set()
            elif obj["metadata"].get("deletionTimestamp") and name not in gone:
                gone.add(name)  # a kubelet's part: the pod's containers are stopped, it goes
                task = asyncio.create_task(api.delete(f"{pods}/{name}"))
                deleting.add(task)
                task.add_done_callback(deleting.discard)

        async def watch() -> None:
            """As an informer watches: the API server ends a watch whose client falls behind (this one
            creates pods on the same core), so it resumes from the last resourceVersion seen, or lists
            again when that is gone (410)."""
            nonlocal rv
            while True:
                query = {"watch": "1", "resourceVersion": rv, "allowWatchBookmarks": "true"}
                async with s.get(plane.server + pods, params=query, timeout=aiohttp.ClientTimeout(total=None)) as resp:
                    if resp.status != 200:
                        raise RuntimeError(f"watch {pods}: {resp.status} {(await resp.read())[:300]!r}")
                    connected.set()
                    async for line in resp.content:
                        event = json.loads(line)
                        obj = event["object"]
                        if event["type"] == "ERROR":
                            if obj.get("code") != 410:
                                raise RuntimeError(f"watch {pods}: {obj.get('message')}")
                            relisted = await api.request("GET", pods)
                            for item in relisted["items"]:
                                seen(item)
                            rv = relisted["metadata"]["resourceVersion"]
                            break
                        rv = obj["metadata"]["resourceVersion"]
                        if event["type"] != "BOOKMARK":
                            seen(obj)
                run.rewatches += 1

        watcher = asyncio.create_task(watch())
        await connected.wait()
        cpu0, run.load = _cpu(plane), (os.getloadavg()[0], 0.0)
        t0 = time.perf_counter()
        run.created = await api.create_all((pods, p) for p in workload.pending)
        run.created_in, run.retried = time.perf_counter() - t0, api.retried
        waiting = asyncio.create_task(done.wait())
        await asyncio.wait({waiting, watcher}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        cpu1 = _cpu(plane)
        run.load = (run.load[0], os.getloadavg()[0])
        waiting.cancel()
        watcher.cancel()
        if watcher.done() and not watcher.cancelled() and watcher.exception() is not None:
            raise RuntimeError("the watch failed") from watcher.exception()
        run.timed_out = not done.is_set()
        end = max((t for _, t in state.values()), default=time.perf_counter())
        run.wall = end - t0
        run.cpu = {k: cpu1[k] - cpu0[k] for k in cpu0 if k in cpu1}
        run.bound = sum(1 for how, _ in state.values() if how == "bound")
        run.unschedulable = sum(1 for how, _ in state.values() if how == "unschedulable")
        await asyncio.gather(*deleting, return_exceptions=True)
        after = len((await api.request("GET", pods))["items"])
        run.victims = before + len(names) - after  # the pods there before that preemption took away
    run.created.sort(key=lambda p: int(p["metadata"]["resourceVersion"]))


def run_kube(assets: Path, workload: Workload, all_nodes: bool, timeout: float) -> KubeRun:
    """One run on a fresh control plane."""
    label = "kube, percentageOfNodesToScore 100" if all_nodes else "kube, default profile"
    run = KubeRun(label, workload.pods)
    plane = start_control_plane(assets, scheduler_config(all_nodes))
    try:
        run.setup = asyncio.run(setup(plane, workload))
        asyncio.run(measure(plane, workload, run, timeout))
    except BaseException:
        plane.keep_workdir = True
        raise
    finally:
        plane.stop()
    return run
