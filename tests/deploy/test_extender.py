"""The example kube-scheduler configurations in deploy/kube-scheduler: berth's scorer as a scheduler
extender, at the address the manifests give it, with the fields kube-scheduler's v1 API knows."""

from __future__ import annotations

import re
from typing import Any

import pytest
import yaml

from tests.deploy.helpers import DEPLOY, one, rendered

EXAMPLES = DEPLOY / "kube-scheduler"
# kubescheduler.config.k8s.io/v1: KubeSchedulerConfiguration and Extender fields.
CONFIG_FIELDS = {
    "apiVersion", "kind", "parallelism", "leaderElection", "clientConnection", "enableProfiling",
    "enableContentionProfiling", "percentageOfNodesToScore", "podInitialBackoffSeconds",
    "podMaxBackoffSeconds", "profiles", "extenders", "delayCacheUntilActive",
}  # fmt: skip
EXTENDER_FIELDS = {
    "urlPrefix", "filterVerb", "preemptVerb", "prioritizeVerb", "weight", "bindVerb", "enableHTTPS",
    "tlsConfig", "httpTimeout", "nodeCacheCapable", "managedResources", "ignorable",
}  # fmt: skip
DURATION = re.compile(r"^(\d+(\.\d+)?(ns|us|ms|s|m|h))+$")


def _load(name: str) -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load((EXAMPLES / name).read_text())
    return doc


def _extender(name: str) -> dict[str, Any]:
    doc = _load(name)
    assert doc["apiVersion"] == "kubescheduler.config.k8s.io/v1"
    assert doc["kind"] == "KubeSchedulerConfiguration"
    assert set(doc) <= CONFIG_FIELDS, sorted(set(doc) - CONFIG_FIELDS)
    assert 0 < doc.get("percentageOfNodesToScore", 100) <= 100
    (ext,) = doc["extenders"]
    assert set(ext) <= EXTENDER_FIELDS, sorted(set(ext) - EXTENDER_FIELDS)
    return dict(ext)


def test_examples_are_the_two_modes() -> None:
    assert sorted(p.name for p in EXAMPLES.glob("*.yaml")) == ["extender-binder.yaml", "extender.yaml"]


@pytest.mark.parametrize("name", ["extender.yaml", "extender-binder.yaml"])
def test_extender_stanza(name: str) -> None:
    ext = _extender(name)
    assert ext["urlPrefix"] == "http://berth-scorer.berth.svc:8080/scheduler"
    assert ext["filterVerb"] == "filter" and ext["prioritizeVerb"] == "prioritize"
    assert isinstance(ext["weight"], int) and ext["weight"] > 0
    assert ext["nodeCacheCapable"] is True
    assert ext["managedResources"] == []
    assert ext["ignorable"] is True
    assert ext["enableHTTPS"] is False and "tlsConfig" not in ext
    assert DURATION.match(ext["httpTimeout"])
    assert "preemptVerb" not in ext
    assert ("bindVerb" in ext) is (name == "extender-binder.yaml")
    if "bindVerb" in ext:
        assert ext["bindVerb"] == "bind"


@pytest.mark.parametrize("overlay", ["in-cluster-kafka", "binder"])
def test_the_url_is_the_scorer_service(overlay: str) -> None:
    resources = rendered(DEPLOY / "overlays" / overlay)
    svc = one(resources, "Service", "berth-scorer")
    port = svc["spec"]["ports"][0]["port"]
    want = f"http://{svc['metadata']['name']}.{svc['metadata']['namespace']}.svc:{port}/scheduler"
    assert _extender("extender.yaml")["urlPrefix"] == want


def _served() -> set[str]:
    """The POST routes the scorer's HTTP server adds for the extender API."""
    from aiohttp import web

    from berth_scorer.extender import Routes

    app = web.Application()
    Routes(lambda: None).add_to(app)  # type: ignore[arg-type,return-value]
    return {r.resource.canonical for r in app.router.routes() if r.method == "POST" and r.resource is not None}


def test_the_scorer_serves_the_verbs() -> None:
    """Every verb the examples call is a route the scorer serves."""
    routes = _served()
    assert routes, "the scorer serves no extender routes"
    for name in ("extender.yaml", "extender-binder.yaml"):
        ext = _extender(name)
        prefix = ext["urlPrefix"].split("8080", 1)[1]
        for key in ("filterVerb", "prioritizeVerb", "bindVerb"):
            if key in ext:
                assert f"{prefix}/{ext[key]}" in routes, f"{name}: {prefix}/{ext[key]} is not served"
