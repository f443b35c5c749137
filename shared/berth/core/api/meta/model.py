"""ObjectMeta's parts berth keeps on its models: owner references."""

from __future__ import annotations

import msgspec


class OwnerRef(msgspec.Struct, frozen=True, gc=False):
    kind: str
    name: str
    uid: str = ""
    api_version: str = ""
    controller: bool = False
