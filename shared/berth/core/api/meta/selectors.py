"""Label selectors and node selectors with Kubernetes semantics.

Parsing never raises: a requirement that Kubernetes would reject makes its term
invalid, and an invalid term never matches (kube's "lazy" parse errors).
`selector_error` gives the error kube's LabelSelectorAsSelector returns for one, word for word.
"""

from __future__ import annotations

import json
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


def show_selector(sel: LabelSelector | None) -> str:
    """A label selector as kubectl writes one: "app=pg,tier in (db,cache)"; "<none>" for nil."""
    if sel is None:
        return "<none>"
    parts = [f"{k}={v}" for k, v in sel.match_labels]
    for r in sel.match_expressions:
        op = {"In": "in", "NotIn": "notin"}.get(r.operator)
        if op:
            parts.append(f"{r.key} {op} ({','.join(r.values)})")
        else:
            parts.append(r.key if r.operator == "Exists" else f"!{r.key}")
    return ",".join(parts) or "<everything>"


def unmet(sel: NodeSelector, labels: Mapping[str, str], node_name: str) -> list[str]:
    """Why a node does not match a NodeSelector (berth explain): per term, its first requirement the
    node fails, with the node's value ("term 1: zone In [z1] (node: z2)")."""
    out = []
    fields = {"metadata.name": node_name}
    for i, t in enumerate(sel.terms, 1):
        pairs = [(r, labels) for r in t.match_expressions] + [(r, fields) for r in t.match_fields]
        if t.empty or not t.valid:
            out.append(f"term {i}: {'empty' if t.empty else 'invalid'}")
            continue
        for r, have in pairs:
            if not r.matches(have):
                value = have.get(r.key)
                shown = f" [{', '.join(r.values)}]" if r.values else ""
                out.append(
                    f"term {i}: {r.key} {r.operator}{shown} (node: {'no such label' if value is None else value})"
                )
                break
    return out or ["no terms"]


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


# ---- kube 1.36's parse errors (apimachinery LabelSelectorAsSelector, labels.NewRequirement and
# api/validate/content's IsLabelKey, IsLabelValue, IsDNS1123Subdomain) ---------------------------
_KEY_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_VALUE_FMT = f"({_KEY_FMT})?"
_SUBDOMAIN_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
_KEY_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
)
_VALUE_MSG = f"a valid label must be an empty string or consist of {_KEY_MSG[len('must consist of ') :]}"
_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start "
    "and end with an alphanumeric character"
)


def _regex_error(msg: str, fmt: str, *examples: str) -> str:
    shown = " or ".join(f"'{e}', " for e in examples)
    return f"{msg} (e.g. {shown}regex used for validation is '{fmt}')"


def _subdomain_errors(value: str) -> list[str]:
    errs = []
    if len(value.encode()) > 253:
        errs.append("must be no more than 253 bytes")
    if not _DNS1123.match(value):
        errs.append(_regex_error(_SUBDOMAIN_MSG, _SUBDOMAIN_FMT, "example.com"))
    return errs


def label_key_errors(key: str) -> list[str]:
    """kube's IsLabelKey."""
    errs: list[str] = []
    parts = key.split("/")
    if len(parts) > 2:
        example = _regex_error(_KEY_MSG, _KEY_FMT, "MyName", "my.name", "123-abc")
        return [
            f"a valid label key {example} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    name = parts[-1]
    if len(parts) == 2:
        if not parts[0]:
            errs.append("prefix part must be non-empty")
        else:
            errs += [f"prefix part {m}" for m in _subdomain_errors(parts[0])]
    if not name:
        errs.append("name part must be non-empty")
    elif len(name.encode()) > 63:
        errs.append("name part must be no more than 63 bytes")
    if not _NAME.match(name):
        errs.append("name part " + _regex_error(_KEY_MSG, _KEY_FMT, "MyName", "my.name", "123-abc"))
    return errs


def label_value_errors(value: str) -> list[str]:
    """kube's IsLabelValue."""
    errs = []
    if len(value.encode()) > 63:
        errs.append("must be no more than 63 bytes")
    if value and not _NAME.match(value):
        errs.append(_regex_error(_VALUE_MSG, _VALUE_FMT, "MyValue", "my_value", "12345"))
    return errs


def _invalid(path: str, value: str | tuple[str, ...] | None, detail: str) -> str:
    shown = (
        json.dumps(value, ensure_ascii=False) if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
    )
    return f"{path}: Invalid value: {shown}: {detail}"


def _aggregate(errors: list[str]) -> str | None:
    """kube's utilerrors.NewAggregate(...).Error(): one as it is, more (duplicates dropped) in brackets."""
    unique = list(dict.fromkeys(errors))
    if not unique:
        return None
    return unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]"


_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


def _requirement_error(key: str, op: str, values: tuple[str, ...] | None) -> str | None:
    """kube's labels.NewRequirement error (op: Equals for a matchLabels entry)."""
    errs = []
    problems = label_key_errors(key)
    if problems:
        errs.append(_invalid("key", key, "; ".join(problems)))
    if op in ("In", "NotIn") and not values:
        errs.append(_invalid("values", values or None, "for 'in', 'notin' operators, values set can't be empty"))
    elif op in ("Exists", "DoesNotExist") and values:
        errs.append(_invalid("values", values, "values set must be empty for exists and does not exist"))
    for i, v in enumerate(values or ()):
        problems = label_value_errors(v)
        if problems:
            errs.append(_invalid(f"values[{i}][{key}]", v, "; ".join(problems)))
    return _aggregate(errs)


def selector_error(sel: LabelSelector | None) -> str | None:
    """The error kube's LabelSelectorAsSelector returns for the selector, or None when it parses: the
    first requirement that does not. matchLabels come first in key order (kube ranges over a Go map:
    in no fixed order, which matters only when two entries are bad)."""
    if sel is None:
        return None
    for k, v in sel.match_labels:
        err = _requirement_error(k, "Equals", (v,))
        if err:
            return err
    for r in sel.match_expressions:
        if r.operator not in _OPERATORS:
            return f"{json.dumps(r.operator, ensure_ascii=False)} is not a valid label selector operator"
        err = _requirement_error(r.key, r.operator, r.values)
        if err:
            return err
    return None
