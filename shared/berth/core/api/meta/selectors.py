"""Label selectors and node selectors with Kubernetes semantics.

Parsing never raises: a requirement that Kubernetes would reject makes its term
invalid, and an invalid term never matches (kube's "lazy" parse errors).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import msgspec

_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_DNS1123 = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_INT64 = re.compile(r"^[+-]?\d+$")


def valid_label_key(key: str) -> bool:
    prefix, sep, name = key.rpartition("/")
    if sep and (not prefix or len(prefix) > 253 or not _DNS1123.match(prefix)):
        return False
    return 0 < len(name) <= 63 and bool(_NAME.match(name))


def valid_label_value(value: str) -> bool:
    return value == "" or (len(value) <= 63 and bool(_NAME.match(value)))


def _parse_int64(value: str) -> int | None:
    if not _INT64.match(value):
        return None
    n = int(value)
    return n if -(2**63) <= n < 2**63 else None


class Requirement(msgspec.Struct, frozen=True, gc=False):
    key: str
    operator: str
    values: tuple[str, ...] = ()

    def is_valid(self, field: bool = False) -> bool:
        if field:
            return self.key == "metadata.name" and self.operator in ("In", "NotIn") and len(self.values) == 1
        if not valid_label_key(self.key):
            return False
        if self.operator in ("In", "NotIn"):
            ok = len(self.values) >= 1
        elif self.operator in ("Exists", "DoesNotExist"):
            ok = len(self.values) == 0
        elif self.operator in ("Gt", "Lt"):
            ok = len(self.values) == 1 and _parse_int64(self.values[0]) is not None
        else:
            return False
        return ok and all(valid_label_value(v) for v in self.values)

    def matches(self, labels: Mapping[str, str]) -> bool:
        op = self.operator
        present = self.key in labels
        if op == "In":
            return present and labels[self.key] in self.values
        if op == "NotIn":
            return not present or labels[self.key] not in self.values
        if op == "Exists":
            return present
        if op == "DoesNotExist":
            return not present
        if not present:
            return False
        have = _parse_int64(labels[self.key])
        want = _parse_int64(self.values[0])
        if have is None or want is None:
            return False
        return have > want if op == "Gt" else have < want


class NodeSelectorTerm(msgspec.Struct, frozen=True, gc=False):
    match_expressions: tuple[Requirement, ...] = ()
    match_fields: tuple[Requirement, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.match_expressions and not self.match_fields

    @property
    def valid(self) -> bool:
        return all(r.is_valid() for r in self.match_expressions) and all(
            r.is_valid(field=True) for r in self.match_fields
        )

    def matches(self, labels: Mapping[str, str], node_name: str) -> bool:
        if self.empty or not self.valid:
            return False
        if not all(r.matches(labels) for r in self.match_expressions):
            return False
        fields = {"metadata.name": node_name}
        return all(r.matches(fields) for r in self.match_fields)


class NodeSelector(msgspec.Struct, frozen=True, gc=False):
    """Terms are ORed; a term with nothing in it is dropped, and no terms match nothing."""

    terms: tuple[NodeSelectorTerm, ...] = ()

    def matches(self, labels: Mapping[str, str], node_name: str) -> bool:
        return any(t.matches(labels, node_name) for t in self.terms)


class LabelSelector(msgspec.Struct, frozen=True, gc=False):
    """matchLabels and matchExpressions, ANDed. The empty selector matches everything."""

    match_labels: tuple[tuple[str, str], ...] = ()
    match_expressions: tuple[Requirement, ...] = ()

    @property
    def valid(self) -> bool:
        exprs_ok = all(
            r.operator in ("In", "NotIn", "Exists", "DoesNotExist") and r.is_valid() for r in self.match_expressions
        )
        labels_ok = all(valid_label_key(k) and valid_label_value(v) for k, v in self.match_labels)
        return exprs_ok and labels_ok

    def matches(self, labels: Mapping[str, str]) -> bool:
        if not all(labels.get(k) == v and k in labels for k, v in self.match_labels):
            return False
        return all(r.matches(labels) for r in self.match_expressions)


class TopologyTerm(msgspec.Struct, frozen=True, gc=False):
    """One StorageClass allowedTopologies term: every key must have one of its values."""

    expressions: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        if not self.expressions:
            return False
        return all(labels.get(k) in vals and k in labels for k, vals in self.expressions)
