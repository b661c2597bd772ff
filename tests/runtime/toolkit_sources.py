"""In-process tool sources for the toolkit's, the assembly's and the session's tests: the
shipped kit (:mod:`amends_toolkit.testing`), and what only these tests need."""

from __future__ import annotations

from collections.abc import Sequence

import amends_toolkit as at
from amends_toolkit import JsonObject, JsonValue
from amends_toolkit.testing import OPEN, Behaviour, Gate, allow_all, define, raising
from amends_toolkit.testing import RecordingSource as Recording

__all__ = (
    "CLOSED",
    "OPEN",
    "Behaviour",
    "Gate",
    "Recording",
    "Untouchable",
    "allow_all",
    "define",
    "raising",
)

CLOSED: JsonObject = {
    "type": "object",
    "properties": {"id": {"type": "integer"}, "note": {"type": "string"}},
    "required": ["id"],
    "additionalProperties": False,
}


class Untouchable:
    """A source that fails the test if anything reaches it."""

    def __init__(self, name: str) -> None:
        self.name = name

    async def discover(self) -> Sequence[at.ToolDefinition]:
        raise AssertionError("building must not discover")

    async def call(self, tool: str, input: JsonObject) -> JsonValue:
        raise AssertionError("building must not call")
