"""A fake Kubernetes API server (aiohttp) that speaks the real list/watch protocol over HTTP, so the
real kubernetes-asyncio client can be tested against it. Independent of berth's own kind table.

What it serves:
- LIST  GET /api/v1/{plural}, /apis/{group}/{version}/{plural}, and the /namespaces/{ns}/ forms:
  {"kind": "<Kind>List", "metadata": {"resourceVersion", "continue"?}, "items": [...]}, with
  limit/continue pagination over a snapshot taken at the first page. Items of built-in kinds come
  without apiVersion and kind, as the real API server sends them; custom resources keep them.
- WATCH the same paths with ?watch=1: chunked JSON lines from resourceVersion (history replayed,
  then live), ADDED for every object first when no resourceVersion is given, BOOKMARKs when
  allowWatchBookmarks=true and a test asks for one, a clean end after timeoutSeconds, and
  ERROR 410 Expired for a compacted resourceVersion.
- Objects: GET/PUT/PATCH (merge)/DELETE on .../{plural}/{name} and .../{name}/status (the status
  subresource only changes status; the main resource never does), POST on a collection (create)
  and POST .../pods/{name}/binding.
- 404 Status for resources not installed (custom resources can be left out).

Test hooks: add/modify/delete objects; expire() compacts history and sends 410 to open watches;
unwatched() changes objects without any watch seeing it; bookmark(); drop() cuts open watches in
the middle of an event; fail() answers the next matching requests with an error status; hang()
makes them never answer (until release()); expire_continue() invalidates continue tokens. Every request is recorded.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest_asyncio
from aiohttp import web

from berth.adapters.kube.client import KubeClient, Timeouts


@dataclass
class Resource:
    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    custom: bool = False
    objects: dict[str, dict[str, Any]] = field(default_factory=dict)  # key -> object (with apiVersion, kind)
    history: list[tuple[int, str, dict[str, Any]]] = field(default_factory=list)  # (rv, type, object)
    compacted: int = 0  # watches from a resourceVersion below this get 410

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version


BUILTIN = [
    ("", "v1", "nodes", "Node", False),
    ("", "v1", "pods", "Pod", True),
    ("", "v1", "persistentvolumes", "PersistentVolume", False),
    ("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", True),
    ("", "v1", "podtemplates", "PodTemplate", True),
    ("", "v1", "replicationcontrollers", "ReplicationController", True),
    ("", "v1", "resourcequotas", "ResourceQuota", True),
    ("", "v1", "namespaces", "Namespace", False),
    ("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", False),
    ("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", True),
    ("", "v1", "services", "Service", True),
    ("storage.k8s.io", "v1", "storageclasses", "StorageClass", False),
    ("storage.k8s.io", "v1", "csidrivers", "CSIDriver", False),
    ("storage.k8s.io", "v1", "csinodes", "CSINode", False),
    ("storage.k8s.io", "v1", "volumeattachments", "VolumeAttachment", False),
    ("storage.k8s.io", "v1", "csistoragecapacities", "CSIStorageCapacity", True),
    ("apps", "v1", "deployments", "Deployment", True),
    ("apps", "v1", "replicasets", "ReplicaSet", True),
    ("apps", "v1", "statefulsets", "StatefulSet", True),
    ("batch", "v1", "jobs", "Job", True),
]
CUSTOM = {
    "nodemetrics": ("slo.koordinator.sh", "v1alpha1", "nodemetrics", "NodeMetric", False),
    "capacitybuffers": ("autoscaling.x-k8s.io", "v1beta1", "capacitybuffers", "CapacityBuffer", True),
}


@dataclass
class Recorded:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: Any = None

    @property
    def watch(self) -> bool:
        return self.query.get("watch") in ("1", "true")


@dataclass
class _Fault:
    method: str
    plural: str
    status: int
    times: int
    watch: bool | None  # None: lists and watches alike
    hang: bool = False


class _Stream:
    """One open watch: where its events go."""

    def __init__(self, res: Resource, namespace: str | None, bookmarks: bool) -> None:
        self.res = res
        self.namespace = namespace
        self.bookmarks = bookmarks
        self.queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()

    def wants(self, res: Resource, obj: dict[str, Any]) -> bool:
        return res is self.res and (self.namespace is None or obj["metadata"].get("namespace") == self.namespace)


def status(code: int, reason: str, message: str) -> dict[str, Any]:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success" if code < 400 else "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge_patch(out.get(k), v)
    return out


class FakeAPI:
    def __init__(
        self,
        custom: tuple[str, ...] = ("nodemetrics", "capacitybuffers"),
        token: str = "fake-token",
        split: bool = True,
    ) -> None:
        self.token = token
        self.split = split  # write each live event in several HTTP chunks
        self.resources: dict[tuple[str, str, str], Resource] = {}
        for spec in BUILTIN:
            self.install(*spec)
        for name in custom:
            self.install(*CUSTOM[name], custom=True)
        self.rv = 100
        self.requests: list[Recorded] = []
        self.faults: list[_Fault] = []
        self.streams: list[_Stream] = []
        self._continues: dict[str, tuple[int, list[dict[str, Any]]]] = {}
        self._quiet = False
        self._closing = asyncio.Event()
        self._unhang = asyncio.Event()
        self._runner: web.AppRunner | None = None
        self.port = 0

    # ---- lifecycle -----------------------------------------------------------
    async def start(self) -> FakeAPI:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, shutdown_timeout=1.0, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return self

    async def close(self) -> None:
        self._closing.set()
        self._unhang.set()
        for s in self.streams:
            s.queue.put_nowait(("close", None))
        if self._runner is not None:
            await self._runner.cleanup()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def write_kubeconfig(self, path: Path, namespace: str | None = None) -> Path:
        ctx: dict[str, Any] = {"cluster": "fake", "user": "fake"}
        if namespace:
            ctx["namespace"] = namespace
        doc = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "fake", "cluster": {"server": self.url}}],
            "users": [{"name": "fake", "user": {"token": self.token}}],
            "contexts": [{"name": "fake", "context": ctx}],
            "current-context": "fake",
        }
        path.write_text(json.dumps(doc))  # JSON is YAML
        return path

    def install(
        self, group: str, version: str, plural: str, kind: str, namespaced: bool, custom: bool = False
    ) -> Resource:
        res = Resource(group, version, plural, kind, namespaced, custom)
        self.resources[(group, version, plural)] = res
        return res

    def uninstall(self, plural: str) -> None:
        for key in [k for k in self.resources if k[2] == plural]:
            del self.resources[key]

    # ---- objects ----------------------------------------------------------------
    def resource(self, obj_or_plural: dict[str, Any] | str) -> Resource:
        if isinstance(obj_or_plural, str):
            return next(r for r in self.resources.values() if r.plural == obj_or_plural)
        av, kind = obj_or_plural["apiVersion"], obj_or_plural["kind"]
        return next(r for r in self.resources.values() if r.api_version == av and r.kind == kind)

    @staticmethod
    def key(obj: dict[str, Any]) -> str:
        meta = obj["metadata"]
        return f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else meta["name"]

    def _record_change(self, res: Resource, etype: str, obj: dict[str, Any]) -> None:
        if self._quiet:
            return
        snapshot = copy.deepcopy(obj)
        res.history.append((self.rv, etype, snapshot))
        for s in self.streams:
            if s.wants(res, snapshot):
                s.queue.put_nowait(("event", (etype, snapshot)))

    def add(self, obj: dict[str, Any]) -> dict[str, Any]:
        res = self.resource(obj)
        obj = copy.deepcopy(obj)
        meta = obj.setdefault("metadata", {})
        if res.namespaced:
            meta.setdefault("namespace", "default")
        key = self.key(obj)
        if key in res.objects:
            raise KeyError(f"{res.plural} {key} exists")
        self.rv += 1
        meta["resourceVersion"] = str(self.rv)
        meta.setdefault("uid", str(uuid.uuid4()))
        res.objects[key] = obj
        self._record_change(res, "ADDED", obj)
        return copy.deepcopy(obj)

    def modify(self, obj: dict[str, Any]) -> dict[str, Any]:
        """Replace an object (matched by kind, namespace and name)."""
        res = self.resource(obj)
        obj = copy.deepcopy(obj)
        meta = obj.setdefault("metadata", {})
        if res.namespaced:
            meta.setdefault("namespace", "default")
        old = res.objects[self.key(obj)]
        self.rv += 1
        meta["resourceVersion"] = str(self.rv)
        meta["uid"] = old["metadata"].get("uid")
        res.objects[self.key(obj)] = obj
        self._record_change(res, "MODIFIED", obj)
        return copy.deepcopy(obj)

    def delete(self, obj: dict[str, Any]) -> None:
        res = self.resource(obj)
        meta = obj["metadata"]
        key = f"{meta.get('namespace') or 'default'}/{meta['name']}" if res.namespaced else meta["name"]
        gone = res.objects.pop(key)
        self.rv += 1
        gone["metadata"]["resourceVersion"] = str(self.rv)
        self._record_change(res, "DELETED", gone)

    def get(self, plural: str, name: str, namespace: str | None = None) -> dict[str, Any]:
        res = self.resource(plural)
        return copy.deepcopy(res.objects[f"{namespace}/{name}" if namespace else name])

    # ---- test hooks ---------------------------------------------------------------
    @contextlib.contextmanager
    def unwatched(self) -> Iterator[None]:
        """Changes made here reach no watch and no history (as if compacted away already)."""
        self._quiet = True
        try:
            yield
        finally:
            self._quiet = False

    def expire(self, plural: str) -> None:
        """Compact: every resourceVersion up to now is too old; open watches get ERROR 410 and end."""
        res = self.resource(plural)
        res.compacted = self.rv + 1
        res.history.clear()
        for s in self.streams:
            if s.res is res:
                s.queue.put_nowait(("gone", None))

    def bookmark(self, plural: str) -> int:
        """A BOOKMARK at the current resourceVersion to open watches that allow them."""
        res = self.resource(plural)
        for s in self.streams:
            if s.res is res and s.bookmarks:
                s.queue.put_nowait(("bookmark", self.rv))
        return self.rv

    def drop(self, plural: str) -> None:
        """Cut open watches in the middle of an event (the connection is aborted)."""
        res = self.resource(plural)
        for s in self.streams:
            if s.res is res:
                s.queue.put_nowait(("drop", None))

    def fail(self, method: str, plural: str, code: int, times: int = 1, watch: bool | None = None) -> None:
        self.faults.append(_Fault(method.upper(), plural, code, times, watch))

    def hang(self, method: str, plural: str, times: int = 1, watch: bool | None = None) -> None:
        self.faults.append(_Fault(method.upper(), plural, 0, times, watch, hang=True))

    def release(self) -> None:
        """Hung requests answer 503 now (so do later ones that hang)."""
        self._unhang.set()

    def expire_continue(self) -> None:
        self._continues.clear()

    def watches(self, plural: str) -> list[Recorded]:
        return [r for r in self.requests if r.watch and r.path.rstrip("/").endswith("/" + plural)]

    def lists(self, plural: str) -> list[Recorded]:
        return [
            r for r in self.requests if r.method == "GET" and not r.watch and r.path.rstrip("/").endswith("/" + plural)
        ]

    def open_watches(self, plural: str) -> int:
        return sum(1 for s in self.streams if s.res.plural == plural)

    async def wait_for(self, condition: Callable[[], bool], timeout: float = 5.0) -> None:
        """Until condition() holds (polled: it may be about the client's state too)."""
        async with asyncio.timeout(timeout):
            while not condition():
                await asyncio.sleep(0.005)

    # ---- HTTP ---------------------------------------------------------------------
    def _route(self, path: str) -> tuple[Resource | None, str | None, str | None, str | None]:
        """(resource, namespace, name, subresource) for a path; resource None when not served."""
        parts = [p for p in path.split("/") if p]
        if len(parts) >= 2 and parts[0] == "api":
            group, version, rest = "", parts[1], parts[2:]
        elif len(parts) >= 3 and parts[0] == "apis":
            group, version, rest = parts[1], parts[2], parts[3:]
        else:
            return None, None, None, None
        namespace = None
        if len(rest) >= 3 and rest[0] == "namespaces":
            namespace, rest = rest[1], rest[2:]
        if not rest:
            return None, None, None, None
        res = self.resources.get((group, version, rest[0]))
        if res is None or (namespace is not None and not res.namespaced):
            return None, None, None, None
        name = rest[1] if len(rest) > 1 else None
        sub = rest[2] if len(rest) > 2 else None
        return res, namespace, name, sub

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        body = None
        if request.can_read_body:
            text = await request.text()
            body = json.loads(text) if text else None
        rec = Recorded(request.method, request.path, dict(request.query), dict(request.headers), body)
        self.requests.append(rec)
        if self.token and request.headers.get("Authorization") != f"Bearer {self.token}":
            return web.json_response(status(401, "Unauthorized", "Unauthorized"), status=401)
        res, namespace, name, sub = self._route(request.path)
        if res is None:
            return web.json_response(
                status(404, "NotFound", "the server could not find the requested resource"), status=404
            )
        for fault in self.faults:
            if (
                fault.times > 0
                and fault.method == request.method
                and fault.plural == res.plural
                and (fault.watch is None or fault.watch == rec.watch)
            ):
                fault.times -= 1
                if fault.hang:
                    await self._unhang.wait()
                    return web.json_response(status(503, "ServiceUnavailable", "was hung"), status=503)
                return web.json_response(status(fault.status, "Injected", "injected failure"), status=fault.status)
        if name is None:
            if request.method == "GET":
                return await (
                    self._watch(request, res, namespace) if rec.watch else self._list(request, res, namespace)
                )
            if request.method == "POST":
                return self._create(res, namespace, body)
            return web.json_response(status(405, "MethodNotAllowed", request.method), status=405)
        return self._object(request, res, namespace, name, sub, body)

    def _strip(self, res: Resource, obj: dict[str, Any]) -> dict[str, Any]:
        if res.custom:
            return obj
        return {k: v for k, v in obj.items() if k not in ("apiVersion", "kind")}

    async def _list(self, request: web.Request, res: Resource, namespace: str | None) -> web.Response:
        token = request.query.get("continue")
        if token:
            if token not in self._continues:
                return web.json_response(
                    status(410, "Expired", "The provided continue parameter is too old"), status=410
                )
            rv, items = self._continues.pop(token)
        else:
            rv = self.rv
            items = [
                copy.deepcopy(o)
                for _, o in sorted(res.objects.items())
                if namespace is None or o["metadata"].get("namespace") == namespace
            ]
        limit = int(request.query.get("limit") or 0)
        meta: dict[str, Any] = {"resourceVersion": str(rv)}
        if limit and len(items) > limit:
            items, rest = items[:limit], items[limit:]
            next_token = uuid.uuid4().hex
            self._continues[next_token] = (rv, rest)
            meta["continue"] = next_token
            meta["remainingItemCount"] = len(rest)
        doc = {
            "kind": f"{res.kind}List",
            "apiVersion": res.api_version,
            "metadata": meta,
            "items": [self._strip(res, o) for o in items],
        }
        return web.Response(body=kube_json(doc), content_type="application/json")

    async def _watch(self, request: web.Request, res: Resource, namespace: str | None) -> web.StreamResponse:
        q = request.query
        rv_text = q.get("resourceVersion", "")
        timeout = float(q["timeoutSeconds"]) if q.get("timeoutSeconds") else None
        stream = _Stream(res, namespace, q.get("allowWatchBookmarks") == "true")

        def visible(obj: dict[str, Any]) -> bool:
            return namespace is None or obj["metadata"].get("namespace") == namespace

        backlog: list[tuple[str, dict[str, Any]]] = []
        if rv_text in ("", "0"):
            backlog = [("ADDED", copy.deepcopy(o)) for _, o in sorted(res.objects.items()) if visible(o)]
        elif int(rv_text) < res.compacted:
            backlog = []
            stream.queue.put_nowait(("gone", None))
        else:
            backlog = [(t, o) for rv, t, o in res.history if rv > int(rv_text) and visible(o)]
        self.streams.append(stream)  # from here on live events queue up: nothing is missed in between
        resp = web.StreamResponse(headers={"Content-Type": "application/json"})
        resp.enable_chunked_encoding()
        await resp.prepare(request)
        try:
            if backlog:  # several events in one chunk
                await resp.write(b"".join(_line({"type": t, "object": o}) for t, o in backlog))
            async with asyncio.timeout(timeout):
                while True:
                    what, value = await stream.queue.get()
                    if what == "event":
                        etype, obj = value
                        await self._write_split(resp, _line({"type": etype, "object": obj}))
                    elif what == "bookmark":
                        meta = {"resourceVersion": str(value)}
                        await resp.write(
                            _line(
                                {
                                    "type": "BOOKMARK",
                                    "object": {"kind": res.kind, "apiVersion": res.api_version, "metadata": meta},
                                }
                            )
                        )
                    elif what == "gone":
                        msg = f"too old resource version: {rv_text} ({res.compacted - 1})"
                        await resp.write(_line({"type": "ERROR", "object": status(410, "Expired", msg)}))
                        break
                    elif what == "drop":
                        await resp.write(b'{"type":"MODIFIED","object":{"kind":')  # half an event, then nothing
                        assert request.transport is not None
                        request.transport.abort()
                        return resp
                    else:  # close
                        break
        except TimeoutError:
            pass  # timeoutSeconds: a clean end of the stream
        except ConnectionResetError:
            return resp
        finally:
            self.streams.remove(stream)
        with contextlib.suppress(ConnectionResetError):
            await resp.write_eof()
        return resp

    async def _write_split(self, resp: web.StreamResponse, data: bytes) -> None:
        if not self.split:
            await resp.write(data)
            return
        third = max(1, len(data) // 3)
        for piece in (data[:third], data[third : 2 * third], data[2 * third :]):
            await resp.write(piece)
            await asyncio.sleep(0)

    def _create(self, res: Resource, namespace: str | None, body: Any) -> web.Response:
        if not isinstance(body, dict):
            return web.json_response(status(400, "BadRequest", "expected an object"), status=400)
        obj = {"apiVersion": res.api_version, "kind": res.kind, **body}
        if namespace:
            obj.setdefault("metadata", {})["namespace"] = namespace
        try:
            return web.json_response(self.add(obj), status=201)
        except KeyError as e:
            return web.json_response(status(409, "AlreadyExists", str(e)), status=409)

    def _object(
        self, request: web.Request, res: Resource, namespace: str | None, name: str, sub: str | None, body: Any
    ) -> web.Response:
        key = f"{namespace}/{name}" if res.namespaced else name
        if res.namespaced and namespace is None:
            return web.json_response(status(404, "NotFound", "namespace required"), status=404)
        if sub == "binding" and res.plural == "pods" and request.method == "POST":
            return self._bind(res, key, body)
        if sub not in (None, "status"):
            return web.json_response(status(404, "NotFound", f"no subresource {sub}"), status=404)
        current = res.objects.get(key)
        if current is None:
            return web.json_response(status(404, "NotFound", f'{res.plural} "{name}" not found'), status=404)
        method = request.method
        if method == "GET":
            return web.json_response(copy.deepcopy(current))
        if method == "DELETE":
            self.delete(current)
            return web.json_response(status(200, "", "deleted"))
        if method == "PUT":
            if not isinstance(body, dict):
                return web.json_response(status(400, "BadRequest", "expected an object"), status=400)
            want = (body.get("metadata") or {}).get("resourceVersion")
            if want and want != current["metadata"]["resourceVersion"]:
                return web.json_response(status(409, "Conflict", "the object has been modified"), status=409)
            new = {"apiVersion": res.api_version, "kind": res.kind, **body}
        elif method == "PATCH":
            ctype = request.headers.get("Content-Type", "")
            if ctype not in ("application/merge-patch+json", "application/strategic-merge-patch+json"):
                return web.json_response(status(415, "UnsupportedMediaType", ctype), status=415)
            new = merge_patch(current, body)
        else:
            return web.json_response(status(405, "MethodNotAllowed", method), status=405)
        if sub == "status":  # the status subresource changes status only
            new = {**copy.deepcopy(current), "status": new.get("status")}
        else:  # the main resource never changes status
            new = {**new, "status": copy.deepcopy(current.get("status"))}
            if new["status"] is None:
                del new["status"]
        new["metadata"] = {**new.get("metadata", {}), "name": name}
        if namespace:
            new["metadata"]["namespace"] = namespace
        return web.json_response(self.modify(new))

    def _bind(self, res: Resource, key: str, body: Any) -> web.Response:
        pod = res.objects.get(key)
        if pod is None:
            return web.json_response(status(404, "NotFound", f'pods "{key}" not found'), status=404)
        node = ((body or {}).get("target") or {}).get("name")
        if not node:
            return web.json_response(status(400, "BadRequest", "target.name is required"), status=400)
        bound = (pod.get("spec") or {}).get("nodeName")
        if bound:
            msg = f"pod {key} is already assigned to node {bound!r}"
            return web.json_response(status(409, "Conflict", msg), status=409)
        new = copy.deepcopy(pod)
        new.setdefault("spec", {})["nodeName"] = node
        self.modify(new)
        return web.json_response(status(201, "", ""), status=201)


def kube_json(doc: Any) -> bytes:
    """JSON as kube-apiserver writes it (Go's encoding/json): compact, UTF-8 as it is, and <, >, &, U+2028
    and U+2029 escaped (they occur only inside strings, so replacing them is safe)."""
    text = json.dumps(doc, separators=(",", ":"), ensure_ascii=False)
    for char, escape in (
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("&", "\\u0026"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
    ):
        text = text.replace(char, escape)
    return text.encode()


def _line(doc: dict[str, Any]) -> bytes:
    return kube_json(doc) + b"\n"


# ---- fixtures shared by the watcher and extender tests (import them into a conftest) ----
FAST = Timeouts(connect=2.0, request=5.0, watch=30, watch_grace=5.0)


@pytest_asyncio.fixture
async def api() -> AsyncIterator[FakeAPI]:
    fake = await FakeAPI().start()
    yield fake
    await fake.close()


@pytest_asyncio.fixture
async def client(api: FakeAPI, tmp_path: Path) -> AsyncIterator[KubeClient]:
    c = await KubeClient.connect(str(api.write_kubeconfig(tmp_path / "kubeconfig")), timeouts=FAST)
    yield c
    await c.close()
