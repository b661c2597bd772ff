"""The toolkit the agent-framework examples share: a source of notes, whose `delete_note` needs a
person's approval."""

from __future__ import annotations

import amends_toolkit as at
from amends_toolkit import JsonObject, JsonValue

NOTE: JsonObject = {
    "type": "object",
    "properties": {"text": {"type": "string"}},
    "required": ["text"],
}
DEFINITIONS = [
    at.ToolDefinition(
        name="list_notes", description="List the notes.", input_schema={"type": "object"}
    ),
    at.ToolDefinition(name="delete_note", description="Delete a note.", input_schema=NOTE),
]


class Notes:
    """An in-process source: what an MCP server or an HTTP API is to a real toolkit."""

    name = "notes"

    def __init__(self) -> None:
        self.notes = ["buy milk", "call Ada"]

    async def discover(self) -> list[at.ToolDefinition]:
        return DEFINITIONS

    async def call(self, tool: str, input: JsonObject) -> JsonValue:
        if tool == "list_notes":
            return list(self.notes)
        self.notes.remove(str(input["text"]))
        return "deleted"


def notes_toolkit(notes: Notes) -> at.Toolkit:
    return at.assemble(
        [at.Member(notes, DEFINITIONS)],
        lambda source, definition: "approve" if definition.name == "delete_note" else "allow",
    )
