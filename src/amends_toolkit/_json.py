"""JSON value types: what a tool takes and what it answers."""

from __future__ import annotations

from typing import TypeAlias, Union

JsonValue: TypeAlias = Union[  # noqa: UP007 - a recursive alias must be evaluable at run time
    None, bool, int, float, str, list["JsonValue"], dict[str, "JsonValue"]
]
"""Any JSON value as Python reads it with :func:`json.loads`."""

JsonObject: TypeAlias = dict[str, JsonValue]
"""A JSON object: a tool's input, a schema."""
