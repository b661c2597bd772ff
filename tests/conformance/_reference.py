"""The three-tool system in one process, a source over it that does everything right, and a fixture.

The deliberately broken sources in ``test_checks.py`` subclass :class:`ReferenceSource`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

import anyio
import anyio.lowlevel

import amends_toolkit as at
from amends_toolkit.conformance import STATES, BlockingCalls, BlockingLog, State

ADDRESS = "https://system.internal:8443/api"
TOKEN = "reference-secret-token"

ECHO = at.ToolDefinition(
    name="echo",
    description="Answers with the text it is given.",
    input_schema={
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"],
        "additionalProperties": False,
    },
    annotations=at.Annotations(read_only=True, idempotent=True),
)
FAILING = at.ToolDefinition(
    name="failing",
    description="Reports that it failed.",
    input_schema={"type": "object", "properties": {}},
)
BLOCKING = at.ToolDefinition(
    name="blocking",
    description="Never answers.",
    input_schema={"type": "object", "properties": {}},
    annotations=at.Annotations(title="Blocking"),
)
DEFINITIONS = (ECHO, FAILING, BLOCKING)


class ReferenceSource:
    """Reaches the system at ``ADDRESS`` with ``TOKEN``, as a source over a client would."""

    def __init__(self, *, name: str, state: State, log: BlockingLog) -> None:
        self.name = name
        self.state = state
        self.log = log

    def reach(self) -> None:
        """Fail as the system in this state makes a source fail (messages are the host's)."""
        if self.state == "unauthorized":
            raise at.AuthenticationError(source=self.name, message=f"{ADDRESS} answered 401")
        if self.state == "unavailable":
            raise at.UnavailableError(source=self.name, message=f"{ADDRESS} answered 503")
        if self.state == "unreachable":
            raise at.UnavailableError(source=self.name, message=f"nothing listens at {ADDRESS}")

    async def discover(self) -> Sequence[at.ToolDefinition]:
        await anyio.lowlevel.checkpoint()
        self.reach()
        return list(DEFINITIONS)

    async def call(self, tool: str, input: at.JsonObject) -> at.JsonValue:
        await anyio.lowlevel.checkpoint()
        self.reach()
        if tool == "echo":
            return await self.echo(input)
        if tool == "failing":
            raise at.CallFailedError(
                source=self.name, message="The tool failed, as it always does."
            )
        if tool == "blocking":
            return await self.blocking()
        raise at.NotFoundError(source=self.name, message=f"{ADDRESS} has no tool {tool!r}")

    async def echo(self, input: at.JsonObject) -> at.JsonValue:
        text = input.get("text")
        if not isinstance(text, str):
            raise at.InvalidInputError(source=self.name, message="text must be a string")
        return {"text": text}

    async def blocking(self) -> at.JsonValue:
        with self.log.call():
            await anyio.sleep_forever()
        return None


class ReferenceFixture:
    """Makes ``source_class`` over the in-process system, in every state."""

    states: Sequence[State] = STATES
    secrets: Sequence[str] = (ADDRESS, "system.internal", TOKEN)

    def __init__(self, source_class: type[ReferenceSource] = ReferenceSource) -> None:
        self.source_class = source_class
        self.log = BlockingLog()

    def blocking_calls(self) -> BlockingCalls:
        return self.log.counts()

    @asynccontextmanager
    async def source(self, state: State) -> AsyncIterator[at.ToolSource]:
        yield self.source_class(name="reference", state=state, log=self.log)
