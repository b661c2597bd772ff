"""JSON value types: what a tool takes and what it answers."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypeAlias

JsonValue: TypeAlias = bool | int | float | str | list["JsonValue"] | dict[str, "JsonValue"] | None
"""Any JSON value as Python reads it with :func:`json.loads`."""

JsonObject: TypeAlias = dict[str, JsonValue]
"""A JSON object: a tool's input, a schema."""

JsonInput: TypeAlias = (
    bool | int | float | str | Sequence["JsonInput"] | Mapping[str, "JsonInput"] | None
)
"""A tool's input as a host gives it: JSON in read-only (covariant) containers, so that a
``dict[str, str]`` or a ``dict[str, list[int]]`` is one, where a :data:`JsonObject` is not."""


def kind(value: object) -> str:
    """What a JSON value is, as a message says it: ``"a string"``, ``"an array"``, ``"null"``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object" if isinstance(value, dict) else type(value).__name__
