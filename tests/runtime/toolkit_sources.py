"""In-process tool sources for the toolkit's, the assembly's and the session's tests."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

import anyio

import amends_toolkit as at
from amends_toolkit import JsonObject, JsonValue

OPEN: JsonObject = {"type": "object"}
CLOSED: JsonObject = {
    "type": "object",
    "properties": {"id": {"type": "integer"}, "note": {"type": "string"}},
    "required": ["id"],
    "additionalProperties": False,
}

Behaviour = Callable[[JsonObject], Awaitable[JsonValue]]


def define(
    name: str, schema: JsonObject | None = None, *, read_only: bool | None = None
) -> at.ToolDefinition:
    """A definition with an open schema unless one is given."""
    return at.ToolDefinition(
        name=name,
        description=f"the {name} tool",
        input_schema=OPEN if schema is None else schema,
        annotations=at.Annotations(read_only=read_only),
    )


class Recording:
    """A source that records every call; a tool answers with its name and input unless a
    behaviour is given for it (which may raise, or wait on events)."""

    def __init__(self, name: str, behaviours: dict[str, Behaviour] | None = None) -> None:
        self.name = name
        self.behaviours = behaviours or {}
        self.calls: list[tuple[str, JsonObject]] = []
        self.discovers = 0

    async def discover(self) -> Sequence[at.ToolDefinition]:
        self.discovers += 1
        return [define(tool) for tool in self.behaviours]

    async def call(self, tool: str, input: JsonObject) -> JsonValue:
        self.calls.append((tool, input))
        behaviour = self.behaviours.get(tool)
        if behaviour is None:
            return {"source": self.name, "tool": tool, "input": input}
        return await behaviour(input)


class Untouchable:
    """A source that fails the test if anything reaches it."""

    def __init__(self, name: str) -> None:
        self.name = name

    async def discover(self) -> Sequence[at.ToolDefinition]:
        raise AssertionError("building must not discover")

    async def call(self, tool: str, input: JsonObject) -> JsonValue:
        raise AssertionError("building must not call")


class Gate:
    """A behaviour that waits for ``release``, counting starts and cancellations."""

    def __init__(self, answer: JsonValue = "released") -> None:
        self.answer = answer
        self.release = anyio.Event()
        self.started = anyio.Event()
        self.running = 0
        self.cancelled = 0

    async def __call__(self, input: JsonObject) -> JsonValue:
        self.running += 1
        self.started.set()
        try:
            await self.release.wait()
        except anyio.get_cancelled_exc_class():
            self.cancelled += 1
            raise
        finally:
            self.running -= 1
        return self.answer


def raising(error: BaseException) -> Behaviour:
    """A behaviour that raises this error."""

    async def behaviour(input: JsonObject) -> JsonValue:
        raise error

    return behaviour


def allow_all(source: str, definition: at.ToolDefinition) -> at.Decision:
    return "allow"
