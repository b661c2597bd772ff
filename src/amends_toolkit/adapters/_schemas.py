"""Input schemas as every model API accepts them, and a model's input given back its names.

Anthropic refuses a tool whose schema names a property outside ``[a-zA-Z0-9_.-]{1,64}`` (a
``$ref`` that a document misuses as a property, ``filter[id]``, ``@odata.type``, a name of 65
characters), and both Anthropic's and OpenAI's types want an object at the root. So a tool's
schema is given to a model API with:

- ``"type": "object"`` at its root when it has no type;
- each property name outside that pattern mapped, wherever a schema names properties
  (``properties``, ``required``, ``dependentRequired``, ``dependentSchemas``): its characters
  outside the pattern become ``_``, a name longer than 64 characters keeps 55 and a fingerprint
  of the whole, and a name already taken among its neighbours gets ``_2``, ``_3``... The mapping
  depends only on the names of one ``properties`` object, in order, so it is the same each time.

The model's input is then given back the original names by walking it beside the schema (through
``$ref``, ``allOf``, ``anyOf``, ``oneOf`` and the conditional keywords), so the source receives
the names it declared. A schema with nothing to map is given as it is, the same object.
"""

from __future__ import annotations

import hashlib
import re
from typing import TYPE_CHECKING
from urllib.parse import unquote

from amends_toolkit._schema_keywords import (
    DEFINITIONS,
    NAMED_SCHEMAS,
    ONE_SCHEMA,
    PATTERN_SCHEMAS,
    SCHEMA_LISTS,
)

if TYPE_CHECKING:
    from collections.abc import Iterable

    from amends_toolkit._json import JsonObject, JsonValue

__all__ = ("PROPERTY_NAME", "model_names", "model_schema", "source_input")

PROPERTY_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}")
"""The property names Anthropic's Messages API accepts (and OpenAI's, which says less)."""

_MAX_NAME = 64
_MAX_DEPTH = 256
_MAPS = DEFINITIONS | PATTERN_SCHEMAS
_APPLIED = ("allOf", "anyOf", "oneOf", "if", "then", "else")


def model_names(names: Iterable[str]) -> dict[str, str]:
    """The names given to a model for the property names of one ``properties`` object, for each
    one outside the pattern (a name inside it keeps itself)."""
    names = list(names)
    taken = {name for name in names if PROPERTY_NAME.fullmatch(name)}
    mapped: dict[str, str] = {}
    for name in names:
        if PROPERTY_NAME.fullmatch(name):
            continue
        base = _fit(re.sub(r"[^A-Za-z0-9_.-]", "_", name) or "_", name)
        candidate, n = base, 2
        while candidate in taken:
            suffix = f"_{n}"
            candidate, n = base[: _MAX_NAME - len(suffix)] + suffix, n + 1
        taken.add(candidate)
        mapped[name] = candidate
    return mapped


def _fit(base: str, name: str) -> str:
    if len(base) <= _MAX_NAME:
        return base
    return base[: _MAX_NAME - 9] + "_" + hashlib.sha256(name.encode()).hexdigest()[:8]


def model_schema(schema: JsonObject) -> JsonObject:
    """``schema`` as a model API accepts it (see above); the same object when nothing changes."""
    mapped = _schema(schema, 0)
    assert isinstance(mapped, dict)
    if "type" not in mapped:
        mapped = {"type": "object", **mapped}
    return mapped


def _schema(node: JsonValue, depth: int) -> JsonValue:
    if not isinstance(node, dict) or depth > _MAX_DEPTH:
        return node
    deeper = depth + 1
    properties = node.get("properties")
    names = model_names(properties) if isinstance(properties, dict) else {}

    def name(value: JsonValue) -> JsonValue:
        return names.get(value, value) if isinstance(value, str) else value

    out: JsonObject = {}
    for key, value in node.items():
        new: JsonValue = value
        if key in NAMED_SCHEMAS and isinstance(value, dict):
            new = {names.get(k, k): _schema(v, deeper) for k, v in value.items()}
        elif key == "required" and isinstance(value, list) and names:
            new = [name(v) for v in value]
        elif key == "dependentRequired" and isinstance(value, dict) and names:
            new = {
                names.get(k, k): [name(n) for n in v] if isinstance(v, list) else v
                for k, v in value.items()
            }
        elif key in ONE_SCHEMA:
            new = _schema(value, deeper)
        elif key in SCHEMA_LISTS and isinstance(value, list):
            new = [_schema(v, deeper) for v in value]
        elif key in _MAPS and isinstance(value, dict):
            new = {k: _schema(v, deeper) for k, v in value.items()}
        out[key] = new
    return out if names or any(_changed(out[key], node[key]) for key in node) else node


def _changed(new: JsonValue, old: JsonValue) -> bool:
    # Children come back as the same objects when nothing under them changed.
    if isinstance(new, dict) and isinstance(old, dict) and new is not old:
        return list(new) != list(old) or any(
            a is not b for a, b in zip(new.values(), old.values(), strict=True)
        )
    if isinstance(new, list) and isinstance(old, list) and new is not old:
        return any(a is not b for a, b in zip(new, old, strict=True))
    return new is not old


def source_input(schema: JsonObject, value: JsonValue) -> JsonValue:
    """A model's input for a tool of ``schema``, with each mapped property name given back its
    original; the same value when the schema maps nothing."""
    if _schema(schema, 0) is schema:
        return value
    return _restore(value, [schema], schema, 0)


def _restore(value: JsonValue, nodes: list[JsonValue], root: JsonObject, depth: int) -> JsonValue:
    if depth > _MAX_DEPTH or not isinstance(value, (dict, list)):
        return value
    applied = _applied(nodes, root)
    if isinstance(value, list):
        out_list = []
        for index, item in enumerate(value):
            inner: list[JsonValue] = []
            for node in applied:
                prefix = node.get("prefixItems")
                if isinstance(prefix, list) and index < len(prefix):
                    inner.append(prefix[index])
                elif "items" in node:
                    inner.append(node["items"])
            out_list.append(_restore(item, inner, root, depth + 1))
        return out_list
    back: dict[str, str] = {}
    real: set[str] = set()
    for node in applied:
        properties = node.get("properties")
        if isinstance(properties, dict):
            names = model_names(properties)
            real.update(name for name in properties if name not in names)
            back.update({mapped: name for name, mapped in names.items()})
    out: JsonObject = {}
    for key, item in value.items():
        name = back[key] if key in back and key not in real else key
        inner = []
        for node in applied:
            properties = node.get("properties")
            if isinstance(properties, dict) and name in properties:
                inner.append(properties[name])
        if not inner:
            inner = [
                node["additionalProperties"] for node in applied if "additionalProperties" in node
            ]
        out[name] = _restore(item, inner, root, depth + 1)
    return out


def _applied(nodes: list[JsonValue], root: JsonObject) -> list[JsonObject]:
    """The schemas that apply where ``nodes`` do: each, what it refers to, and its branches."""
    applied: list[JsonObject] = []
    todo = list(nodes)
    seen: set[int] = set()
    while todo:
        node = todo.pop()
        if not isinstance(node, dict) or id(node) in seen:
            continue
        seen.add(id(node))
        applied.append(node)
        ref = node.get("$ref")
        if isinstance(ref, str):
            todo.append(_pointer(root, ref))
        for key in _APPLIED:
            branch = node.get(key)
            todo.extend(branch if isinstance(branch, list) else [branch])
    return applied


def _pointer(root: JsonObject, ref: str) -> JsonValue:
    if not ref.startswith("#"):
        return None
    target: JsonValue = root
    for token in ref[1:].split("/")[1:]:
        token = unquote(token).replace("~1", "/").replace("~0", "~")
        if isinstance(target, dict):
            target = target.get(token)
        elif isinstance(target, list) and token.isdigit() and int(token) < len(target):
            target = target[int(token)]
        else:
            return None
    return target
