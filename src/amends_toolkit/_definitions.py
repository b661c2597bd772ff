"""A tool as data: what a catalog stores and a source reports before anything runs it."""

from __future__ import annotations

from typing import Literal, TypeAlias

import attrs

from amends_toolkit._json import JsonObject, JsonValue

__all__ = ("Annotations", "Decision", "JsonValue", "ToolDefinition")

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


@attrs.frozen(kw_only=True)
class ToolDefinition:
    """A tool: its name, a description, its parameters as a JSON Schema with an object root
    (``input_schema``), and the hints its source gave.

    A definition has no output schema: what a tool answers is JSON the model reads.
    """

    name: str
    description: str
    input_schema: JsonObject = attrs.field(hash=False)
    annotations: Annotations = Annotations()

    @input_schema.validator
    def _check_schema(self, _attribute: object, value: object) -> None:
        if not isinstance(value, dict):
            raise TypeError(f"input_schema of {self.name!r} must be a JSON object (a dict)")
