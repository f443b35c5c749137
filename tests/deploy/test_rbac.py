"""RBAC derived from the code: every overlay grants each ServiceAccount exactly the API verbs its
service uses in the mode the overlay runs it in, no more and no less.

What the code does is found three ways:
- the watcher's reads: each kind of berth.adapters.kube.client.KINDS (or of the watcher's --kinds) is run
  through berth.adapters.kube.watch.KindWatcher against a recording client, up to its first watch;
- writes: every function in shared/ or services/ that takes a KubeClient first is called with a
  recording client (berth.adapters.kube.client.patch_buffer_status, bind_pod, ...);
- anything else: a scan of shared/ and services/ for kubernetes-asyncio API methods (list_node,
  create_namespaced_pod_binding, patch_namespaced_custom_object_status, ...) and raw requests made
  outside berth.adapters.kube.client, which fails until the call is routed through a KubeClient function.

Each recorded request (method, path) becomes an RBAC (group, resource, verb). Calls other than the
watcher's reads belong to a deployment mode (MODES), each mode to a service and a command-line flag.
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import importlib
import inspect
import json
import re
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import kubernetes_asyncio
import pytest

from berth.adapters.kube.client import KINDS, Kind, select_kinds
from berth.adapters.kube.watch import KindWatcher
from tests.deploy.helpers import ROOT, berth_workloads, overlays, rel, rendered, workloads

Rule = tuple[str, str, str]  # (API group, resource[/subresource], verb)

# Who may make each API call besides the watcher's list and watch: function -> mode.
MODES: dict[str, str] = {
    "berth.adapters.kube.client.patch_buffer_status": "write-status",
    "berth.adapters.kube.client.bind_pod": "binder",
    "berth.adapters.kube.client.prebind_pv": "binder",
    "berth.adapters.kube.client.select_node": "binder",
    "berth.adapters.kube.client.mark_preempted": "binder",
    "berth.adapters.kube.client.delete_pod": "binder",
    "berth.adapters.kube.client.nominate_node": "binder",
}
# Each mode: the service that makes the calls, and the argument that turns the mode on.
MODE_SERVICE = {"read": "watcher", "write-status": "buffer-controller", "binder": "scorer"}
MODE_FLAG = {"write-status": "--write-status", "binder": "--bind"}

SOURCES = [ROOT / "shared", ROOT / "services"]
KUBE_MODULES = {"berth.adapters.kube.client", "berth.adapters.kube.watch"}  # where raw API requests may be made
HTTP_VERBS = {"GET": "get", "POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}


# ---- requests -> rules ------------------------------------------------------------------------------------


def rule_of(method: str, path: str, query: Iterable[tuple[str, str]] = ()) -> Rule:
    """The RBAC rule an API request needs, from its method and URL path."""
    parts = [p for p in path.split("?")[0].split("/") if p]
    if parts[:1] == ["api"]:
        group, rest = "", parts[2:]
    elif parts[:1] == ["apis"]:
        group, rest = parts[1], parts[3:]
    else:
        raise AssertionError(f"not a resource path: {path}")
    if rest[:1] == ["namespaces"] and len(rest) > 2:
        rest = rest[2:]
    resource, name, sub = rest[0], rest[1] if len(rest) > 1 else None, rest[2] if len(rest) > 2 else None
    watching = dict(query).get("watch") in ("1", "true", "True")
    if method == "GET":
        verb = "watch" if watching else "get" if name else "list"
    elif method == "DELETE" and name is None:
        verb = "deletecollection"
    else:
        verb = HTTP_VERBS[method]
    return (group, f"{resource}/{sub}" if sub else resource, verb)


class Stop(Exception):
    """Ends a recorded run (not one of the errors the watcher retries)."""


@dataclass
class RecordingClient:
    """Stands in for berth.adapters.kube.client.KubeClient: records requests, answers with empty lists."""

    requests: list[tuple[str, str, list[tuple[str, str]]]] = field(default_factory=list)

    async def request(
        self, method: str, path: str, query: Iterable[tuple[str, str]] = (), body: Any = None, content_type: Any = None
    ) -> dict[str, Any]:
        self.requests.append((method, path, list(query)))
        return {"metadata": {"resourceVersion": "7"}, "items": []} if method == "GET" else {}

    async def request_bytes(self, method: str, path: str, query: Iterable[tuple[str, str]] = ()) -> bytes:
        return json.dumps(await self.request(method, path, query)).encode()

    @contextlib.asynccontextmanager
    async def watch(self, path: str, query: Iterable[tuple[str, str]], seconds: int) -> AsyncIterator[Any]:
        self.requests.append(("GET", path, list(query)))
        raise Stop
        yield  # pragma: no cover

    def rules(self) -> set[Rule]:
        return {rule_of(m, p, q) for m, p, q in self.requests}


async def _watch_once(kind: Kind) -> set[Rule]:
    client = RecordingClient()
    watcher = KindWatcher(client, kind)  # type: ignore[arg-type]  # a recording stand-in
    with contextlib.suppress(Stop):
        async for _ in watcher.stream():
            pass
    assert client.requests, f"{kind.kind}: the watcher made no request"
    return client.rules()


@cache
def read_rules(kinds: tuple[Kind, ...]) -> frozenset[Rule]:
    out: set[Rule] = set()
    for kind in kinds:
        out |= asyncio.run(_watch_once(kind))
    return frozenset(out)


# ---- writes: functions taking a KubeClient -----------------------------------------------------------------


def _modules() -> Iterable[tuple[str, ast.Module]]:
    for base in SOURCES:
        for f in sorted(base.rglob("*.py")):
            module = ".".join(f.relative_to(base).with_suffix("").parts).removesuffix(".__init__")
            yield module, ast.parse(f.read_text(), str(f))


def _argument(name: str, annotation: str) -> Any:
    text = annotation.replace(" | None", "")
    if text == "str":
        return name
    if text == "int":
        return 1
    if text.startswith(("Mapping[", "dict[")):
        return {}
    if text.startswith(("Sequence[", "list[", "Iterable[")):
        return []
    raise AssertionError(f"teach test_rbac to make a {annotation} for {name!r}")


@cache
def client_functions() -> dict[str, frozenset[Rule]]:
    """Every module-level function whose first parameter is a KubeClient, with the rules its requests need."""
    out: dict[str, frozenset[Rule]] = {}
    for module, tree in _modules():
        for node in tree.body:
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) or not node.args.args:
                continue
            first = node.args.args[0].annotation
            if not (isinstance(first, ast.Name) and first.id == "KubeClient"):
                continue
            fn = getattr(importlib.import_module(module), node.name)
            params = list(inspect.signature(fn).parameters.values())[1:]
            kwargs = {
                p.name: _argument(p.name, str(p.annotation)) for p in params if p.default is inspect.Parameter.empty
            }
            client = RecordingClient()
            result = fn(client, **kwargs)
            if inspect.isawaitable(result):
                asyncio.run(_await(result))
            assert client.requests, f"{module}.{node.name} made no request"
            out[f"{module}.{node.name}"] = frozenset(client.rules())
    return out


async def _await(result: Any) -> None:
    with contextlib.suppress(Stop):
        await result


# ---- anything else: kubernetes-asyncio API methods and raw requests ------------------------------------------


@cache
def generated_api_methods() -> dict[str, tuple[str, str]]:
    """kubernetes-asyncio's API methods: name -> (path template, HTTP method), read from its source."""
    api = Path(kubernetes_asyncio.__file__).parent / "client" / "api"
    out = {}
    pattern = re.compile(r"def (\w+)_with_http_info\(self.*?call_api\(\s*'([^']+)', '(\w+)'", re.S)
    for f in api.glob("*_api.py"):
        for m in pattern.finditer(f.read_text()):
            out[m.group(1)] = (m.group(2), m.group(3))
    assert "create_namespaced_pod_binding" in out and "list_node" in out
    return out


def _literal(node: ast.expr, constants: dict[str, Any]) -> Any:
    with contextlib.suppress(ValueError):
        return ast.literal_eval(node)
    if isinstance(node, ast.Name) and node.id in constants:
        return constants[node.id]
    return None


def _constants(tree: ast.Module) -> dict[str, Any]:
    out = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            with contextlib.suppress(ValueError):
                out[node.targets[0].id] = ast.literal_eval(node.value)
    return out


@dataclass(frozen=True)
class CallSite:
    where: str  # module.function
    line: int
    what: str
    rule: Rule | None  # None: it cannot be derived


@cache
def other_call_sites() -> tuple[CallSite, ...]:
    """API calls that are neither the watcher's reads nor KubeClient functions."""
    methods = generated_api_methods()
    sites = []
    for module, tree in _modules():
        constants = _constants(tree)
        functions = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
        owner = {id(c): f.name for f in functions for c in ast.walk(f)}
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            attr = node.func.attr
            where = f"{module}.{owner.get(id(node), '<module>')}"
            if attr in methods:
                template, http = methods[attr]
                kwargs = {k.arg: _literal(k.value, constants) for k in node.keywords if k.arg}
                names = re.findall(r"\{(\w+)\}", template)
                for i, arg in enumerate(node.args[: len(names)]):
                    kwargs.setdefault(names[i], _literal(arg, constants))
                path = template
                rule = None
                try:
                    for placeholder in ("group", "plural", "version"):
                        if "{" + placeholder + "}" in template:
                            value = kwargs.get(placeholder)
                            assert isinstance(value, str)
                            path = path.replace("{" + placeholder + "}", value)
                    path = re.sub(r"\{namespace\}", "ns", path)
                    path = re.sub(r"\{\w+\}", "x", path)
                    query = [("watch", "1")] if kwargs.get("watch") else []
                    rule = rule_of(http, path, query)
                except AssertionError:
                    pass
                sites.append(CallSite(where, node.lineno, attr, rule))
            elif module not in KUBE_MODULES and attr in ("call_api", "request", "watch"):
                first = node.args[0] if node.args else None
                if attr == "call_api" or (isinstance(first, ast.Constant) and first.value in HTTP_VERBS):
                    sites.append(CallSite(where, node.lineno, attr, None))
    return tuple(sites)


# ---- the rules in the manifests ------------------------------------------------------------------------------


def granted(resources: tuple[dict[str, Any], ...]) -> dict[str, set[Rule]]:
    """ServiceAccount name -> every (group, resource, verb) its bindings grant."""
    roles = {
        (r["kind"], r["metadata"].get("namespace"), r["metadata"]["name"]): r
        for r in resources
        if r["kind"] in ("Role", "ClusterRole")
    }
    out: dict[str, set[Rule]] = {}
    for b in resources:
        if b["kind"] not in ("RoleBinding", "ClusterRoleBinding"):
            continue
        ref = b["roleRef"]
        ns = b["metadata"].get("namespace") if ref["kind"] == "Role" else None
        role = roles.get((ref["kind"], ns, ref["name"]))
        assert role is not None, (
            f"{b['kind']} {b['metadata']['name']}: {ref['kind']} {ref['name']} is not in the manifests"
        )
        rules: set[Rule] = set()
        for rule in role.get("rules", []):
            where = f"{role['kind']} {role['metadata']['name']}"
            assert "nonResourceURLs" not in rule and "resourceNames" not in rule, where
            for value in (*rule["apiGroups"], *rule["resources"], *rule["verbs"]):
                assert "*" not in value, f"{where}: no wildcards"
            rules |= {(g, res, v) for g in rule["apiGroups"] for res in rule["resources"] for v in rule["verbs"]}
        for s in b["subjects"]:
            assert s["kind"] == "ServiceAccount", f"{b['metadata']['name']}: only berth's ServiceAccounts"
            assert s["namespace"] == "berth"
            out.setdefault(s["name"], set()).update(rules)
    return out


def expected(resources: tuple[dict[str, Any], ...]) -> dict[str, set[Rule]]:
    """ServiceAccount name -> what its service needs in the modes this overlay runs it in."""
    args = {c["args"][0]: c["args"] for _, _, c in berth_workloads(resources)}
    account = {c["args"][0]: pod["serviceAccountName"] for _, pod, c in berth_workloads(resources)}
    out: dict[str, set[Rule]] = {sa: set() for sa in account.values()}
    if "watcher" in args:
        watcher_args = args["watcher"]
        kinds = KINDS
        if "--kinds" in watcher_args:
            kinds = select_kinds(watcher_args[watcher_args.index("--kinds") + 1].split(","))
        out[account["watcher"]] |= read_rules(tuple(kinds))
    calls = [(f, rules) for f, rules in client_functions().items()]
    calls += [(s.where, frozenset([s.rule] if s.rule else [])) for s in other_call_sites()]
    for where, rules in calls:
        mode = MODES[where]
        service = MODE_SERVICE[mode]
        if service in args and (mode == "read" or MODE_FLAG[mode] in args[service]):
            out[account[service]] |= rules
    return out


# ---- tests ----------------------------------------------------------------------------------------------------


def test_the_watcher_lists_and_watches_every_kind_and_nothing_else() -> None:
    rules = read_rules(KINDS)
    assert {v for _, _, v in rules} == {"list", "watch"}
    assert {(g, r) for g, r, _ in rules} == {(k.group, k.plural) for k in KINDS}
    assert ("", "nodes", "watch") in rules and ("autoscaling.x-k8s.io", "capacitybuffers", "list") in rules


def test_every_api_call_has_a_mode() -> None:
    functions = client_functions()
    assert "berth.adapters.kube.client.patch_buffer_status" in functions  # the scan sees the writers
    unmapped = sorted(set(functions) - MODES.keys())
    assert not unmapped, f"API calls with no deployment mode: {unmapped}; add them to MODES and to that mode's RBAC"
    stale = sorted(MODES.keys() - set(functions) - {s.where for s in other_call_sites()})
    assert not stale, f"MODES names functions that no longer call the API: {stale}"
    for site in other_call_sites():
        assert site.rule is not None, (
            f"{site.where} (line {site.line}) calls the API through {site.what}() in a way this test cannot "
            "read: make the request in a berth.adapters.kube.client function that takes the KubeClient first"
        )
        assert site.where in MODES, f"{site.where} calls {site.what}(): add it to MODES and to that mode's RBAC"


def test_rule_of() -> None:
    assert rule_of("GET", "/api/v1/nodes") == ("", "nodes", "list")
    assert rule_of("GET", "/api/v1/pods", [("watch", "1")]) == ("", "pods", "watch")
    assert rule_of("GET", "/api/v1/namespaces/a/pods/p") == ("", "pods", "get")
    assert rule_of("POST", "/api/v1/namespaces/a/pods/p/binding") == ("", "pods/binding", "create")
    assert rule_of("PATCH", "/apis/autoscaling.x-k8s.io/v1beta1/namespaces/a/capacitybuffers/b/status") == (
        "autoscaling.x-k8s.io",
        "capacitybuffers/status",
        "patch",
    )
    assert rule_of("PUT", "/api/v1/persistentvolumes/pv") == ("", "persistentvolumes", "update")
    assert rule_of("DELETE", "/apis/apps/v1/namespaces/a/deployments") == ("apps", "deployments", "deletecollection")


@pytest.mark.parametrize("path", overlays(), ids=rel)
def test_rbac_is_exactly_what_the_code_uses(path: Path) -> None:
    resources = rendered(path)
    want = expected(resources)
    got = granted(resources)
    assert set(got) <= set(want), f"bindings for accounts no berth service uses: {sorted(set(got) - set(want))}"
    for account in sorted(want):
        have = got.get(account, set())
        missing = sorted(want[account] - have)
        extra = sorted(have - want[account])
        assert not missing and not extra, f"{account}: missing {missing}, not used {extra}"


@pytest.mark.parametrize("path", overlays(), ids=rel)
def test_only_pods_with_permissions_mount_a_token(path: Path) -> None:
    resources = rendered(path)
    got = granted(resources)
    accounts = {r["metadata"]["name"]: r for r in resources if r["kind"] == "ServiceAccount"}
    for w, pod in workloads(resources):
        sa = pod.get("serviceAccountName", "default")
        mounts = pod.get("automountServiceAccountToken", accounts.get(sa, {}).get("automountServiceAccountToken", True))
        assert mounts is bool(got.get(sa)), (
            f"{w['metadata']['name']}: token mounted {mounts}, permissions {sorted(got.get(sa, []))}"
        )
