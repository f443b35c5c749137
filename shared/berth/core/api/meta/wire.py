"""Parts shared by many kinds: object metadata, owner references, selectors, quantities."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec

# kube's integer fields: a value out of range is rejected where the object is decoded
Int32 = Annotated[int, msgspec.Meta(ge=-(2**31), le=2**31 - 1)]
Int64 = Annotated[int, msgspec.Meta(ge=-(2**63), le=2**63 - 1)]
Quantity = str | int | float
Quantities = dict[str, Quantity]
Texts = dict[str, str]


class Wire(msgspec.Struct, rename="camel", omit_defaults=True, frozen=True, gc=False):
    """Base of every wire Struct: camelCase names, defaults left out when encoded."""


class OwnerReference(Wire, frozen=True):
    kind: str | None = None
    name: str | None = None
    uid: str | None = None
    api_version: str | None = None
    controller: bool | None = None


class ObjectMeta(Wire, frozen=True):
    name: str | None = None
    namespace: str | None = None
    uid: str | None = None
    resource_version: str | None = None
    generation: Int64 | None = None
    labels: Texts | None = None
    annotations: Texts | None = None
    owner_references: list[OwnerReference] | None = None
    creation_timestamp: str | None = None
    deletion_timestamp: Any = None  # only its presence is read


class Requirement(Wire, frozen=True):
    key: str | None = None
    operator: str | None = None
    values: tuple[str, ...] | None = None


class LabelSelector(Wire, frozen=True):
    match_labels: Texts | None = None
    match_expressions: tuple[Requirement, ...] | None = None


class NodeSelectorTerm(Wire, frozen=True):
    match_expressions: tuple[Requirement, ...] | None = None
    match_fields: tuple[Requirement, ...] | None = None


class NodeSelector(Wire, frozen=True):
    """Hashable (tuples all the way down): many PVs share one, and its model is kept."""

    node_selector_terms: tuple[NodeSelectorTerm, ...] | None = None


class Object(Wire, frozen=True, tag_field="kind"):
    """Base of every kind's Struct, tagged by `kind` (the class name): an event's object decodes
    straight into the right one. `apiVersion` tells API groups apart."""

    api_version: str | None = None
    metadata: ObjectMeta | None = None


class Names(msgspec.Struct):
    name: str = ""
    namespace: str = ""


class Head(msgspec.Struct):
    """What names an object in a message: its kind and names, read on their own when the object
    itself is not read or does not decode. Strings only: `tolerant_head` reads junk."""

    kind: str = ""
    apiVersion: str = ""
    metadata: Names | None = None


def tolerant_head(value: Any) -> Head:
    """The head of an object as Python data whose kind or names may not be strings (a rare, slow path)."""
    value = value if isinstance(value, dict) else {}
    kind, api, meta = value.get("kind"), value.get("apiVersion"), value.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    name, ns = meta.get("name"), meta.get("namespace")
    return Head(
        kind=kind if isinstance(kind, str) else "",
        apiVersion=api if isinstance(api, str) else "",
        metadata=Names(name=name if isinstance(name, str) else "", namespace=ns if isinstance(ns, str) else ""),
    )


def bus_key(kind: str, namespace: str | None, name: str | None) -> bytes:
    """The bus key of an object: kind/namespace/name, so that one object's events stay in order."""
    return f"{kind}/{namespace or ''}/{name or ''}".encode()
