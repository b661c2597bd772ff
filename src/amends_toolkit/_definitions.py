"""A tool as data: what a catalog stores and a source reports before anything runs it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, TypeAlias

import attrs

from amends_toolkit._json import JsonObject, JsonValue, kind

if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = ("Annotations", "Decision", "JsonValue", "ToolDefinition", "schema_problem")

Decision: TypeAlias = Literal["allow", "approve", "block"]
"""What a host's policy says of a tool: the model may call it, a person must approve each call,
or the model is not shown it."""


@attrs.frozen(kw_only=True)
class Annotations:
    """A source's hints about a tool, each ``None`` when the source did not say.

    They are the source's claims, not guarantees: a policy must not rest on them alone.
    """

    title: str | None = None
    read_only: bool | None = None
    destructive: bool | None = None
    idempotent: bool | None = None
    open_world: bool | None = None


def schema_problem(schema: object) -> str | None:
    """What keeps ``schema`` from being a tool's parameters (a JSON Schema with an object root),
    or ``None``. A schema that names no ``type`` is taken as it is: an input is an object anyway.
    """
    if not isinstance(schema, dict):
        return f"is {kind(schema)}, not a JSON Schema (a dict)"
    if "type" in schema and schema["type"] != "object":
        return (
            f"has the root type {schema['type']!r}: a tool takes a JSON object, so its schema's "
            'root is {"type": "object", "properties": {...}}'
        )
    return None


def _texts(value: Iterable[str]) -> tuple[str, ...]:
    if isinstance(value, str):
        raise TypeError(f"keywords are a list of texts, not one text: give [{value!r}]")
    return tuple(value)


@attrs.frozen(kw_only=True)
class ToolDefinition:
    """A tool: its name, a description, its parameters as a JSON Schema with an object root
    (``input_schema``), the hints its source gave, and ``keywords``: texts a tool search may
    find it by that the model is never shown (the OpenAPI reader gives an operation's path and
    tags; empty when the source says nothing more than the rest).

    A definition has no output schema: what a tool answers is JSON the model reads.
    """

    name: str
    description: str
    input_schema: JsonObject = attrs.field(hash=False)
    annotations: Annotations = attrs.field(default=Annotations())
    keywords: tuple[str, ...] = attrs.field(default=(), converter=_texts)

    @keywords.validator
    def _check_keywords(self, _attribute: object, value: tuple[object, ...]) -> None:
        if not all(isinstance(text, str) for text in value):
            raise TypeError(f"the keywords of {self.name!r} must be strings")

    @input_schema.validator
    def _check_schema(self, _attribute: object, value: object) -> None:
        problem = schema_problem(value)
        if problem is not None:
            raise TypeError(f"the input_schema of {self.name!r} {problem}")

    @annotations.validator
    def _check_annotations(self, _attribute: object, value: object) -> None:
        if not isinstance(value, Annotations):
            raise TypeError(
                f"the annotations of {self.name!r} must be an at.Annotations, not a {type(value).__name__}: "
                "give at.Annotations(read_only=True, ...), or read stored JSON (readOnly, ...) "
                "with at.catalog.load(at.ToolDefinition, data)"
            )
