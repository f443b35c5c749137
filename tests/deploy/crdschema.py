"""CustomResourceDefinitions as the API server treats them, for the tests: structural-schema rules,
validation of objects against a version's openAPIV3Schema with unknown fields rejected (kubectl's
strict field validation), and the CEL rules the berth CRDs use (has(), !, &&, ||, parentheses)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from functools import cache
from typing import Any

import jsonschema

Schema = dict[str, Any]


def version(crd: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    (v,) = [v for v in crd["spec"]["versions"] if v["name"] == name]
    found: Mapping[str, Any] = v
    return found


def openapi(crd: Mapping[str, Any], name: str) -> Schema:
    schema: Schema = version(crd, name)["schema"]["openAPIV3Schema"]
    return schema


# ---- structural schema ----------------------------------------------------------------------------------


def walk(schema: Schema, path: str = "") -> Iterator[tuple[str, Schema]]:
    """Every schema node with a readable path (.spec.limits[*], .status.conditions[])."""
    yield path, schema
    for name, sub in (schema.get("properties") or {}).items():
        yield from walk(sub, f"{path}.{name}")
    if isinstance(schema.get("additionalProperties"), dict):
        yield from walk(schema["additionalProperties"], f"{path}[*]")
    if isinstance(schema.get("items"), dict):
        yield from walk(schema["items"], f"{path}[]")


def structural_problems(schema: Schema) -> list[str]:
    """What makes a schema non-structural (the API server refuses such CRDs), plus the list-map rule."""
    problems = []
    for path, node in walk(schema):
        where = path or "<root>"
        loose = node.get("x-kubernetes-int-or-string") or node.get("x-kubernetes-preserve-unknown-fields")
        if "type" not in node and not loose:
            problems.append(f"{where}: no type")
        if node.get("x-kubernetes-int-or-string"):
            if node.get("anyOf") != [{"type": "integer"}, {"type": "string"}]:
                problems.append(f"{where}: int-or-string needs anyOf integer, string")
        elif "anyOf" in node or "oneOf" in node or "allOf" in node:
            problems.append(f"{where}: anyOf/oneOf/allOf outside int-or-string")
        if "properties" in node and "additionalProperties" in node:
            problems.append(f"{where}: properties and additionalProperties together")
        if node.get("type") == "object" and "items" in node:
            problems.append(f"{where}: items on an object")
        if node.get("type") == "array" and "items" not in node:
            problems.append(f"{where}: an array without items")
        for key in node.get("required", []):
            if key not in (node.get("properties") or {}):
                problems.append(f"{where}: required {key} is not a property")
        if node.get("x-kubernetes-list-type") == "map":
            items = node.get("items", {})
            for key in node.get("x-kubernetes-list-map-keys", []):
                if key not in items.get("required", []) and "default" not in items.get("properties", {}).get(key, {}):
                    problems.append(f"{where}: list-map key {key} must be required or defaulted")
        if "default" in node:
            try:
                jsonschema.validate(node["default"], to_json_schema(node))
            except jsonschema.ValidationError as e:
                problems.append(f"{where}: default {node['default']!r}: {e.message}")
    meta = (schema.get("properties") or {}).get("metadata")
    if meta is not None and set(meta) - {"type", "description"}:
        problems.append(".metadata: only type (and description) may be given")
    if schema.get("type") != "object":
        problems.append("<root>: must be an object")
    return problems


def json_path_exists(schema: Schema, json_path: str) -> bool:
    """Whether a printer column's JSONPath (.a.b, .a[*].b) names fields of the schema (or of the
    ObjectMeta every object has)."""
    if json_path.startswith(".metadata."):
        return json_path.split(".")[2] in (
            "name",
            "namespace",
            "creationTimestamp",
            "labels",
            "annotations",
            "generation",
        )
    node: Schema | None = schema
    for part in re.findall(r"\.([A-Za-z0-9_]+)|(\[\*\])", json_path):
        if node is None:
            return False
        field, star = part
        if star:
            node = node.get("items")
        elif node.get("x-kubernetes-preserve-unknown-fields") and field not in (node.get("properties") or {}):
            return True
        else:
            node = (node.get("properties") or {}).get(field)
    return node is not None


# ---- validating objects ----------------------------------------------------------------------------------


def to_json_schema(node: Schema, strict: bool = True) -> Schema:
    """An OpenAPI v3 (Kubernetes flavour) schema as JSON Schema. With `strict`, objects with fixed
    properties refuse unknown ones, as the API server does under strict field validation."""
    out: Schema = {}
    for key, value in node.items():
        if key.startswith("x-kubernetes-") or key in ("description", "format", "default", "nullable"):
            continue
        if key == "properties":
            out[key] = {k: to_json_schema(v, strict) for k, v in value.items()}
        elif key in ("items", "additionalProperties") and isinstance(value, dict):
            out[key] = to_json_schema(value, strict)
        elif key in ("anyOf", "oneOf", "allOf"):
            out[key] = [to_json_schema(v, strict) for v in value]
        else:
            out[key] = value
    if node.get("nullable"):
        out = {"anyOf": [out, {"type": "null"}]}
    if node.get("format") == "int32":
        out.update(
            minimum=max(out.get("minimum", -(2**31)), -(2**31)), maximum=min(out.get("maximum", 2**31 - 1), 2**31 - 1)
        )
    if node.get("format") == "date-time":
        out["pattern"] = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$"
    if (
        strict
        and node.get("type") == "object"
        and "properties" in node
        and not node.get("x-kubernetes-preserve-unknown-fields")
    ):
        out.setdefault("additionalProperties", False)
    return out


@cache
def _validator(schema_json: str) -> jsonschema.Draft7Validator:
    return jsonschema.Draft7Validator(to_json_schema(json.loads(schema_json)))


def validate(obj: Mapping[str, Any], schema: Schema) -> list[str]:
    """Every schema and CEL problem of an object, as `path: message` lines."""
    problems = []
    validator = _validator(json.dumps(schema, sort_keys=True))
    for e in sorted(validator.iter_errors(obj), key=lambda e: list(map(str, e.path))):
        problems.append(f"{'.'.join(map(str, e.path)) or '<root>'}: {e.message}")
    problems += [f"{path}: {message}" for path, message in cel_failures(obj, schema)]
    return problems


# ---- CEL (the subset in use) ------------------------------------------------------------------------------

TOKEN = re.compile(r"\s*(has\(self(?:\.[A-Za-z_][A-Za-z0-9_]*)+\)|!|&&|\|\||\(|\))")


class CelError(ValueError):
    pass


def cel(rule: str, self_: Any) -> bool:
    """Evaluate a rule built from has(self.a.b), !, &&, || and parentheses against `self_`."""
    tokens: list[str] = []
    pos = 0
    rule = rule.strip()
    while pos < len(rule):
        m = TOKEN.match(rule, pos)
        if not m:
            raise CelError(f"unsupported CEL at {rule[pos:]!r}")
        tokens.append(m.group(1))
        pos = m.end()
    parser = _Cel(tokens, self_)
    result = parser.disjunction()
    if parser.tokens:
        raise CelError(f"trailing {parser.tokens!r} in {rule!r}")
    return result


class _Cel:
    def __init__(self, tokens: list[str], self_: Any) -> None:
        self.tokens = tokens
        self.self_ = self_

    def _take(self) -> str:
        if not self.tokens:
            raise CelError("unexpected end")
        return self.tokens.pop(0)

    def disjunction(self) -> bool:
        value = self.conjunction()
        while self.tokens[:1] == ["||"]:
            self._take()
            right = self.conjunction()  # evaluated either way: both sides must parse
            value = value or right
        return value

    def conjunction(self) -> bool:
        value = self.unary()
        while self.tokens[:1] == ["&&"]:
            self._take()
            right = self.unary()
            value = value and right
        return value

    def unary(self) -> bool:
        head = self._take()
        if head == "!":
            return not self.unary()
        if head == "(":
            value = self.disjunction()
            if self._take() != ")":
                raise CelError("missing )")
            return value
        if head.startswith("has(self."):
            node = self.self_
            for f in head[len("has(self.") : -1].split("."):
                if not isinstance(node, Mapping) or f not in node:
                    return False
                node = node[f]
            return True
        raise CelError(f"unexpected {head!r}")


def cel_failures(obj: Any, schema: Schema, path: str = "") -> list[tuple[str, str]]:
    """(path, message) for every x-kubernetes-validations rule that fails, at every level present."""
    out = []
    for rule in schema.get("x-kubernetes-validations", []):
        if not cel(rule["rule"], obj):
            out.append((path or "<root>", rule.get("message", rule["rule"])))
    if isinstance(obj, Mapping):
        for name, sub in (schema.get("properties") or {}).items():
            if name in obj:
                out += cel_failures(obj[name], sub, f"{path}.{name}".lstrip("."))
    if isinstance(obj, list) and isinstance(schema.get("items"), dict):
        for i, item in enumerate(obj):
            out += cel_failures(item, schema["items"], f"{path}[{i}]")
    return out
