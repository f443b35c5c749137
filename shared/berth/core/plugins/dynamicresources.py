"""DynamicResources, as far as it shows for pods without ResourceClaims (berth reads no claims): kube 1.36
has it in its default profile (DRA is GA and locked on; default_plugins.go applyDynamicResources puts it
just before DefaultPreemption), and when no node fits, its PostFilter speaks before preemption.

kube's PostFilter (dynamicresources.go, DynamicResources.PostFilter): a pod without claims gets
Unschedulable `no new claims to deallocate`, so the FailedScheduling message reads `... no new claims to
deallocate, preemption: ...` (the framework joins the PostFilter plugins' reasons with ", ",
RunPostFilterPlugins). It reads what its PreFilter wrote in the cycle state; when an earlier PreFilter
rejected the pod as UnschedulableAndUnresolvable, its own PreFilter never ran (RunPreFilterPlugins stops
there) and the read fails with the cycle state's `not found` (ErrNotFound): an Error status, whose message
kube still appends to the FitError, `0/2 nodes are available: persistentvolumeclaim "x" not found. not found`.

Its PreFilter skips a pod without claims, and so does its Score (0 everywhere, normalised to 0), so both
change no decision; berth's PreFilter only records that it ran.

A pod with claims (spec.resourceClaims) would have kube allocate devices for it, which berth does not model:
its PreFilter gives such a pod an Error (`NOT_MODELLED`), which ends the cycle with a decision of status
Error, never a placement. With DynamicResources off in the profile, kube ignores the claims, and so does berth.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from berth.core.api.meta.validation import Problems, unknown_fields
from berth.core.cache.state import ClusterState
from berth.core.framework.cycle import Cycle
from berth.core.framework.interface import DryRun, PostFilterResult
from berth.core.framework.status import SKIP, Code, NodeToStatus, Status

NAME = "DynamicResources"
NO_CLAIMS = "no new claims to deallocate"
NOT_FOUND = "not found"  # kube's fwk.ErrNotFound: its PreFilter's state was never written
NOT_MODELLED = "dynamic resource allocation is not modelled: the pod references ResourceClaims"


class DynamicResourcesArgs(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """kube's DynamicResourcesArgs (filterTimeout, bindingTimeout): read and left unused (berth allocates
    no devices)."""

    filter_timeout: str | None = None
    binding_timeout: str | None = None

    @classmethod
    def parse(cls, raw: Mapping[str, Any], path: str, problems: Problems) -> DynamicResourcesArgs:
        unknown_fields(raw, {"filterTimeout", "bindingTimeout"}, path, problems)
        return cls(filter_timeout=raw.get("filterTimeout"), binding_timeout=raw.get("bindingTimeout"))


Args = DynamicResourcesArgs


class DynamicResources:
    name = NAME

    def pre_filter(self, cycle: Cycle) -> Status:
        cycle.data[NAME] = True  # kube: its stateData, written before it finds the pod has no claims
        claims = cycle.pod.resource_claims
        if claims:
            return Status(Code.ERROR, f"{NOT_MODELLED} ({', '.join(claims)})", NAME)
        return SKIP

    def post_filter(self, cycle: Cycle, statuses: NodeToStatus, dry_run: DryRun) -> PostFilterResult:
        if NAME not in cycle.data:
            return PostFilterResult(Status(Code.ERROR, NOT_FOUND, NAME))
        return PostFilterResult(Status(Code.UNSCHEDULABLE, NO_CLAIMS, NAME))


def new(args: DynamicResourcesArgs | None, handle: ClusterState) -> DynamicResources:
    return DynamicResources()
