"""OpenAPI schemas made JSON Schema 2020-12 that stands alone.

A schema of the document becomes one a validator reads without the document: each reference to
a schema of the document (``#/components/schemas/Name``) points under ``$defs``, where the schemas
it reaches are copied (cycles are fine: a reference is only a name). What OpenAPI 3.0 says
differently is said as 3.1 does, in documents of either version, since 3.1 documents written from
3.0 ones keep ``nullable``:

- ``nullable: true`` adds ``"null"`` to ``type`` (and ``null`` to ``enum``), or allows null beside
  a reference or a composition (``anyOf: [..., {"type": "null"}]``); a schema that says nothing
  but ``nullable: true`` is ``{"type": "null"}``, as the generators that write it mean;
- a boolean ``exclusiveMinimum``/``exclusiveMaximum`` becomes the number it qualifies;
- ``example`` becomes ``examples``; an ``items`` list becomes ``prefixItems``;
- in 3.0 a ``$ref`` has no siblings but a title or a description (3.0 ignores the rest);
- a required property that is ``readOnly`` is not required of a request;
- ``$ref: '#/components/schemas/Name/properties'`` among a schema's ``properties`` (a common
  mistake for "Name's properties too", as Meilisearch's ``multi_search`` writes it) merges
  Name's properties in, as its author meant; any other property named ``$ref`` (a schema of its
  own, a reference to a whole schema, a name both there and here with another schema) raises
  :class:`Unreadable`, so no tool offers a property named ``$ref``.

Only JSON Schema keywords with values of the right kind are kept, so the result is valid
2020-12 whatever the document holds: OpenAPI's own keywords (``discriminator``, ``xml``,
``externalDocs``), extensions (``x-...``), identifiers (``$id``, ``$anchor``) and a pattern that
does not compile are left out. A reference to anything but a schema of the document raises
:class:`Unreadable`.
"""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING, Literal, TypeAlias
from urllib.parse import unquote

import jsonschema_rs

from amends_toolkit._schema_keywords import NAMED_SCHEMAS, ONE_SCHEMA, PATTERN_SCHEMAS, SCHEMA_LISTS

if TYPE_CHECKING:
    from amends_toolkit._json import JsonObject, JsonValue

__all__ = ("MAX_DEPTH", "SchemaReader", "SkipReason", "Unreadable")

SkipReason: TypeAlias = Literal[
    "body_not_json",
    "parameter_style",
    "object_parameter",
    "cookie_parameter",
    "header_parameter",
    "path_mismatch",
    "reference",
    "duplicate_name",
    "invalid",
]
"""Why an operation cannot be a tool."""

MAX_DEPTH = 64
"""How deeply one schema may nest (references do not count): deeper is unreadable."""

_SCHEMAS_PREFIX = "#/components/schemas/"
_PROPERTIES_SUFFIX = "/properties"
_TYPES = frozenset({"null", "boolean", "object", "array", "number", "string", "integer"})
_SCHEMA_MAPS = NAMED_SCHEMAS | PATTERN_SCHEMAS
_NUMBERS = ("maximum", "minimum")
_COUNTS = (
    "maxLength",
    "minLength",
    "maxItems",
    "minItems",
    "maxProperties",
    "minProperties",
    "maxContains",
    "minContains",
)
_STRINGS = ("title", "description", "format", "$comment", "contentMediaType", "contentEncoding")
_BOOLEANS = ("uniqueItems", "deprecated", "readOnly", "writeOnly")
# Kept on the outside when a nullable reference or composition is wrapped in anyOf.
_ANNOTATIONS = (
    "title",
    "description",
    "default",
    "examples",
    "deprecated",
    "readOnly",
    "writeOnly",
)
_DEF_NAME = re.compile(r"[A-Za-z0-9_.-]+")


class Unreadable(Exception):
    """An operation that cannot be a tool, and why (``reason``, ``detail``)."""

    def __init__(self, reason: SkipReason, detail: str) -> None:
        super().__init__(detail)
        self.reason: SkipReason = reason
        self.detail = detail


@functools.lru_cache(maxsize=4096)
def _pattern_compiles(pattern: str) -> bool:
    try:
        jsonschema_rs.validator_for({"pattern": pattern}, offline=True)
    except Exception:  # noqa: BLE001 - any pattern the validator cannot compile is left out
        return False
    return True


def _number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


class SchemaReader:
    """Reads the schemas of one document; a component is converted once for all operations."""

    def __init__(self, document: JsonObject, *, legacy: bool) -> None:
        self._legacy = legacy
        components = document.get("components")
        schemas = components.get("schemas") if isinstance(components, dict) else None
        self._components: JsonObject = schemas if isinstance(schemas, dict) else {}
        self._def_names = _def_names(list(self._components))
        self._converted: dict[str, tuple[JsonValue, frozenset[str]] | Unreadable] = {}

    def schema(self, value: JsonValue) -> tuple[JsonValue, set[str]]:
        """A schema as 2020-12, and the names of the components it refers to.

        Raises:
            Unreadable: a reference that is not to a schema of the document, or a schema nested
                more than :data:`MAX_DEPTH` levels.
        """
        refs: set[str] = set()
        return self._node(value, 0, refs), refs

    def defs(self, names: set[str]) -> JsonObject:
        """``$defs`` for the components named and every one they reach, by their keys.

        Raises:
            Unreadable: a component reached cannot be read.
        """
        defs: JsonObject = {}
        todo = sorted(names)
        seen = set(todo)
        while todo:
            name = todo.pop()
            converted = self._component(name)
            if isinstance(converted, Unreadable):
                raise Unreadable(converted.reason, f"schema {name!r}: {converted.detail}")
            schema, reached = converted
            defs[self._def_names[name]] = schema
            for other in sorted(reached - seen):
                seen.add(other)
                todo.append(other)
        return dict(sorted(defs.items()))

    def resolve(self, value: JsonValue) -> JsonValue:
        """A schema with its references followed (to see its type), or ``{}`` for a cycle."""
        seen: set[str] = set()
        while isinstance(value, dict) and isinstance(value.get("$ref"), str):
            name = self._component_name(str(value["$ref"]))
            if name is None or name in seen:
                return {}
            seen.add(name)
            value = self._components[name]
        return value

    def properties(self, value: JsonObject) -> JsonObject:
        """A schema's ``properties``, as the document writes them, with another schema's
        merged in where a ``$ref`` among them names its properties; ``{}`` when it has none.

        Raises:
            Unreadable: a property named ``$ref`` that is not such a reference, or one whose
                properties clash with these or merge in themselves.
        """
        properties = value.get("properties")
        return self._merged(properties, frozenset()) if isinstance(properties, dict) else {}

    def _merged(self, properties: JsonObject, merging: frozenset[str]) -> JsonObject:
        if "$ref" not in properties:
            return properties
        ref = properties["$ref"]
        name = (
            self._component_name(ref.removesuffix(_PROPERTIES_SUFFIX))
            if isinstance(ref, str) and ref.endswith(_PROPERTIES_SUFFIX)
            else None
        )
        component = self._components.get(name) if name is not None else None
        inner = component.get("properties") if isinstance(component, dict) else None
        if name is None or not isinstance(inner, dict) or name in merging:
            raise Unreadable(
                "reference",
                "a property is named '$ref', and is no reference to a schema's properties"
                " of this document",
            )
        merged = {key: one for key, one in properties.items() if key != "$ref"}
        for key, one in self._merged(inner, merging | {name}).items():
            if merged.setdefault(key, one) != one:
                raise Unreadable(
                    "reference",
                    f"property {key!r} is both beside '$ref' and in {name!r}, as another schema",
                )
        return merged

    def _component(self, name: str) -> tuple[JsonValue, frozenset[str]] | Unreadable:
        cached = self._converted.get(name)
        if cached is None:
            try:
                schema, refs = self.schema(self._components[name])
                cached = (schema, frozenset(refs))
            except Unreadable as error:
                cached = error
            self._converted[name] = cached
        return cached

    def _component_name(self, ref: str) -> str | None:
        if not ref.startswith(_SCHEMAS_PREFIX):
            return None
        token = unquote(ref[len(_SCHEMAS_PREFIX) :])
        if "/" in token:
            return None
        name = token.replace("~1", "/").replace("~0", "~")
        return name if name in self._components else None

    def _ref(self, ref: str, refs: set[str]) -> str:
        name = self._component_name(ref)
        if name is None:
            raise Unreadable("reference", f"{ref!r} is not a schema of this document")
        refs.add(name)
        return "#/$defs/" + self._def_names[name]

    def _node(self, value: JsonValue, depth: int, refs: set[str]) -> JsonValue:
        if isinstance(value, bool):
            return value
        if not isinstance(value, dict):
            # Not a schema at all: it constrains nothing, as an empty schema would.
            return {}
        if depth > MAX_DEPTH:
            raise Unreadable("invalid", f"a schema is nested more than {MAX_DEPTH} levels deep")
        out: JsonObject = {}
        ref = value.get("$ref")
        if isinstance(ref, str):
            out["$ref"] = self._ref(ref, refs)
            if self._legacy:
                for key in ("title", "description"):
                    if isinstance(value.get(key), str):
                        out[key] = value[key]
                return self._nullable(value, out)
        for key, item in value.items():
            self._keyword(key, item, value, out, depth, refs)
        if "examples" not in out and "example" in value:
            out["examples"] = [value["example"]]
        if isinstance(out.get("required"), list) and isinstance(value.get("properties"), dict):
            properties = value["properties"]
            assert isinstance(properties, dict)
            out["required"] = [
                name
                for name in out["required"]  # type: ignore[union-attr]
                if not (
                    isinstance(properties.get(str(name)), dict)
                    and properties[str(name)].get("readOnly") is True  # type: ignore[union-attr]
                )
            ]
        return self._nullable(value, out)

    def _keyword(
        self,
        key: str,
        item: JsonValue,
        value: JsonObject,
        out: JsonObject,
        depth: int,
        refs: set[str],
    ) -> None:
        deeper = depth + 1
        if key == "$ref":
            return
        if key == "type":
            if (isinstance(item, str) and item in _TYPES) or (
                isinstance(item, list)
                and item
                and all(isinstance(t, str) and t in _TYPES for t in item)
                and len({str(t) for t in item}) == len(item)
            ):
                out[key] = item
        elif key == "items":
            if isinstance(item, list):
                if item and "prefixItems" not in value:
                    out["prefixItems"] = [self._node(one, deeper, refs) for one in item]
            else:
                out[key] = self._node(item, deeper, refs)
        elif key in ONE_SCHEMA:
            out[key] = self._node(item, deeper, refs)
        elif key in SCHEMA_LISTS:
            if isinstance(item, list) and item:
                out[key] = [self._node(one, deeper, refs) for one in item]
        elif key in _SCHEMA_MAPS:
            if isinstance(item, dict):
                if key == "properties":
                    item = self.properties(value)
                out[key] = {
                    name: self._node(one, deeper, refs)
                    for name, one in item.items()
                    if key != "patternProperties" or _pattern_compiles(name)
                }
        elif key in ("exclusiveMinimum", "exclusiveMaximum"):
            bound = value.get("minimum" if key == "exclusiveMinimum" else "maximum")
            if _number(item):
                out[key] = item
            elif item is True and _number(bound):
                out[key] = bound
        elif key in _NUMBERS:
            exclusive = value.get("exclusiveMinimum" if key == "minimum" else "exclusiveMaximum")
            if _number(item) and exclusive is not True:
                out[key] = item
        elif key == "multipleOf":
            if _number(item) and item > 0:  # type: ignore[operator]
                out[key] = item
        elif key in _COUNTS:
            if _count(item):
                out[key] = item
        elif key in _STRINGS:
            if isinstance(item, str):
                out[key] = item
        elif key == "pattern":
            if isinstance(item, str) and _pattern_compiles(item):
                out[key] = item
        elif key in _BOOLEANS:
            if isinstance(item, bool):
                out[key] = item
        elif key == "required":
            if isinstance(item, list):
                out[key] = list(dict.fromkeys(name for name in item if isinstance(name, str)))
        elif key == "dependentRequired":
            if isinstance(item, dict):
                out[key] = {
                    name: list(dict.fromkeys(n for n in names if isinstance(n, str)))
                    for name, names in item.items()
                    if isinstance(names, list)
                }
        elif key in ("enum", "examples"):
            if isinstance(item, list):
                out[key] = item
        elif key in ("const", "default"):
            out[key] = item

    def _nullable(self, value: JsonObject, out: JsonObject) -> JsonValue:
        if value.get("nullable") is not True:
            return out
        if any(key in out for key in ("$ref", "allOf", "anyOf", "oneOf", "not")):
            outer: JsonObject = {key: out.pop(key) for key in _ANNOTATIONS if key in out}
            outer["anyOf"] = [out, {"type": "null"}]
            return outer
        kind = out.get("type")
        if set(out) <= {*_ANNOTATIONS, "format"}:
            # A schema that says nothing but nullable means null where it is written
            # (anyOf: [{$ref: Filter}, {nullable: true}]); as {} it would allow anything.
            out["type"] = "null"
        elif isinstance(kind, str) and kind != "null":
            out["type"] = [kind, "null"]
        elif isinstance(kind, list) and "null" not in kind:
            out["type"] = [*kind, "null"]
        enum = out.get("enum")
        if isinstance(enum, list) and None not in enum:
            out["enum"] = [*enum, None]
        return out


def _def_names(names: list[str]) -> dict[str, str]:
    # $defs keys a reference can name as they are, in the characters agents accept.
    taken: set[str] = set()
    keys: dict[str, str] = {}
    for name in names:
        base = name if _DEF_NAME.fullmatch(name) else re.sub(r"[^A-Za-z0-9_.-]", "_", name) or "_"
        key, n = base, 2
        while key in taken:
            key, n = f"{base}_{n}", n + 1
        taken.add(key)
        keys[name] = key
    return keys
