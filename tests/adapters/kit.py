"""A small toolkit over an in-process source, for the adapters' tests."""

from __future__ import annotations

import json
from collections.abc import Sequence

import anyio
import httpx2

import amends_toolkit as at
from amends_toolkit import JsonObject, JsonValue

ECHO_SCHEMA: JsonObject = {
    "type": "object",
    "properties": {"text": {"type": "string"}},
    "required": ["text"],
    "additionalProperties": False,
}


class Recorder:
    """A model API on a MockTransport: records each request body and answers from a script."""

    def __init__(self, *answers: JsonObject) -> None:
        self.answers = list(answers)
        self.requests: list[JsonObject] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(json.loads(request.content))
        return httpx2.Response(200, json=self.answers.pop(0))


class Source:
    """``echo`` answers ``{"echo": text}``; ``upper`` answers a string; ``fail`` raises
    CallFailedError; ``wait`` waits for ``release``; ``delete`` answers ``"deleted"``."""

    name = "s"

    def __init__(self) -> None:
        self.calls: list[tuple[str, JsonObject]] = []
        self.release = anyio.Event()
        self.waiting = 0

    async def discover(self) -> Sequence[at.ToolDefinition]:
        return DEFINITIONS

    async def call(self, tool: str, input: JsonObject) -> JsonValue:
        self.calls.append((tool, input))
        if tool == "echo":
            return {"echo": input["text"]}
        if tool == "upper":
            return str(input.get("text", "")).upper()
        if tool == "fail":
            raise at.CallFailedError(source=self.name, message="the row is locked")
        if tool == "wait":
            self.waiting += 1
            await self.release.wait()
            return "released"
        return "deleted"


DEFINITIONS = [
    at.ToolDefinition(name="echo", description="Echo the text.", input_schema=ECHO_SCHEMA),
    at.ToolDefinition(name="upper", description="Shout.", input_schema={"type": "object"}),
    at.ToolDefinition(name="fail", description="Always fails.", input_schema={"type": "object"}),
    at.ToolDefinition(name="wait", description="Waits.", input_schema={"type": "object"}),
    at.ToolDefinition(name="delete", description="Deletes.", input_schema={"type": "object"}),
]


def toolkit(source: Source) -> at.Toolkit:
    """echo, upper, fail and wait allowed; delete needs approval."""
    return at.assemble(
        [at.Member(source, DEFINITIONS)],
        lambda _, d: "approve" if d.name == "delete" else "allow",
    )


def approve_all(name: str, input: JsonObject) -> bool:
    return True
