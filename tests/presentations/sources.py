"""In-process tool sources for the presentations' tests."""

from __future__ import annotations

from collections.abc import Sequence

import amends_toolkit as at
from amends_toolkit import JsonObject, JsonValue
from amends_toolkit.testing import OPEN, Behaviour, allow_all

__all__ = ("ID", "OPEN", "Behaviour", "Recording", "allow_all", "define")

ID: JsonObject = {
    "type": "object",
    "properties": {"id": {"type": "integer"}},
    "required": ["id"],
    "additionalProperties": False,
}


def define(name: str, description: str = "", schema: JsonObject | None = None) -> at.ToolDefinition:
    return at.ToolDefinition(
        name=name,
        description=description or f"the {name} tool",
        input_schema=OPEN if schema is None else schema,
    )


class Recording:
    """A source that records every call; a tool answers with its name and input unless a
    behaviour is given for it (which may raise)."""

    def __init__(self, name: str, behaviours: dict[str, Behaviour] | None = None) -> None:
        self.name = name
        self.behaviours = behaviours or {}
        self.calls: list[tuple[str, JsonObject]] = []

    async def discover(self) -> Sequence[at.ToolDefinition]:
        raise AssertionError("presentations never discover")

    async def call(self, tool: str, input: JsonObject) -> JsonValue:
        self.calls.append((tool, input))
        behaviour = self.behaviours.get(tool)
        if behaviour is None:
            return {"tool": tool, "input": input}
        return await behaviour(input)
