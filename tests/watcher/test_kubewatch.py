"""The list/watch loop, with the real kubernetes-asyncio client talking HTTP to the fake API server."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import random
from datetime import UTC, datetime
from pathlib import Path

import msgspec
import pytest

from berth.adapters.kube.client import BY_PLURAL, KINDS, KubeClient, Timeouts, select_kinds
from berth.adapters.kube.watch import Backoff, GaveUp, KindWatcher, Watcher, WatchOptions
from berth.core.api.kinds import KINDS as READ
from berth.core.api.kinds import kind_key
from berth.core.api.watch import ListMarker, WatchEvent, encode_event, event_key, parse_event
from berth.core.errors import ConfigError
from tests.fakeapi import FakeAPI, kube_json
from tests.servers import free_port
from tests.watcher.conftest import FAST, Fixed, Sleeps, buffer, node, obj, pod, summary, take

PODS = BY_PLURAL["pods"]
T0 = datetime(2026, 11, 1, 10, 0, tzinfo=UTC)


def watch(
    client: KubeClient,
    plural: str = "pods",
    sleeps: Sleeps | None = None,
    rand: Fixed | None = None,
    timeouts: Timeouts = FAST,
    **opts: object,
) -> tuple[Watcher, KindWatcher]:
    """One kind, its loop running in a task (a KindWatcher's stream only moves while it is read)."""
    w = Watcher(
        client,
        [BY_PLURAL[plural]],
        clock=lambda: T0,
        sleep=sleeps or Sleeps(),
        rand=rand or Fixed(),
        options=WatchOptions(timeouts=timeouts, **opts),  # type: ignore[arg-type]
    )
    return w, w.kinds[0]


def test_the_watcher_lists_the_kind_table_in_order_pods_last() -> None:
    assert [(k.group, k.kind) for k in KINDS] == list(READ)
    assert [k.plural for k in select_kinds(["Pod", "nodes", " capacitybuffers"])] == [
        "nodes",
        "capacitybuffers",
        "pods",
    ]
    assert KINDS[-1].plural == "pods"  # listed last
    with pytest.raises(ConfigError, match="unknown kind 'poods'"):
        select_kinds(["poods"])


@pytest.mark.asyncio
async def test_list_then_watch_in_order(api: FakeAPI, client: KubeClient) -> None:
    api.add(pod("a"))
    api.add(pod("b", namespace="web"))
    w, kw = watch(client)
    async with contextlib.aclosing(w.events()) as events:
        first = await take(events, 2)
        assert summary(first) == [("ADDED", "Pod", "db/a"), ("ADDED", "Pod", "web/b")]
        # list items come without apiVersion and kind: they are filled in, first
        assert list(obj(first[0]))[:2] == ["apiVersion", "kind"]
        assert obj(first[0])["apiVersion"] == "v1"
        assert [ev.position for ev in first] == [2, 3] and first[0].ts == T0  # 1: the first lists' BOOKMARK
        list_rv = kw.resource_version
        await api.wait_for(lambda: api.open_watches("pods") == 1)
        api.modify(pod("a", node="n1"))
        api.add(pod("c"))
        api.delete(pod("b", namespace="web"))
        later = await take(events, 3)
    assert summary(later) == [("MODIFIED", "Pod", "db/a"), ("ADDED", "Pod", "db/c"), ("DELETED", "Pod", "web/b")]
    assert obj(later[0])["spec"]["nodeName"] == "n1"
    assert [ev.position for ev in later] == [5, 6, 7]  # after the BOOKMARKs that begin and end the list
    req = api.watches("pods")[0]
    assert req.query["resourceVersion"] == list_rv
    assert req.query["allowWatchBookmarks"] == "true"
    assert req.query["timeoutSeconds"] == str(FAST.watch)  # Fixed(0): no spread
    assert req.headers["Authorization"] == "Bearer fake-token"
    assert api.lists("pods")[0].query["limit"] == "500"
    assert kw.known == {"db/a": obj(later[0])["metadata"]["resourceVersion"], "db/c": kw.known["db/c"]}


@pytest.mark.asyncio
async def test_the_api_servers_bytes_are_published_as_they_came(api: FakeAPI, client: KubeClient) -> None:
    """Listed or watched, an object goes out in the bytes the API server sent (Go's escapes kept, no key
    moved); a list item gets only the apiVersion and kind it lacks, in front."""
    a = pod("a")
    a["metadata"]["annotations"] = {"note": "<b> & é"}
    stored = api.add(a)
    w, _kw = watch(client)
    async with contextlib.aclosing(w.events()) as events:
        listed = (await take(events, 1))[0]
        await api.wait_for(lambda: api.open_watches("pods") == 1)
        changed = api.modify({**stored, "spec": {**stored["spec"], "nodeName": "n1"}})
        watched = (await take(events, 1))[0]
    for ev, sent in ((listed, stored), (watched, changed)):
        assert encode_event(ev) == b'{"ts":"2026-11-01T10:00:00Z","type":"%s","object":%s}' % (
            ev.type.encode(),
            kube_json(sent),
        )
        assert b"\\u003cb\\u003e \\u0026 \xc3\xa9" in encode_event(ev)
        assert event_key(ev) == b"Pod/db/a"
        as_dict = WatchEvent(ev.type, msgspec.json.decode(ev.object), ev.ts, ev.position)  # type: ignore[arg-type]
        assert event_key(as_dict) == event_key(ev) and as_dict.decoded().model == ev.decoded().model


class OnePage:
    """The client seam: a list of one page holding these items, as bytes."""

    host = "fake"

    def __init__(self, items: list[bytes]) -> None:
        meta = b'{"resourceVersion":"9"}'
        self.body = (
            b'{"kind":"NodeList","apiVersion":"v1","metadata":' + meta + b',"items":[' + b",".join(items) + b"]}"
        )

    async def request_bytes(self, method: str, path: str, query: object = ()) -> bytes:
        return self.body


@pytest.mark.parametrize(
    ("item", "want"),
    [
        (b'{"metadata":{"name":"a"}}', b'{"apiVersion":"v1","kind":"Node","metadata":{"name":"a"}}'),
        (b'{"kind":"Node","metadata":{"name":"a"}}', b'{"apiVersion":"v1","kind":"Node","metadata":{"name":"a"}}'),
        (b'{"metadata":{"name":"a"},"apiVersion":"v1"}', b'{"kind":"Node","metadata":{"name":"a"},"apiVersion":"v1"}'),
        (
            b'{"apiVersion":"v1","kind":"Node","metadata":{"name":"a"}}',
            b'{"apiVersion":"v1","kind":"Node","metadata":{"name":"a"}}',
        ),
        (b"{}", b'{"apiVersion":"v1","kind":"Node"}'),
        (b"{" + b" " * 20 + b"}", b'{"apiVersion":"v1","kind":"Node"' + b" " * 20 + b"}"),
        (b'{ "metadata" : {"name":"a"} }', b'{"apiVersion":"v1","kind":"Node", "metadata" : {"name":"a"} }'),
    ],
)
@pytest.mark.asyncio
async def test_a_list_item_gets_the_apiversion_and_kind_it_lacks_and_nothing_else(item: bytes, want: bytes) -> None:
    w = Watcher(OnePage([item]), [BY_PLURAL["nodes"]], once=True, clock=lambda: T0)  # type: ignore[arg-type]
    async with contextlib.aclosing(w.events()) as events:
        got = [ev async for ev in events if ev.type != "BOOKMARK"]
    assert [encode_event(ev) for ev in got] == [b'{"ts":"2026-11-01T10:00:00Z","type":"ADDED","object":' + want + b"}"]
    keys = [k for k, _ in json.loads(want, object_pairs_hook=lambda pairs: pairs)]
    assert sorted(keys) == sorted(set(keys))  # no key twice
    assert event_key(got[0]) == (b"Node//a" if b'"name"' in item else b"Node//")


@pytest.mark.asyncio
async def test_pagination(api: FakeAPI, client: KubeClient) -> None:
    for i in range(7):
        api.add(pod(f"p{i}"))
    w, kw = watch(client, page_size=3)
    async with contextlib.aclosing(w.events()) as events:
        got = await take(events, 7)
    assert [s[2] for s in summary(got)] == [f"db/p{i}" for i in range(7)]
    pages = api.lists("pods")
    assert [p.query.get("limit") for p in pages] == ["3", "3", "3"]
    assert "continue" not in pages[0].query and pages[1].query["continue"] and pages[2].query["continue"]
    assert kw.synced


@pytest.mark.asyncio
async def test_an_expired_continue_token_lists_again_from_the_start(api: FakeAPI, client: KubeClient) -> None:
    for i in range(4):
        api.add(pod(f"p{i}"))
    w, _kw = watch(client, page_size=2)
    async with contextlib.aclosing(w.events()) as events:
        got = await take(events, 2)
        api.expire_continue()  # (the first page is in; the token for the second is gone)
        api.delete(pod("p0"))
        got += await take(events, 3)
    assert summary(got) == [
        ("ADDED", "Pod", "db/p0"),
        ("ADDED", "Pod", "db/p1"),
        ("ADDED", "Pod", "db/p2"),
        ("ADDED", "Pod", "db/p3"),
        ("DELETED", "Pod", "db/p0"),  # missing from the list that completed
    ]
    assert len(api.lists("pods")) == 4  # page 1, the expired page 2, then pages 1 and 2 again


@pytest.mark.asyncio
async def test_410_relists_and_diffs(api: FakeAPI, client: KubeClient) -> None:
    for name in ("a", "b", "c"):
        api.add(pod(name))
    sleeps = Sleeps()
    w, kw = watch(client, sleeps=sleeps)
    async with contextlib.aclosing(w.events()) as events:
        await take(events, 3)
        await api.wait_for(lambda: api.open_watches("pods") == 1)
        with api.unwatched():  # changes the watch never sees...
            api.modify(pod("b", node="n2"))
            api.delete(pod("c"))
            api.add(pod("d"))
        api.expire("pods")  # ...and then its resourceVersion is compacted away: ERROR 410
        got = await take(events, 3)
        tombstone_rv = str(api.rv)
    assert summary(got) == [("MODIFIED", "Pod", "db/b"), ("ADDED", "Pod", "db/d"), ("DELETED", "Pod", "db/c")]
    assert obj(got[0])["spec"]["nodeName"] == "n2"
    # a vanished object's DELETED carries what is known and the relist's resourceVersion (newer than any it had)
    assert obj(got[2]) == {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "c", "namespace": "db", "resourceVersion": tombstone_rv},
    }
    assert len(api.lists("pods")) == 2
    assert sleeps.delays == []  # a relist needs no backoff
    assert set(kw.known) == {"db/a", "db/b", "db/d"}


@pytest.mark.asyncio
async def test_410_on_reconnect_relists(api: FakeAPI, client: KubeClient) -> None:
    api.add(pod("a"))
    w, _kw = watch(client)
    async with contextlib.aclosing(w.events()) as events:
        await take(events, 1)
        await api.wait_for(lambda: api.open_watches("pods") == 1)
        with api.unwatched():
            api.delete(pod("a"))
        api.expire("pods")
        api.add(pod("b"))
        got = await take(events, 2)
    assert summary(got) == [("ADDED", "Pod", "db/b"), ("DELETED", "Pod", "db/a")]


@pytest.mark.asyncio
async def test_bookmarks_move_the_resume_point(api: FakeAPI, client: KubeClient) -> None:
    api.add(pod("a"))
    sleeps = Sleeps()
    w, kw = watch(client, sleeps=sleeps)
    async with contextlib.aclosing(w.events()) as events:
        await take(events, 1)
        await api.wait_for(lambda: api.open_watches("pods") == 1)
        for i in range(3):
            api.add(node(f"n{i}"))  # the resourceVersion moves on elsewhere
        rv = api.bookmark("pods")
        await api.wait_for(lambda: kw.resource_version == str(rv))
        api.drop("pods")  # mid-event: the half event is never emitted
        await api.wait_for(lambda: len(api.watches("pods")) == 2)
        api.add(pod("b"))
        got = await take(events, 1)
    assert summary(got) == [("ADDED", "Pod", "db/b")]  # no BOOKMARK, no half event, nothing twice
    assert api.watches("pods")[1].query["resourceVersion"] == str(rv)
    assert len(api.lists("pods")) == 1  # resumed, not relisted
    assert len(sleeps.delays) == 1  # the drop cost one backoff


@pytest.mark.asyncio
async def test_dropped_connections_reconnect_with_growing_backoff(api: FakeAPI, client: KubeClient) -> None:
    sleeps = Sleeps()
    w, _kw = watch(client, sleeps=sleeps, rand=Fixed(1.0), backoff=Backoff(initial=1.0, maximum=5.0))
    api.fail("GET", "pods", 500, times=4, watch=True)
    async with contextlib.aclosing(w.events()) as events:
        api.add(pod("a"))
        await take(events, 1)
        await api.wait_for(lambda: api.open_watches("pods") == 1)
        assert sleeps.delays == [1.0, 2.0, 4.0, 5.0]  # 1 × 2^n up to the maximum (jitter factor 1 here)
        api.modify(pod("a", node="n1"))
        got = await take(events, 1)
        api.drop("pods")
        await api.wait_for(lambda: api.open_watches("pods") == 1 and len(api.watches("pods")) == 6)
        api.delete(pod("a", node="n1"))
        got += await take(events, 1)
    assert summary(got) == [("MODIFIED", "Pod", "db/a"), ("DELETED", "Pod", "db/a")]
    assert sleeps.delays[4:] == [1.0]  # an event arrived in between: the backoff started over
    resumes = [w.query.get("resourceVersion") for w in api.watches("pods")]
    assert len(set(resumes[:5])) == 1 and resumes[5] == obj(got[0])["metadata"]["resourceVersion"]


def test_jitter_stays_within_half_to_full_delay() -> None:
    b = Backoff(initial=0.5, maximum=30.0)
    rand = random.Random(7)
    for attempt in range(12):
        full = min(30.0, 0.5 * 2**attempt)
        assert full / 2 <= b.delay(attempt, rand) <= full


@pytest.mark.asyncio
async def test_a_watch_that_ends_at_its_timeout_is_reopened_at_once(api: FakeAPI, tmp_path: Path) -> None:
    timeouts = Timeouts(connect=2.0, request=5.0, watch=1, watch_grace=5.0)
    client = await KubeClient.connect(str(api.write_kubeconfig(tmp_path / "kc")), timeouts=timeouts)
    try:
        sleeps = Sleeps()
        w, kw = watch(client, sleeps=sleeps, timeouts=timeouts)
        async with contextlib.aclosing(w.events()) as events:
            api.add(pod("a"))
            await take(events, 1)
            await api.wait_for(lambda: api.open_watches("pods") == 1)
            api.add(pod("b"))
            await take(events, 1)
            await api.wait_for(lambda: len(api.watches("pods")) == 2, timeout=4)  # the server ended the first
            api.add(pod("c"))
            got = await take(events, 1)
        assert summary(got) == [("ADDED", "Pod", "db/c")]
        assert sleeps.delays == []
        assert api.watches("pods")[1].query["resourceVersion"] == kw.known["db/b"]
    finally:
        await client.close()


@pytest.mark.asyncio
async def test_client_side_timeouts_end_hung_requests(
    api: FakeAPI, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    timeouts = Timeouts(connect=1.0, request=0.3, watch=1, watch_grace=0.3)
    client = await KubeClient.connect(str(api.write_kubeconfig(tmp_path / "kc")), timeouts=timeouts)
    try:
        sleeps = Sleeps()
        w, _ = watch(client, sleeps=sleeps, timeouts=timeouts)
        api.hang("GET", "pods", watch=False)  # a list that never answers
        api.hang("GET", "pods", watch=True)  # a watch that outlives its timeoutSeconds
        async with contextlib.aclosing(w.events()) as events:
            api.add(pod("a"))
            await take(events, 1)
            await api.wait_for(lambda: len(api.watches("pods")) == 2, timeout=4)
            api.add(pod("b"))
            got = await take(events, 1)
        assert summary(got) == [("ADDED", "Pod", "db/b")]
        assert len(api.lists("pods")) == 2 and len(sleeps.delays) == 2
        retries = [r.getMessage().split(";")[0] for r in caplog.records if r.name == "berth.watcher"]
        assert retries == ["pods list: TimeoutError", "pods watch: TimeoutError"]
    finally:
        await client.close()


@pytest.mark.asyncio
async def test_uninstalled_crds_are_skipped_with_one_warning(
    api: FakeAPI, client: KubeClient, caplog: pytest.LogCaptureFixture
) -> None:
    api.uninstall("nodemetrics")
    api.uninstall("capacitybuffers")
    api.add(node("n1"))
    w = Watcher(client, select_kinds(["nodes", "nodemetrics", "capacitybuffers"]), sleep=Sleeps(), rand=Fixed())
    with caplog.at_level(logging.WARNING, logger="berth.watcher"):
        async with contextlib.aclosing(w.events()) as events:
            first = await take(events, 1)
            await api.wait_for(lambda: w.synced)
            api.add(node("n2"))
            first += await take(events, 1)
    assert summary(first) == [("ADDED", "Node", "n1"), ("ADDED", "Node", "n2")]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == [
        "skipping NodeMetric (slo.koordinator.sh/v1alpha1): its CRD is not installed",
        "skipping CapacityBuffer (autoscaling.x-k8s.io/v1beta1, autoscaling.x-k8s.io/v1alpha1): its CRD is not installed",
    ]
    assert [k.skipped for k in w.kinds] == [False, True, True]
    assert not api.watches("nodemetrics") and len(api.lists("capacitybuffers")) == 2


@pytest.mark.asyncio
async def test_an_older_served_version_is_used(api: FakeAPI, client: KubeClient) -> None:
    api.uninstall("capacitybuffers")
    api.install("autoscaling.x-k8s.io", "v1alpha1", "capacitybuffers", "CapacityBuffer", True, custom=True)
    api.add(buffer("b1", version="v1alpha1"))
    w, kw = watch(client, "capacitybuffers")
    async with contextlib.aclosing(w.events()) as events:
        got = await take(events, 1)
    assert obj(got[0])["apiVersion"] == "autoscaling.x-k8s.io/v1alpha1" and kw.version == "v1alpha1"


@pytest.mark.asyncio
async def test_namespace_restriction(api: FakeAPI, client: KubeClient) -> None:
    api.add(pod("a", namespace="db"))
    api.add(pod("b", namespace="web"))
    api.add(node("n1"))
    w = Watcher(client, select_kinds(["pods", "nodes"]), namespace="web", sleep=Sleeps(), rand=Fixed())
    async with contextlib.aclosing(w.events()) as events:
        got = await take(events, 2)
        await api.wait_for(lambda: api.open_watches("pods") == 1)
        api.add(pod("c", namespace="db"))
        api.add(pod("d", namespace="web"))
        got += await take(events, 1)
    assert sorted(summary(got)) == [("ADDED", "Node", "n1"), ("ADDED", "Pod", "web/b"), ("ADDED", "Pod", "web/d")]
    assert api.lists("pods")[0].path == "/api/v1/namespaces/web/pods"
    assert api.lists("nodes")[0].path == "/api/v1/nodes"  # cluster-scoped kinds are watched whole


@pytest.mark.asyncio
async def test_every_kind_at_once(api: FakeAPI, client: KubeClient) -> None:
    api.add(pod("a"))
    api.add(node("n1"))
    api.add(buffer("b1"))
    api.add({"apiVersion": "slo.koordinator.sh/v1alpha1", "kind": "NodeMetric", "metadata": {"name": "n1"}})
    api.add({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "local"}})
    w = Watcher(client, sleep=Sleeps(), rand=Fixed(), clock=lambda: T0)
    async with contextlib.aclosing(w.events()) as events:
        got = await take(events, 1 + len(KINDS) + 5, markers=True)
        await api.wait_for(lambda: w.synced and all(api.open_watches(k.plural) == 1 for k in KINDS))
    # the first lists one kind after another, what pods need first and pods last
    data = [ev for ev in got if ev.type != "BOOKMARK"]
    assert summary(data) == [
        ("ADDED", "StorageClass", "local"),
        ("ADDED", "Node", "n1"),
        ("ADDED", "NodeMetric", "n1"),
        ("ADDED", "CapacityBuffer", "db/b1"),
        ("ADDED", "Pod", "db/a"),
    ]
    assert [ev.position for ev in got] == list(range(1, len(got) + 1))
    for ev in data:  # every object is one berth's core reads
        assert kind_key(obj(ev)) in READ
    # the BOOKMARKs that mark the first lists: the kinds, then each kind's end after its list
    markers = [parse_event(encode_event(ev)).marker for ev in got if ev.type == "BOOKMARK"]
    assert markers[0] == ListMarker(begin=tuple((k.group, k.kind) for k in KINDS))
    assert [m.end for m in markers[1:] if m is not None] == [(k.group, k.kind) for k in KINDS]
    ends = {(obj(ev)["apiVersion"], obj(ev)["kind"]): i for i, ev in enumerate(got[1:], 1) if ev.type == "BOOKMARK"}
    for ev in data:
        assert ends[(obj(ev)["apiVersion"], obj(ev)["kind"])] > got.index(ev)


@pytest.mark.asyncio
async def test_a_failing_first_list_holds_the_next_kinds_up_once(api: FakeAPI, client: KubeClient) -> None:
    api.add(node("n1"))
    api.add(pod("a"))
    api.fail("GET", "nodes", 403, watch=False)
    released = asyncio.Event()

    async def gate(_: float) -> None:
        await released.wait()

    w = Watcher(client, select_kinds(["nodes", "pods"]), sleep=gate, rand=Fixed())
    async with contextlib.aclosing(w.events()) as events:
        got = await take(events, 1)  # nodes failed once: pods went ahead
        assert not w.synced
        released.set()
        got += await take(events, 1)
        await api.wait_for(lambda: w.synced)
    assert summary(got) == [("ADDED", "Pod", "db/a"), ("ADDED", "Node", "n1")]


@pytest.mark.asyncio
async def test_a_410_status_on_the_watch_request_relists(api: FakeAPI, client: KubeClient) -> None:
    api.add(pod("a"))
    sleeps = Sleeps()
    w, _ = watch(client, sleeps=sleeps)
    api.fail("GET", "pods", 410, watch=True)  # the HTTP status itself, not an ERROR event
    async with contextlib.aclosing(w.events()) as events:
        await take(events, 1)
        await api.wait_for(lambda: api.open_watches("pods") == 1)
    assert len(api.lists("pods")) == 2 and sleeps.delays == []


@pytest.mark.asyncio
async def test_an_unreachable_server_is_retried_by_one_kind_and_once_gives_up(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "kc"
    server = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    path.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": server}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "c",
            }
        )
    )
    client = await KubeClient.connect(str(path))
    sleeps = Sleeps()
    w = Watcher(client, select_kinds(["nodes", "pods"]), sleep=sleeps, rand=Fixed(), once=True)
    try:
        with caplog.at_level(logging.WARNING, logger="berth.watcher"), pytest.raises(GaveUp) as gave_up:
            async with contextlib.aclosing(w.events()) as events:
                async for _ in events:
                    pass
    finally:
        await client.close()
    assert str(gave_up.value).startswith(f"Kubernetes API {server}: nodes list failed 5 times in ")
    assert "the last time with: Cannot connect to host" in str(gave_up.value)
    assert sleeps.delays == [0.25, 0.5, 1.0, 2.0]  # the backoff, with jitter factor 0.5 here
    retries = [r.getMessage() for r in caplog.records]
    assert [m.split(":")[0] for m in retries] == ["nodes list"] * 4  # one line per attempt, one kind
    assert [m.rsplit("(", 1)[1] for m in retries] == [f"attempt {n})" for n in (1, 2, 3, 4)]
    assert w.kinds[1].lists == 0  # pods waited behind nodes: never listed
