"""Declarations: the tools of code mode written as Python stubs from their JSON Schemas.

What a model reads of ``execute`` declares each tool it may call from code as an ``async def``
method of ``Tools`` taking one ``TypedDict``: the properties an input has, which it requires
(``NotRequired`` marks the others), the values an enum or a ``const`` allows (``Literal``),
lists, maps and nested objects (a ``TypedDict`` of their own), and each description as a
comment or a docstring. What a type cannot say is ``Any``: a cyclic schema (at the ``$ref`` that
closes the cycle), a value nested more than :data:`MAX_DEPTH` levels, a ``$ref`` that is not a
pointer into the schema itself, and the keywords a stub has no words for (``not``, ``if``).
"""

from __future__ import annotations

import json
import keyword
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    from amends_toolkit._json import JsonObject, JsonValue
    from amends_toolkit.runtime import Tool

__all__ = ("MAX_DEPTH", "declare", "identifier")

MAX_DEPTH = 6
"""How deep a value's type is written; a value nested deeper is ``Any``."""

_SCALARS = {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "null": "None"}
_WORD = re.compile(r"[A-Za-z0-9]+")


def identifier(name: str) -> str:
    """The attribute a tool is called by in code: its name with ``-`` as ``_``.

    A name that would then start with a digit or be a Python keyword gets a leading ``_``. Two
    names that meet here keep the attribute for the first; every tool is also ``tools["<name>"]``.
    """
    attribute = name.replace("-", "_")
    if not attribute.isidentifier() or keyword.iskeyword(attribute):
        attribute = f"_{attribute}"
    return attribute


def declare(tools: Sequence[tuple[str, Tool]]) -> str:
    """The Python stubs of ``tools``, each an ``(attribute, tool)`` pair, as one text."""
    writer = _Writer()
    methods: list[str] = []
    for attribute, tool in tools:
        input_type = writer.object_type(_pascal(attribute) + "Input", tool.input_schema)
        doc = tool.description.strip()
        if tool.name != attribute:
            doc = f'{doc}\n\nAlso tools["{tool.name}"].'.strip()
        methods.append(
            f"    async def {attribute}(self, input: {input_type}, /) -> Any:\n{_docstring(doc, 8)}"
        )
    methods.append("    def __getitem__(self, name: str, /) -> Any: ...")
    body = "\n\n".join(methods)
    parts = [
        "from typing import Any, Literal, NotRequired, TypedDict",
        *writer.classes,
        "class ToolError(Exception):\n"
        '    """A tool call that failed; str(error) is "<code>: <message>"."""\n',
        "class Tools:\n"
        '    """The tools; tools["<name>"] is each one too, by its exact name."""\n\n'
        + body
        + "\n",
        "tools: Tools\n",
    ]
    return "\n\n".join(parts)


class _Writer:
    """Writes each shape of TypedDict once, under a name unique within one declaration."""

    def __init__(self) -> None:
        self.classes: list[str] = []
        self.shapes: dict[tuple[str, tuple[tuple[str, str, str], ...]], str] = {}
        self._names: set[str] = set()

    def object_type(self, name: str, schema: JsonObject) -> str:
        return _Schema(self, schema).object_class(name, schema, (), 0)

    def unique(self, name: str) -> str:
        if not name.isidentifier():
            name = f"T{name}"
        candidate, n = name, 2
        while candidate in self._names or keyword.iskeyword(candidate):
            candidate, n = f"{name}{n}", n + 1
        self._names.add(candidate)
        return candidate


class _Schema:
    """One tool's schema: ``$ref``s resolve against its root."""

    def __init__(self, writer: _Writer, root: JsonObject) -> None:
        self._writer = writer
        self._root = root

    def type_of(self, name: str, schema: JsonValue, refs: tuple[str, ...], depth: int) -> str:
        if depth > MAX_DEPTH or not isinstance(schema, dict):
            return "Any"  # true, {} and false say nothing a type can
        if "$ref" in schema:
            ref = schema["$ref"]
            target = self._resolve(ref)
            if not isinstance(ref, str) or target is None or ref in refs:
                return "Any"  # not a pointer into the schema, or a cycle closing
            return self.type_of(name, target, (*refs, ref), depth)
        if "const" in schema:
            return _literal([schema["const"]])
        enum = schema.get("enum")
        if isinstance(enum, list) and enum:
            return _literal(enum)
        for key in ("anyOf", "oneOf"):
            options = schema.get(key)
            if isinstance(options, list) and options:
                return _union(
                    self.type_of(f"{name}{n}" if n else name, option, refs, depth)
                    for n, option in enumerate(options)
                )
        all_of = schema.get("allOf")
        if isinstance(all_of, list) and len(all_of) == 1:
            return self.type_of(name, all_of[0], refs, depth)
        if all_of is not None:
            return "Any"
        kind = schema.get("type")
        if isinstance(kind, list):
            return _union(
                self.type_of(name, {**schema, "type": each}, refs, depth) for each in kind
            )
        if kind is None and "properties" in schema:
            kind = "object"
        if isinstance(kind, str) and kind in _SCALARS:
            return _SCALARS[kind]
        if kind == "array":
            items = schema.get("items")
            if isinstance(items, dict):
                return f"list[{self.type_of(name + 'Item', items, refs, depth + 1)}]"
            return "list[Any]"
        if kind == "object":
            properties = schema.get("properties")
            if isinstance(properties, dict) and properties:
                return self.object_class(name, schema, refs, depth)
            extra = schema.get("additionalProperties")
            if isinstance(extra, dict):
                return f"dict[str, {self.type_of(name + 'Value', extra, refs, depth + 1)}]"
            return "dict[str, Any]"
        return "Any"

    def object_class(self, name: str, schema: JsonObject, refs: tuple[str, ...], depth: int) -> str:
        properties = schema.get("properties")
        required = schema.get("required")
        needed = (
            {key for key in required if isinstance(key, str)}
            if isinstance(required, list)
            else set()
        )
        fields: list[tuple[str, str, str]] = []
        if isinstance(properties, dict):
            for key, value in properties.items():
                kind = self.type_of(name + _pascal(key), value, refs, depth + 1)
                if key not in needed:
                    kind = f"NotRequired[{kind}]"
                fields.append((key, kind, _describe(value)))
        if not fields:
            return "dict[str, Any]"
        description = schema.get("description")
        doc = description.strip() if isinstance(description, str) else ""
        # a shape written once serves every tool that has it (a $ref shared in a document)
        shape = (doc, tuple(fields))
        written = self._writer.shapes.get(shape)
        if written is not None:
            return written
        class_name = self._writer.unique(name)
        self._writer.shapes[shape] = class_name
        if all(key.isidentifier() and not keyword.iskeyword(key) for key, _, _ in fields):
            lines = [f"class {class_name}(TypedDict):"]
            if doc:
                lines.append(_docstring(doc, 4).rstrip("\n"))
            for key, kind, note in fields:
                lines.extend(f"    # {line}" for line in note.splitlines())
                lines.append(f"    {key}: {kind}")
        else:
            # keys that are no identifiers only fit TypedDict's functional form
            lines = [f"# {line}" for line in doc.splitlines()]
            lines.append(f"{class_name} = TypedDict({class_name!r}, {{")
            for key, kind, note in fields:
                lines.extend(f"    # {line}" for line in note.splitlines())
                lines.append(f"    {json.dumps(key)}: {kind},")
            lines.append("})")
        self._writer.classes.append("\n".join(lines) + "\n")
        return class_name

    def _resolve(self, ref: JsonValue) -> JsonValue | None:
        if not isinstance(ref, str) or not ref.startswith("#"):
            return None
        node: JsonValue = self._root
        for part in ref[1:].split("/")[1:] if ref != "#" else []:
            part = part.replace("~1", "/").replace("~0", "~")
            if isinstance(node, dict) and part in node:
                node = node[part]
            elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            else:
                return None
        return node


def _describe(schema: JsonValue) -> str:
    if not isinstance(schema, dict):
        return ""
    notes: list[str] = []
    description = schema.get("description")
    if isinstance(description, str) and description.strip():
        notes.append(description.strip())
    if "default" in schema:
        notes.append(f"Default: {json.dumps(schema['default'])}.")
    return "\n".join(notes)


def _literal(values: list[JsonValue]) -> str:
    written: list[str] = []
    for value in values:
        if value is None or isinstance(value, bool | int | float | str):
            written.append(repr(value))
        else:
            return "Any"  # a Literal holds only scalars
    return f"Literal[{', '.join(written)}]"


def _union(kinds: Iterator[str]) -> str:
    unique: list[str] = []
    for kind in kinds:
        if kind == "Any":
            return "Any"
        if kind not in unique:
            unique.append(kind)
    return " | ".join(unique)


def _pascal(name: str) -> str:
    return "".join(word[:1].upper() + word[1:] for word in _WORD.findall(name)) or "Tool"


def _docstring(text: str, indent: int) -> str:
    pad = " " * indent
    if not text:
        return f'{pad}"""(no description)"""\n'
    text = text.replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    lines = text.splitlines()
    if len(lines) == 1:
        return f'{pad}"""{lines[0]}"""\n'
    body = "\n".join(f"{pad}{line}" if line else "" for line in lines)
    return f'{pad}"""\n{body}\n{pad}"""\n'
