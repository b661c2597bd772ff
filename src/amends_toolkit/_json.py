"""JSON value types: what a tool takes and what it answers."""

from __future__ import annotations

from typing import TypeAlias

JsonValue: TypeAlias = bool | int | float | str | list["JsonValue"] | dict[str, "JsonValue"] | None
"""Any JSON value as Python reads it with :func:`json.loads`."""

JsonObject: TypeAlias = dict[str, JsonValue]
"""A JSON object: a tool's input, a schema."""
