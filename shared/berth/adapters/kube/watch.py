"""List and watch Kubernetes kinds as berth Events: the protocol an informer speaks, without its cache.

Per kind: LIST (paginated with limit/continue), then WATCH from the list's resourceVersion with
allowWatchBookmarks and a server-side timeoutSeconds. The resume point moves with every event and
bookmark. A watch that ends cleanly (its timeout) is reopened at once; a dropped connection, a
timeout, an error status or a malformed line reopens it from the resume point after a backoff with
jitter. 410 Gone (the resume point is compacted away) relists and diffs the new list against what
was seen: ADDED for new objects, MODIFIED for changed ones, DELETED for the ones that vanished in
between (a stub object: kind, name, namespace and the list's resourceVersion). Bookmarks are not
emitted. A kind that is not served (a CRD not installed: 404 on the first list) is skipped with
one warning.

Objects travel as the bytes the server sent (msgspec.Raw): a watch line and a list page are decoded
only for the event's type and each object's kind, apiVersion, names and resourceVersion (_Head); a
list item gets the apiVersion and kind it lacks written in front of its own keys.

When the API server cannot be reached at all (or refuses the credentials), that is the server's
failure, not a kind's: one kind retries with its backoff, logging one line per attempt, and the
others wait for the server to answer again before they retry. With `once`, a kind whose list
keeps failing ends the stream with GaveUp after `WatchOptions.once_attempts` attempts.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import aiohttp
import msgspec

from berth.adapters.kube.client import KINDS, Kind, KubeClient, KubeError, Timeouts
from berth.core.api.meta.wire import bus_key
from berth.core.api.watch import WatchEvent, begin_marker, end_marker

log = logging.getLogger("berth.watcher")

Sleep = Callable[[float], Awaitable[None]]
Clock = Callable[[], datetime]


def utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class Backoff:
    """Delay before retry n (from 0): min(maximum, initial × factor^n), times a random 0.5..1."""

    initial: float = 0.5
    maximum: float = 30.0
    factor: float = 2.0

    def delay(self, attempt: int, rand: random.Random) -> float:
        return min(self.maximum, self.initial * self.factor ** min(attempt, 64)) * (0.5 + rand.random() / 2)


@dataclass(frozen=True)
class WatchOptions:
    page_size: int = 500
    timeouts: Timeouts = field(default_factory=Timeouts)
    backoff: Backoff = field(default_factory=Backoff)
    once_attempts: int = 5  # with `once`: a list that failed this many times in a row ends the stream (GaveUp)


class Stamper:
    """Makes Events: ts from the injected clock, position a running sequence number."""

    def __init__(self, clock: Clock = utc_now) -> None:
        self.clock = clock
        self.count = 0

    def __call__(self, etype: str, obj: dict[str, Any] | msgspec.Raw, key: bytes = b"") -> WatchEvent:
        self.count += 1
        return WatchEvent(type=etype, object=obj, ts=self.clock(), position=self.count, key=key)


class Gone(Exception):
    """410: the resume point is too old; relist."""


class NotServed(Exception):
    """404 on every version at the first list: the kind is not installed."""


class _QuietEnd(ValueError):
    """A watch that ended cleanly without a single line: retried after a backoff, logged quietly."""


class GaveUp(Exception):
    """With `once`: a kind's list failed WatchOptions.once_attempts times in a row. One line."""


# What makes a watch or list fail and be retried from the resume point after a backoff.
RETRY = (KubeError, aiohttp.ClientError, TimeoutError, OSError, msgspec.DecodeError, ValueError)
# Nothing answered: a refused or timed-out connection, a name that does not resolve, a TLS handshake or
# certificate that fails. The server's failure, not the kind's.
UNREACHABLE = (aiohttp.ClientConnectorError, aiohttp.ConnectionTimeoutError)


def server_wide(err: BaseException) -> bool:
    """A failure every kind would meet alike: the server cannot be reached, or refuses the credentials (401)."""
    return isinstance(err, UNREACHABLE) or (isinstance(err, KubeError) and err.status == 401)


class Server:
    """What the kinds of one Watcher know of the API server: while it fails for every kind alike
    (server_wide), one kind (the prober) retries with its backoff and logs each attempt; the others
    wait until the server answers anything at all, then go on at once."""

    def __init__(self) -> None:
        self.answering = asyncio.Event()
        self.answering.set()
        self.prober: KindWatcher | None = None

    def answered(self) -> None:
        self.prober = None
        self.answering.set()


def describe(err: BaseException) -> str:
    return str(err) or type(err).__name__


class _Names(msgspec.Struct, gc=False):
    name: str = ""
    namespace: str = ""
    resourceVersion: str = ""


class _Head(msgspec.Struct, gc=False):
    """What the watcher reads of an object: its kind and names. The object itself stays as its bytes."""

    apiVersion: str | msgspec.UnsetType = msgspec.UNSET
    kind: str | msgspec.UnsetType = msgspec.UNSET
    metadata: _Names | None = None


class _Line(msgspec.Struct, gc=False):
    """A watch line: the event's type, its object as the bytes the server sent."""

    type: str | None = None
    object: msgspec.Raw = msgspec.Raw()


class _ListMeta(msgspec.Struct, gc=False):
    resourceVersion: str = ""
    continue_: str = msgspec.field(name="continue", default="")


class _Page(msgspec.Struct, gc=False):
    """A list page: its items as the bytes the server sent."""

    metadata: _ListMeta | None = None
    items: list[msgspec.Raw] | None = None


_line = msgspec.json.Decoder(_Line)
_head = msgspec.json.Decoder(_Head)
_page = msgspec.json.Decoder(_Page)
_encode = msgspec.json.Encoder().encode


class KindWatcher:
    """The list+watch loop for one kind. `known` maps namespace/name (or name) to resourceVersion."""

    def __init__(
        self,
        client: KubeClient,
        kind: Kind,
        stamp: Stamper | None = None,
        *,
        namespace: str | None = None,
        options: WatchOptions | None = None,
        sleep: Sleep = asyncio.sleep,
        rand: random.Random | None = None,
        server: Server | None = None,
    ) -> None:
        self.client = client
        self.kind = kind
        self.server = server or Server()
        self.stamp = stamp or Stamper()
        self.namespace = namespace if kind.namespaced else None
        self.options = options or WatchOptions()
        self.sleep = sleep
        self.rand = rand or random.Random()
        self.known: dict[str, str] = {}
        self.version: str | None = None  # the served API version, found at the first list
        self.resource_version: str | None = None  # where the next watch resumes; None: (re)list first
        self.synced = False  # the first list is complete
        # the first list is complete, was skipped, or failed once for a reason of its own (not server_wide)
        self.tried = asyncio.Event()
        self.skipped = False  # not served
        self.attempt = 0  # consecutive failures, for the backoff
        self.failing_since: float | None = None  # monotonic time of the first of those failures
        self.lists = 0
        self.watches = 0
        self.marked = False  # the end of the first list has been marked

    @property
    def name(self) -> str:
        return self.kind.plural if self.namespace is None else f"{self.kind.plural} in {self.namespace}"

    async def stream(self, once: bool = False) -> AsyncGenerator[WatchEvent, None]:
        """Events, forever; returns only when the kind is not served, or with `once` after the first list."""
        while True:
            if self.resource_version is None:
                try:
                    async for ev in self._list():
                        yield ev
                    if not self.marked:
                        yield self._listed()
                    if once:
                        return
                except NotServed:
                    self.skipped = True
                    self.tried.set()
                    what = "its CRD is not installed" if self.kind.crd else "the API server does not serve it"
                    versions = ", ".join(self.kind.api_version(v) for v in self.kind.versions)
                    log.warning("skipping %s (%s): %s", self.kind.kind, versions, what)
                    yield self._listed()  # listed nothing
                    return
                except RETRY as e:
                    if not server_wide(e):
                        self.tried.set()  # the next kinds go on; a server-wide failure holds them up
                    if once and self.attempt + 1 >= self.options.once_attempts:
                        raise self._gave_up(e) from None
                    await self._pause("list", e)
                    continue
            try:
                async for ev in self._watch():
                    yield ev
            except Gone as e:
                log.info("%s: %s; relisting", self.name, e)
                self.resource_version = None
            except RETRY as e:
                await self._pause("watch", e)

    def _listed(self) -> WatchEvent:
        """The BOOKMARK that ends the kind's first list (kube's initial-events-end), once."""
        self.marked = True
        api = self.kind.api_version(self.version or self.kind.versions[0])
        return self.stamp("BOOKMARK", end_marker(api, self.kind.kind, self.resource_version or ""))

    def _gave_up(self, err: BaseException) -> GaveUp:
        took = time.monotonic() - (self.failing_since or time.monotonic())
        return GaveUp(
            f"Kubernetes API {self.client.host}: {self.name} list failed {self.attempt + 1} times in {took:.1f} s, "
            f"the last time with: {describe(err)}"
        )

    async def _pause(self, what: str, err: BaseException) -> None:
        """After a failure: the backoff, with one log line; or, while another kind probes a server that
        cannot be reached, a quiet wait for it to answer."""
        server = self.server
        if not server_wide(err):
            server.answered()  # it answered, if only with an error
        elif server.prober is not None and server.prober is not self:
            log.debug("%s %s: %s; waiting for the API server", self.name, what, describe(err))
            await server.answering.wait()
            return
        else:
            server.prober = self
            server.answering.clear()
        if self.failing_since is None:
            self.failing_since = time.monotonic()
        delay = self.options.backoff.delay(self.attempt, self.rand)
        self.attempt += 1
        level = logging.DEBUG if isinstance(err, _QuietEnd) else logging.WARNING
        log.log(
            level, "%s %s: %s; retrying in %.2f s (attempt %d)", self.name, what, describe(err), delay, self.attempt
        )
        await self.sleep(delay)

    def _reset(self) -> None:
        """The server is talking sense again."""
        self.attempt = 0
        self.failing_since = None
        self.server.answered()

    def _read(self, obj: msgspec.Raw) -> tuple[msgspec.Raw, str, str, bytes]:
        """An object's bytes, its known-key (namespace/name, or name), resourceVersion and bus key.
        List items come without apiVersion and kind; events carry them. Both leave here with them:
        the missing ones are written in front of the object's own keys, as they are named in the
        kind table; nothing else of the object is decoded or written again."""
        head = _head.decode(obj)
        meta = head.metadata or _Names()
        missing = []
        if head.apiVersion is msgspec.UNSET:
            assert self.version is not None
            missing.append(b'"apiVersion":' + _encode(self.kind.api_version(self.version)))
        if head.kind is msgspec.UNSET:
            missing.append(b'"kind":' + _encode(self.kind.kind))
        if missing:
            body = memoryview(obj)[1:]  # after the "{": the decode above found an object
            first = bytes(body[:16]).lstrip() or bytes(body).lstrip()  # an empty object takes no comma
            comma = b"," if first[:1] != b"}" else b""
            obj = msgspec.Raw(b"".join([b"{", b",".join(missing), comma, body]))
        kind = self.kind.kind if head.kind is msgspec.UNSET else head.kind
        key = f"{meta.namespace}/{meta.name}" if meta.namespace else meta.name
        return obj, key, meta.resourceVersion, bus_key(kind, meta.namespace, meta.name)

    def _tombstone(self, key: str, rv: str) -> dict[str, Any]:
        ns, _, name = key.rpartition("/")
        meta = {"name": name, "namespace": ns, "resourceVersion": rv} if ns else {"name": name, "resourceVersion": rv}
        assert self.version is not None
        return {"apiVersion": self.kind.api_version(self.version), "kind": self.kind.kind, "metadata": meta}

    async def _get_page(self, query: list[tuple[str, str]]) -> _Page:
        assert self.version is not None
        return _page.decode(await self.client.request_bytes("GET", self.kind.path(self.version, self.namespace), query))

    async def _first_page(self, query: list[tuple[str, str]]) -> _Page:
        """The first page; on the first list, also which version is served (404: try the next one)."""
        if self.version is not None:
            page = await self._get_page(query)
            self.server.answered()
            return page
        for version in self.kind.versions:
            try:
                data = await self.client.request_bytes("GET", self.kind.path(version, self.namespace), query)
            except KubeError as e:
                if e.status == 404:
                    self.server.answered()
                    continue
                raise
            self.server.answered()
            self.version = version
            return _page.decode(data)
        raise NotServed

    async def _list(self) -> AsyncIterator[WatchEvent]:
        self.lists += 1
        limit = ("limit", str(self.options.page_size))
        seen: set[str] = set()
        page = await self._first_page([limit])
        while True:
            for item in page.items or ():
                obj, key, rv, bus = self._read(item)
                seen.add(key)
                old = self.known.get(key)
                if old is not None and old == rv:
                    continue  # unchanged since we last saw it
                self.known[key] = rv
                # an item left as it came would hold the whole page in memory: its own copy
                yield self.stamp("ADDED" if old is None else "MODIFIED", obj if obj is not item else obj.copy(), bus)
            meta = page.metadata or _ListMeta()
            if not meta.continue_:
                break
            try:
                page = await self._get_page([limit, ("continue", meta.continue_)])
            except KubeError as e:
                if e.status != 410:
                    raise
                log.info("%s: list continuation expired; listing again from the start", self.name)
                seen.clear()
                page = await self._first_page([limit])
        rv = meta.resourceVersion
        for key in sorted(set(self.known) - seen):
            del self.known[key]
            yield self.stamp("DELETED", self._tombstone(key, rv))
        self.resource_version = rv
        self.synced = True
        self.tried.set()
        self._reset()

    async def _watch(self) -> AsyncIterator[WatchEvent]:
        assert self.version is not None
        self.watches += 1
        timeouts = self.options.timeouts
        seconds = max(1, int(timeouts.watch * (1 + self.rand.random())))
        query = [("watch", "1"), ("allowWatchBookmarks", "true"), ("timeoutSeconds", str(seconds))]
        if self.resource_version:
            query.append(("resourceVersion", self.resource_version))
        lines = 0
        try:
            async with self.client.watch(self.kind.path(self.version, self.namespace), query, seconds) as stream:
                self.server.answered()  # the watch is open: the kinds waiting for the server go on
                async for line in stream:
                    lines += 1
                    ev = self._event(line)
                    if ev is not None:
                        yield ev
        except KubeError as e:
            if e.status == 410:
                raise Gone(str(e)) from None
            raise
        if lines == 0:
            raise _QuietEnd("watch ended without events")  # no hot loop if a server keeps closing at once

    def _event(self, line: bytes) -> WatchEvent | None:
        try:
            raw = _line.decode(line)
            if raw.type == "ERROR":
                status = msgspec.json.decode(raw.object)
                if not isinstance(status, dict):
                    raise ValueError("not an object")
                err = KubeError.from_status(status, 500)
                if err.status == 410:
                    raise Gone(str(err))
                raise err
            obj, key, rv, bus = self._read(raw.object)
        except (msgspec.DecodeError, ValueError):
            raise ValueError(f"not a watch event: {line[:200]!r}") from None
        etype = raw.type
        self._reset()
        if etype == "BOOKMARK":
            if rv:
                self.resource_version = rv
            return None
        if etype not in ("ADDED", "MODIFIED", "DELETED"):
            raise ValueError(f"unknown watch event type {etype!r}")
        if etype == "DELETED":
            self.known.pop(key, None)
        else:
            self.known[key] = rv
        if rv:
            self.resource_version = rv
        return self.stamp(etype, obj, bus)


class Watcher:
    """Every kind at once, merged into one stream of Events (each kind's own order is kept).

    The first lists go one kind after the other in the order given (KINDS: pods last), so a fresh
    consumer hears of nodes, volumes and workloads before the pods; a kind whose first list fails
    holds the next ones up for that one attempt only, or, when the server cannot be reached or refuses
    the credentials, until it answers. After its first list, every kind goes its own way.
    BOOKMARKs mark the first lists: one at the start names the kinds, and one per kind (kube's
    `k8s.io/initial-events-end`) follows its first list, or its skip (berth.core.api.watch.ListMarker).
    """

    def __init__(
        self,
        client: KubeClient,
        kinds: Iterable[Kind] = KINDS,
        *,
        namespace: str | None = None,
        options: WatchOptions | None = None,
        clock: Clock = utc_now,
        sleep: Sleep = asyncio.sleep,
        rand: random.Random | None = None,
        queue_size: int = 1000,
        once: bool = False,
    ) -> None:
        self.once = once  # list every kind once, no watches: a snapshot
        self.stamp = Stamper(clock)
        rand = rand or random.Random()
        self.server = Server()
        self.kinds = [
            KindWatcher(
                client, k, self.stamp, namespace=namespace, options=options, sleep=sleep, rand=rand, server=self.server
            )
            for k in kinds
        ]
        self._queue: asyncio.Queue[WatchEvent | BaseException | None] = asyncio.Queue(queue_size)

    @property
    def synced(self) -> bool:
        """Every kind has been listed once (or skipped)."""
        return all(k.synced or k.skipped for k in self.kinds)

    @property
    def backlog(self) -> int:
        """Events received and not yet taken."""
        return self._queue.qsize()

    async def _pump(self, kw: KindWatcher, after: KindWatcher | None) -> None:
        if after is not None:
            await after.tried.wait()
        try:
            async for ev in kw.stream(self.once):
                await self._queue.put(ev)
        except asyncio.CancelledError:
            raise
        except BaseException as e:  # a bug: hand it to the consumer
            await self._queue.put(e)
        await self._queue.put(None)

    async def events(self) -> AsyncGenerator[WatchEvent, None]:
        """Events until every kind has stopped (skipped kinds, or all after their list with `once`);
        use with contextlib.aclosing."""
        tasks = [
            asyncio.create_task(self._pump(kw, self.kinds[i - 1] if i else None), name=f"watch {kw.name}")
            for i, kw in enumerate(self.kinds)
        ]
        running = len(tasks)
        # the kinds being listed, for consumers to decide nothing until each list's end; made first, sent
        # with the first event (no record is started for a server that never answers)
        begin: WatchEvent | None = self.stamp(
            "BOOKMARK", begin_marker([(k.kind.group, k.kind.kind) for k in self.kinds])
        )
        try:
            while running:
                item = await self._queue.get()
                if item is None:
                    running -= 1
                elif isinstance(item, BaseException):
                    raise item
                else:
                    if begin is not None:
                        yield begin
                        begin = None
                    yield item
        finally:
            for t in tasks:
                t.cancel()
            for t in tasks:
                with contextlib.suppress(asyncio.CancelledError):
                    await t
