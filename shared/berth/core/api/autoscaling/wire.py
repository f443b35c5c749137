"""CapacityBuffer and what buffers read: PodTemplate, ResourceQuota, the workload kinds."""

from __future__ import annotations

from typing import Any

from berth.core.api.meta.wire import Object


class CapacityBuffer(Object, frozen=True):
    """spec and status stay as they arrive: a malformed spec is the buffer's condition, not an error."""

    spec: Any = None
    status: Any = None
