"""kube's plugins decide together with berth's in the default profile (kube's); berth's old
six-plugin profile is one config away."""

from __future__ import annotations

from berth.core.api.kinds import convert
from berth.core.config.kubeschedulerconfig import parse_config
from berth.core.scheduler.schedule_one import Scheduler
from tests.builders import NOW, cluster, node, pod, six_plugin_profile


def test_the_six_plugin_profile_is_one_config_away() -> None:
    cfg = parse_config(six_plugin_profile())
    assert cfg.filters == (
        "NodeUnschedulable",
        "NodeAffinity",
        "TaintToleration",
        "NodeResourcesFit",
        "VolumeBinding",
        "LoadAwareScheduling",
    )
    assert cfg.scores == (("VolumeBinding", 1), ("LoadAwareScheduling", 1))


def test_kube_plugins_decide_together_in_the_default_profile() -> None:
    cfg = parse_config(None)
    port = [
        {
            "name": "c",
            "image": "app",
            "ports": [{"containerPort": 80, "hostPort": 80}],
            "resources": {"requests": {"cpu": "1", "memory": "1Gi"}},
        }
    ]
    state = cluster(
        node("busy", cpu="4", memory="8Gi"),
        node("free", cpu="4", memory="8Gi", taints=[{"key": "t", "value": "v", "effect": "PreferNoSchedule"}]),
        node("big", cpu="16", memory="64Gi"),
        pod("web-0", node_name="busy", containers=port),
    )
    d = Scheduler(cfg.build(state)).decide(convert(pod("web-1", containers=port)), NOW).decision
    assert d.nodes["busy"].reasons == ["node(s) didn't have free ports for the requested pod ports"]
    assert d.status == "Scheduled" and d.node == "big"
    big, free = d.nodes["big"].scores, d.nodes["free"].scores
    assert big["TaintToleration"] == 100 and free["TaintToleration"] == 0
    # cpu (16000-1000)*100//16000 = 93, memory (64-1)*100//64 = 98 -> 95; on free: 75, 87 -> 81
    assert big["NodeResourcesFit"] == 95 and free["NodeResourcesFit"] == 81
    assert set(big) == {
        "VolumeBinding",
        "LoadAwareScheduling",
        "TaintToleration",
        "NodeResourcesFit",
        "NodeResourcesBalancedAllocation",
        "ImageLocality",
    }  # NodeAffinity, PodTopologySpread and InterPodAffinity skipped their PreScore: no preferred
    # terms, no constraints, no affinity term (kube's InterPodAffinity PreScore skips then too)
