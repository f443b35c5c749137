"""The Kubernetes API (kubernetes-asyncio): the kinds berth reads, a client with timeouts, raw JSON.

berth's core converts the raw JSON the API server sends, so requests go through kubernetes-asyncio's
ApiClient (its kubeconfig and in-cluster loading, auth headers, TLS and token refresh) with
`_preload_content=False`, and bodies are decoded here rather than into the generated models (or
handed on as bytes: `request_bytes`, the watcher's list pages).
kubernetes-asyncio sets no timeouts of its own; every request here has one (see Timeouts).
The list/watch loop is in berth.adapters.kube.watch.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import msgspec
import yaml

from berth import __version__
from berth.core.api import kinds as api_kinds
from berth.core.errors import ConfigError

if TYPE_CHECKING:  # imported when a client connects: a service that never does saves its import (0.4-0.9 s)
    import aiohttp  # (0.15 s: it builds its TLS contexts on import; the embedded replay never connects)
    from kubernetes_asyncio.client import ApiClient, Configuration


@dataclass(frozen=True)
class Kind:
    """One kind berth lists and watches. `versions` are tried in order; the first one served wins."""

    kind: str
    plural: str
    group: str = ""
    versions: tuple[str, ...] = ("v1",)
    namespaced: bool = True
    crd: bool = False  # installed by an add-on: not being served is normal, not an error

    def api_version(self, version: str) -> str:
        return f"{self.group}/{version}" if self.group else version

    def path(
        self, version: str, namespace: str | None = None, name: str | None = None, subresource: str | None = None
    ) -> str:
        """The collection (or, with a name, one object's) URL path."""
        out = f"/apis/{self.group}/{version}" if self.group else f"/api/{version}"
        if namespace and self.namespaced:
            out += f"/namespaces/{quote(namespace, safe='')}"
        out += f"/{self.plural}"
        if name is not None:
            out += f"/{quote(name, safe='')}"
            if subresource:
                out += f"/{subresource}"
        return out


# Every kind berth reads, in the kind table's order (berth.core.api.kinds): pods last.
KINDS: tuple[Kind, ...] = tuple(
    Kind(k.name, k.plural, k.group, k.versions, k.namespaced, k.crd) for k in api_kinds.KINDS.values()
)
BY_PLURAL: dict[str, Kind] = {k.plural: k for k in KINDS}


def select_kinds(names: Iterable[str]) -> tuple[Kind, ...]:
    """Kinds by plural or kind name (case-insensitive), in table order; ConfigError names unknown ones."""
    wanted = {n.strip().lower() for n in names if n.strip()}
    known = {k.plural for k in KINDS} | {k.kind.lower() for k in KINDS}
    unknown = sorted(wanted - known)
    if unknown:
        raise ConfigError([f"--kinds: unknown kind {n!r}; want one of {', '.join(BY_PLURAL)}" for n in unknown])
    return tuple(k for k in KINDS if k.plural in wanted or k.kind.lower() in wanted)


@dataclass(frozen=True)
class Timeouts:
    """Seconds. A watch asks the server to end it after `watch`..2×`watch` s (timeoutSeconds, spread so
    that watches do not all reconnect at once) and is abandoned by the client `watch_grace` s later."""

    connect: float = 10.0
    request: float = 60.0  # total, for one list page or one write
    watch: int = 300
    watch_grace: float = 30.0

    def for_request(self) -> aiohttp.ClientTimeout:
        import aiohttp

        return aiohttp.ClientTimeout(total=self.request, sock_connect=self.connect)

    def for_watch(self, seconds: int) -> aiohttp.ClientTimeout:
        import aiohttp

        return aiohttp.ClientTimeout(total=seconds + self.watch_grace, sock_connect=self.connect)


class KubeError(Exception):
    """A response that is not 2xx (or a watch ERROR event), with the API server's Status fields."""

    def __init__(self, status: int, reason: str = "", message: str = "") -> None:
        self.status = status
        self.reason = reason
        self.message = message
        super().__init__(f"{status} {reason}: {message}" if message else f"{status} {reason}".rstrip())

    @classmethod
    def from_status(cls, status: Mapping[str, Any], default_code: int = 0) -> KubeError:
        code = status.get("code")
        return cls(
            code if isinstance(code, int) else default_code,
            str(status.get("reason", "")),
            str(status.get("message", "")),
        )

    @classmethod
    def from_body(cls, code: int, body: bytes) -> KubeError:
        try:
            status = msgspec.json.decode(body)
        except msgspec.DecodeError:
            return cls(code, "", body[:200].decode("utf-8", "replace").strip())
        if not isinstance(status, dict):
            return cls(code)
        return cls.from_status(status, code)


HINT = "point berth at one with --kubeconfig FILE or KUBECONFIG=FILE"


def _kubeconfig_source(kubeconfig: str | None) -> tuple[str, str] | None:
    """The kubeconfig file(s) to read and where that choice came from: --kubeconfig, else $KUBECONFIG
    (a list of files, as kubectl reads it), else None (in-cluster or ~/.kube/config)."""
    if kubeconfig:
        return kubeconfig, "--kubeconfig"
    env = os.environ.get("KUBECONFIG", "")
    if env.strip(os.pathsep):
        return env, "KUBECONFIG"
    return None


async def load_configuration(kubeconfig: str | None = None, context: str | None = None) -> Configuration:
    """Where the credentials come from, in controller-runtime's order: the kubeconfig file given
    (--kubeconfig), else $KUBECONFIG, else the in-cluster service account when running in a pod (and
    no context is asked for), else ~/.kube/config. Never writes the file. A ConfigError of one line
    says which file (or what) was looked at, what is wrong and how to point berth at another."""
    from kubernetes_asyncio import config as kube_config
    from kubernetes_asyncio.client import Configuration

    cfg = Configuration()
    chosen = _kubeconfig_source(kubeconfig)
    in_cluster = ""
    if chosen is None and context is None:
        try:
            kube_config.load_incluster_config(client_configuration=cfg)  # type: ignore[no-untyped-call]
            return cfg
        except kube_config.ConfigException as e:
            why = "KUBERNETES_SERVICE_HOST is not set" if not os.environ.get("KUBERNETES_SERVICE_HOST") else str(e)
            in_cluster = f", and there is no in-cluster service account ({why.rstrip('.')})"
    if chosen is None:
        home = os.path.expanduser("~/.kube/config")
        chosen = (home, "the default")
        if not os.path.exists(home):
            needs = " (--context names a context in a kubeconfig)" if context is not None else ""
            raise ConfigError(
                [f"kubeconfig: none found: KUBECONFIG is not set, {home} does not exist{in_cluster}{needs}; {HINT}"]
            )
    path, source = chosen
    files = [os.path.expanduser(f) for f in path.split(os.pathsep) if f]
    if not any(os.path.exists(f) for f in files):
        missing = "does not exist" if len(files) == 1 else "do not exist"
        raise ConfigError([f"kubeconfig: {path} ({source}) {missing}; {HINT}"])
    try:
        await kube_config.load_kube_config(
            config_file=path, context=context, client_configuration=cfg, persist_config=False
        )
    except yaml.MarkedYAMLError as e:
        where = f" (line {e.problem_mark.line + 1})" if e.problem_mark is not None else ""
        raise ConfigError([f"kubeconfig: {path} ({source}): invalid YAML: {e.problem}{where}; {HINT}"]) from None
    except (kube_config.ConfigException, yaml.YAMLError, OSError, ValueError, TypeError, AttributeError) as e:
        problem = " ".join(str(e).split()) or type(e).__name__
        hint = HINT
        if context is not None and context in problem:
            hint = f"name one of its contexts with --context NAME, or {HINT}"
        elif "current-context" in problem:
            hint = f"name a context with --context NAME (or set current-context in it), or {HINT}"
        raise ConfigError([f"kubeconfig: {path} ({source}): {problem}; {hint}"]) from None
    return cfg


class KubeClient:
    """Raw JSON requests through a kubernetes-asyncio ApiClient, each with a timeout."""

    def __init__(self, api: ApiClient, timeouts: Timeouts | None = None) -> None:
        self.api = api
        self.timeouts = timeouts or Timeouts()
        api.user_agent = f"berth/{__version__}"

    @classmethod
    async def connect(
        cls, kubeconfig: str | None = None, context: str | None = None, timeouts: Timeouts | None = None
    ) -> KubeClient:
        from kubernetes_asyncio.client import ApiClient

        return cls(ApiClient(configuration=await load_configuration(kubeconfig, context)), timeouts)

    @property
    def host(self) -> str:
        return str(self.api.configuration.host)

    async def close(self) -> None:
        await self.api.close()

    async def _send(
        self,
        method: str,
        path: str,
        query: Iterable[tuple[str, str]],
        timeout: aiohttp.ClientTimeout,
        body: Any = None,
        content_type: str | None = None,
    ) -> aiohttp.ClientResponse:
        headers = {"Accept": "application/json"}
        if content_type:
            headers["Content-Type"] = content_type
        resp: aiohttp.ClientResponse = await self.api.call_api(
            path,
            method,
            query_params=list(query),
            header_params=headers,
            body=body,
            auth_settings=["BearerToken"],
            _preload_content=False,
            _request_timeout=timeout,
        )
        return resp

    async def request(
        self,
        method: str,
        path: str,
        query: Iterable[tuple[str, str]] = (),
        body: Any = None,
        content_type: str | None = None,
    ) -> dict[str, Any]:
        """One request; the decoded JSON body, or KubeError."""
        status, data = await self._read(method, path, query, body, content_type)
        out = msgspec.json.decode(data) if data else {}
        if not isinstance(out, dict):
            raise KubeError(status, "BadResponse", f"expected a JSON object from {method} {path}")
        return out

    async def request_bytes(self, method: str, path: str, query: Iterable[tuple[str, str]] = ()) -> bytes:
        """One request; the body's bytes as the server sent them (the watcher's list pages), or KubeError."""
        return (await self._read(method, path, query))[1]

    async def _read(
        self,
        method: str,
        path: str,
        query: Iterable[tuple[str, str]],
        body: Any = None,
        content_type: str | None = None,
    ) -> tuple[int, bytes]:
        async with await self._send(method, path, query, self.timeouts.for_request(), body, content_type) as resp:
            data = await resp.read()
            if not 200 <= resp.status < 300:
                raise KubeError.from_body(resp.status, data)
        return resp.status, data

    @contextlib.asynccontextmanager
    async def watch(self, path: str, query: Iterable[tuple[str, str]], seconds: int) -> AsyncIterator[Lines]:
        """A watch stream (the caller puts watch=1, timeoutSeconds=`seconds` in the query); its lines."""
        resp = await self._send("GET", path, query, self.timeouts.for_watch(seconds))
        try:
            if resp.status != 200:
                raise KubeError.from_body(resp.status, await resp.read())
            yield Lines(resp)
        finally:
            resp.close()  # never drain a watch: drop the connection


class Lines:
    """A watch body split into lines, however the server chunked it (an event may span chunks, and a
    chunk may hold several events). Ends at a clean end of stream; a dropped one raises aiohttp errors."""

    def __init__(self, resp: aiohttp.ClientResponse) -> None:
        self._content = resp.content
        self._lines: list[bytes] = []
        self._rest = b""

    def __aiter__(self) -> Lines:
        return self

    async def __anext__(self) -> bytes:
        while not self._lines:
            chunk = await self._content.readany()
            if not chunk:
                if self._rest.strip():
                    import aiohttp

                    raise aiohttp.ClientPayloadError("watch stream ended inside an event")
                raise StopAsyncIteration
            parts = (self._rest + chunk).split(b"\n")
            self._rest = parts.pop()
            self._lines = [p for p in parts if p.strip()]
            self._lines.reverse()
        return self._lines.pop()


# ---- writes ---------------------------------------------------------------

CAPACITY_BUFFERS = BY_PLURAL["capacitybuffers"]
PODS = BY_PLURAL["pods"]


async def patch_buffer_status(
    client: KubeClient, namespace: str, name: str, status: Mapping[str, Any], version: str = "v1beta1"
) -> dict[str, Any]:
    """Merge-patch a CapacityBuffer's status subresource (RBAC: patch capacitybuffers/status); returns
    the updated object. A merge patch sets the keys given and leaves the others: send None to remove
    one; lists (conditions) are replaced whole."""
    return await client.request(
        "PATCH",
        CAPACITY_BUFFERS.path(version, namespace, name, "status"),
        body={"status": dict(status)},
        content_type="application/merge-patch+json",
    )


async def bind_pod(client: KubeClient, namespace: str, name: str, node: str, uid: str | None = None) -> None:
    """Bind a pod to a node as kube-scheduler does (RBAC: create pods/binding). 409: already bound."""
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if uid:
        meta["uid"] = uid
    body = {"apiVersion": "v1", "kind": "Binding", "metadata": meta, "target": {"kind": "Node", "name": node}}
    await client.request("POST", PODS.path("v1", namespace, name, "binding"), body=body)


async def mark_preempted(client: KubeClient, namespace: str, name: str, message: str, now: str) -> dict[str, Any]:
    """The DisruptionTarget condition kube-scheduler sets on a victim before deleting it (RBAC: patch
    pods/status); the API server merges conditions by type."""
    condition = {
        "type": "DisruptionTarget",
        "status": "True",
        "reason": "PreemptionByScheduler",
        "message": message,
        "lastTransitionTime": now,
    }
    return await client.request(
        "PATCH",
        PODS.path("v1", namespace, name, "status"),
        body={"status": {"conditions": [condition]}},
        content_type="application/strategic-merge-patch+json",
    )


async def delete_pod(client: KubeClient, namespace: str, name: str) -> None:
    """Delete a preemption victim, gracefully (RBAC: delete pods). 404: it is gone already."""
    await client.request("DELETE", PODS.path("v1", namespace, name))


async def nominate_node(client: KubeClient, namespace: str, name: str, node: str | None) -> dict[str, Any]:
    """Record the node preemption nominated in the pod's status.nominatedNodeName, or clear it (None)
    (RBAC: patch pods/status)."""
    return await client.request(
        "PATCH",
        PODS.path("v1", namespace, name, "status"),
        body={"status": {"nominatedNodeName": node}},
        content_type="application/merge-patch+json",
    )


PERSISTENT_VOLUMES = BY_PLURAL["persistentvolumes"]
PERSISTENT_VOLUME_CLAIMS = BY_PLURAL["persistentvolumeclaims"]
SELECTED_NODE = "volume.kubernetes.io/selected-node"
BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"


async def prebind_pv(
    client: KubeClient, name: str, namespace: str, claim: str, uid: str = "", resource_version: str = ""
) -> dict[str, Any]:
    """Reserve a PV for a claim as kube-scheduler's VolumeBinding PreBind does: set spec.claimRef
    (RBAC: patch persistentvolumes); the PV controller completes the binding. With the PV's
    resourceVersion as berth saw it, the API server answers 409 if it changed since."""
    ref: dict[str, Any] = {"kind": "PersistentVolumeClaim", "apiVersion": "v1", "namespace": namespace, "name": claim}
    if uid:
        ref["uid"] = uid
    meta: dict[str, Any] = {"annotations": {BOUND_BY_CONTROLLER: "yes"}}
    if resource_version:
        meta["resourceVersion"] = resource_version
    return await client.request(
        "PATCH",
        PERSISTENT_VOLUMES.path("v1", None, name),
        body={"metadata": meta, "spec": {"claimRef": ref}},
        content_type="application/merge-patch+json",
    )


async def select_node(client: KubeClient, namespace: str, claim: str, node: str) -> dict[str, Any]:
    """Ask for a claim to be provisioned on a node, as kube-scheduler's PreBind does: the
    volume.kubernetes.io/selected-node annotation (RBAC: patch persistentvolumeclaims)."""
    return await client.request(
        "PATCH",
        PERSISTENT_VOLUME_CLAIMS.path("v1", namespace, claim),
        body={"metadata": {"annotations": {SELECTED_NODE: node}}},
        content_type="application/merge-patch+json",
    )
