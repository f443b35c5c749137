"""Read Kubernetes objects from a file or stdin, as `kubectl get -o yaml|json` prints them.

Accepts a single object, a List (or a typed list such as PodList from the API
server, whose items carry no kind), JSON, or multi-document YAML. Each object is at most
MAX_OBJECT_BYTES as JSON, as a log line is.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import msgspec
import yaml

from berth.adapters.files.typedjson import read_typed, within_by_length
from berth.core.api.kinds import describe
from berth.core.api.watch import MAX_LINE_BYTES
from berth.core.cache.snapshot import Decoded
from berth.core.errors import InputError

MAX_OBJECT_BYTES = MAX_LINE_BYTES  # one object: the API server's own request-body limit

MERGE = "tag:yaml.org,2002:merge"

# libyaml parses (in C) when PyYAML was built with it: about four times faster than the pure-Python
# parser on kubectl-sized snapshots. Objects are built by the same Python constructor either way.
_Base: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Strict:
    """Strict YAML as kubectl reads it: a mapping key given twice is an error (PyYAML keeps the
    last one silently, so two documents pasted without `---` lose an object). Keys brought in by a
    merge key (`<<`) may be overridden, as in YAML 1.1. No implicit timestamps: times stay RFC 3339
    strings, as in JSON."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[tuple[type, Any], yaml.Node] = {}
        for key_node, _ in node.value:
            if key_node.tag == MERGE:
                continue
            key = self.construct_object(key_node, deep=True)  # type: ignore[attr-defined]  # cached: built once
            try:
                first = seen.setdefault((type(key), key), key_node)  # 1, 1.0 and true are different keys
            except TypeError:  # an unhashable key: the base constructor reports it
                continue
            if first is not key_node:
                shown = json.dumps(key) if isinstance(key, str) else repr(key)
                line = first.start_mark.line + 1
                problem = f"mapping key {shown} already defined at line {line}"
                raise yaml.constructor.ConstructorError(None, None, problem, key_node.start_mark)
        mapping: dict[Any, Any] = super().construct_mapping(node, deep)  # type: ignore[misc]
        return mapping


class _Loader(_Strict, _Base):  # type: ignore[misc]
    """The strict loader on libyaml's parser where PyYAML has it."""


_Loader.yaml_implicit_resolvers = {
    k: [(tag, rx) for tag, rx in v if tag != "tag:yaml.org,2002:timestamp"]
    for k, v in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


class _PyLoader(_Strict, yaml.SafeLoader):
    """The same strict loader on PyYAML's pure-Python parser, which recurses per level of nesting
    (so nesting is bounded by the recursion limit): for documents the event builder leaves aside."""

    yaml_implicit_resolvers = _Loader.yaml_implicit_resolvers


MAX_DEPTH = 100  # nesting in a document: Kubernetes objects stay well within it; past it, an error


class _Unusual(Exception):
    """Something the event builder leaves to the full loader (which gives the same objects or error)."""


_STR = "tag:yaml.org,2002:str"


def _fast_documents(text: str) -> list[Any]:
    """The documents built straight from libyaml's events, without PyYAML's node graph (which holds
    every scalar of a kubectl-sized List twice over until the end). The same objects as _Loader:
    its resolver (no timestamps) and its scalar constructors; anything else raises _Unusual."""
    loader = _Loader("")
    resolve, constructors = loader.resolve, loader.yaml_constructors
    docs: list[Any] = []
    anchors: dict[str, Any] = {}
    # a frame: [container, key (maps: the key read, or _NO_KEY), seen keys (maps)]
    stack: list[list[Any]] = []
    root: list[Any] = []
    value: Any

    def put(value: Any) -> None:
        if not stack:
            root.append(value)
            return
        frame = stack[-1]
        container = frame[0]
        if frame[2] is None:  # a sequence
            container.append(value)
        elif frame[1] is _NO_KEY:
            try:
                marker = (type(value), value)
                if marker in frame[2]:
                    raise _Unusual  # a duplicate key: the full loader's error names both lines
            except TypeError:
                raise _Unusual from None  # an unhashable key
            frame[2].add(marker)
            frame[1] = value
        else:
            container[frame[1]] = value
            frame[1] = _NO_KEY

    plain: dict[str, Any] = {}  # a plain scalar's value, by its text: keys and most values repeat
    events: Iterator[Any] = yaml.parse(text, Loader=_Base)
    for ev in events:
        cls = type(ev)
        if cls is yaml.ScalarEvent and ev.tag is None and ev.implicit[0] and ev.anchor is None:
            try:
                put(plain[ev.value])
                continue
            except KeyError:
                pass
            tag = resolve(yaml.ScalarNode, ev.value, ev.implicit)
            if tag == _STR:
                value = ev.value
            else:
                construct = constructors.get(tag)
                if construct is None or tag == MERGE:
                    raise _Unusual
                value = construct(loader, yaml.ScalarNode(tag, ev.value, ev.start_mark, ev.end_mark, ev.style))
            if len(plain) < 200_000:
                plain[ev.value] = value
            put(value)
        elif cls is yaml.ScalarEvent:
            tag = ev.tag
            if tag is None or tag == "!":
                tag = resolve(yaml.ScalarNode, ev.value, ev.implicit)
            elif not ev.implicit[0] and not ev.implicit[1] and tag != _STR:
                raise _Unusual
            if tag == _STR:
                value = ev.value
            else:
                construct = constructors.get(tag)
                if construct is None or tag == MERGE:
                    raise _Unusual
                value = construct(loader, yaml.ScalarNode(tag, ev.value, ev.start_mark, ev.end_mark, ev.style))
            if ev.anchor is not None:
                anchors[ev.anchor] = value
            put(value)
        elif cls is yaml.MappingStartEvent or cls is yaml.SequenceStartEvent:
            if ev.tag is not None and ev.tag != "!" and not ev.implicit:
                raise _Unusual
            if cls is yaml.MappingStartEvent:
                new: Any = {}
                frame = [new, _NO_KEY, set()]
            else:
                new = []
                frame = [new, None, None]
            if ev.anchor is not None:
                anchors[ev.anchor] = new
            if stack and stack[-1][2] is not None and stack[-1][1] is _NO_KEY:
                raise _Unusual  # a collection as a mapping key
            put(new)
            stack.append(frame)
            if len(stack) > MAX_DEPTH:
                raise RecursionError(f"nested deeper than {MAX_DEPTH}")
        elif cls is yaml.MappingEndEvent or cls is yaml.SequenceEndEvent:
            stack.pop()
        elif cls is yaml.AliasEvent:
            if ev.anchor not in anchors:
                raise _Unusual  # the full loader's error
            put(anchors[ev.anchor])
        elif cls is yaml.DocumentEndEvent:
            docs.append(root[0] if root else None)
            root.clear()
            anchors.clear()
    return docs


_NO_KEY = object()


def read_text(path: str) -> str:
    return _text(*read_input(path))


def read_input(path: str) -> tuple[bytes, str]:
    """A file's bytes ('-': stdin's), and its name for errors."""
    if path == "-":
        return sys.stdin.buffer.read(), "<stdin>"
    return _read_bytes(path), path


def _read_bytes(path: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as e:
        raise InputError(path, "", e.strerror or str(e)) from None


def _text(data: bytes, path: str) -> str:
    """The file's text, its line ends as a file opened as text reads them."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(path, "", "not UTF-8 text") from None
    return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text


def parse_documents(text: str, source: str) -> list[Any]:
    """The documents of a JSON or YAML text. Bounded: nesting as deep as the recursion limit allows,
    integers of at most Python's 4,300 digits; past that, one InputError."""
    stripped = text.lstrip()
    if stripped.startswith(("{", "[")):
        try:
            return [json.loads(text)]
        except json.JSONDecodeError as e:
            raise InputError(source, f"line {e.lineno}", f"invalid JSON: {e.msg}") from None
        except RecursionError:
            raise InputError(source, "", "invalid JSON: nested too deeply") from None
        except ValueError as e:  # the int-string conversion limit
            raise InputError(source, "", f"invalid JSON: {e}") from None
    try:
        try:
            docs = _fast_documents(text)
        except _Unusual:  # merge keys, explicit tags, complex or duplicate keys: the full loader says it
            docs = list(yaml.load_all(text, Loader=_PyLoader))
        return [d for d in docs if d is not None]
    except RecursionError:
        raise InputError(source, "", "invalid YAML: nested too deeply") from None
    except ValueError as e:  # the int-string conversion limit
        raise InputError(source, "", f"invalid YAML: {str(e).splitlines()[0]}") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark is not None else ""
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise InputError(source, where, f"invalid YAML: {problem}") from None


def flatten(doc: Any, source: str) -> Iterator[Mapping[str, Any]]:
    """Objects out of a document, unpacking Lists."""
    if isinstance(doc, list):
        for d in doc:
            yield from flatten(d, source)
        return
    if not isinstance(doc, Mapping):
        raise InputError(source, "", f"expected Kubernetes objects, got {type(doc).__name__}")
    kind = doc.get("kind")
    if isinstance(kind, str) and kind.endswith("List") and isinstance(doc.get("items"), list):
        item_kind = kind[: -len("List")]
        for item in doc["items"]:
            if isinstance(item, Mapping) and "kind" not in item and item_kind:
                item = {"kind": item_kind, "apiVersion": doc.get("apiVersion", "v1"), **item}
            yield from flatten(item, source)
        return
    yield doc


def load_snapshot(path: str) -> Sequence[Mapping[str, Any] | Decoded]:
    """The objects of a snapshot file ('-' is stdin) for build_state: those of JSON decoded
    straight into their models where that reads them as load_objects would (typedjson); else the
    raw objects of load_objects."""
    data, source = read_input(path)
    typed = read_typed(data, MAX_OBJECT_BYTES)
    if typed is not None:
        return typed
    return objects_in(_text(data, source), source)


def load_objects(path: str) -> list[Mapping[str, Any]]:
    """All raw objects in a snapshot file ('-' is stdin)."""
    data, source = read_input(path)
    return objects_in(_text(data, source), source)


def objects_in(text: str, source: str) -> list[Mapping[str, Any]]:
    """All raw objects in a snapshot's text."""
    out: list[Mapping[str, Any]] = []
    for doc in parse_documents(text, source):
        out.extend(flatten(doc, source))
    # A text within the limit holds no object over it, unless YAML aliases repeat parts of it.
    aliases = "&" in text
    if len(text) > MAX_OBJECT_BYTES or aliases:
        for obj in out:
            if not within(obj, MAX_OBJECT_BYTES, aliases):
                what = describe(obj.get("kind"), obj.get("metadata"))
                raise InputError(source, what, f"larger than {MAX_OBJECT_BYTES} bytes as JSON")
    return out


def within(obj: Any, limit: int, aliases: bool) -> bool:
    """Whether json_size(obj) is at most limit: by the length of its compact JSON where that says
    (within_by_length), else by the walk; not by the length where YAML aliases may repeat a part many
    times (the walk stops at the limit, an encoding would not)."""
    if aliases:
        return json_size(obj, limit) <= limit
    try:
        if within_by_length(len(msgspec.json.encode(obj)), limit):
            return True
    except (msgspec.EncodeError, TypeError, OverflowError, RecursionError):
        pass  # what YAML alone makes (dates, non-string keys): the walk says
    return json_size(obj, limit) <= limit


def json_size(value: Any, limit: int) -> int:
    """About how many bytes `value` takes as JSON; counting stops once past `limit`, so YAML aliases
    that repeat a part many times cost no more than the limit."""
    size = 0
    stack = [value]
    while stack and size <= limit:
        v = stack.pop()
        if isinstance(v, str):
            size += len(v) + 3
        elif isinstance(v, Mapping):
            size += 2
            for k, item in v.items():
                size += len(k) + 4 if isinstance(k, str) else 8
                stack.append(item)
        elif isinstance(v, list):
            size += 2
            stack.extend(v)
        else:
            size += 8  # numbers, true, false, null
    return size
