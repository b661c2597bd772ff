"""Deliberately broken sources: each does one thing wrong, which one check is meant to catch."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import cast

import anyio
import anyio.abc

import amends_toolkit as at

from ._reference import ADDRESS, DEFINITIONS, ECHO, TOKEN, ReferenceSource


class LeaksAddressInFailure(ReferenceSource):
    async def call(self, tool: str, input: at.JsonObject) -> at.JsonValue:
        if tool == "failing" and self.state == "working":
            raise at.CallFailedError(source=self.name, message=f"{ADDRESS}/failing failed")
        return await super().call(tool, input)


class LeaksTokenInAnswer(ReferenceSource):
    async def echo(self, input: at.JsonObject) -> at.JsonValue:
        return {"text": input["text"], "sentWith": f"Bearer {TOKEN}"}


class LeaksAddressInDefinitions(ReferenceSource):
    async def discover(self) -> Sequence[at.ToolDefinition]:
        definitions = list(await super().discover())
        definitions[0] = at.ToolDefinition(
            name="echo", description=f"Echo, served at {ADDRESS}.", input_schema=ECHO.input_schema
        )
        return definitions


class DetachesBlockingCall(ReferenceSource):
    """Leaves the system running the call when its caller is cancelled."""

    tasks: anyio.abc.TaskGroup

    async def blocking(self) -> at.JsonValue:
        answered = anyio.Event()

        async def on_the_system() -> None:
            with self.log.call():
                await anyio.sleep_forever()

        self.tasks.start_soon(on_the_system)
        await answered.wait()
        return None


class TurnsCancellationIntoAnError(ReferenceSource):
    async def blocking(self) -> at.JsonValue:
        try:
            return await super().blocking()
        except anyio.get_cancelled_exc_class():
            raise at.UnavailableError(source=self.name, message="cancelled") from None


class NeverReachesTheSystem(ReferenceSource):
    async def blocking(self) -> at.JsonValue:
        await anyio.sleep_forever()
        return None


class UnknownToolIsADefect(ReferenceSource):
    async def call(self, tool: str, input: at.JsonObject) -> at.JsonValue:
        handlers = {"echo": self.echo}
        if tool in ("failing", "blocking"):
            return await super().call(tool, input)
        return await handlers[tool](input)


class UnknownToolIsUnknownError(ReferenceSource):
    async def call(self, tool: str, input: at.JsonObject) -> at.JsonValue:
        if tool not in ("echo", "failing", "blocking"):
            raise at.UnknownError(source=self.name)
        return await super().call(tool, input)


class DefinitionsChange(ReferenceSource):
    listed = 0

    async def discover(self) -> Sequence[at.ToolDefinition]:
        DefinitionsChange.listed += 1
        definitions = list(await super().discover())
        definitions[1] = at.ToolDefinition(
            name="failing",
            description=f"Listed {DefinitionsChange.listed} times.",
            input_schema={"type": "object"},
        )
        return definitions


class RepeatsAName(ReferenceSource):
    async def discover(self) -> Sequence[at.ToolDefinition]:
        return [*await super().discover(), ECHO]


class SchemaIsNotJson(ReferenceSource):
    async def discover(self) -> Sequence[at.ToolDefinition]:
        schema = cast(at.JsonObject, {"type": "object", "properties": {"enum": {"a", "b"}}})
        return [
            at.ToolDefinition(name="echo", description="", input_schema=schema),
            *DEFINITIONS[1:],
        ]


class SchemaHasNoObjectRoot(ReferenceSource):
    async def discover(self) -> Sequence[at.ToolDefinition]:
        # No root type: a definition takes it (an input is an object anyway); the check does not.
        schema: at.JsonObject = {"properties": {"text": {"type": "string"}}}
        return [
            at.ToolDefinition(name="echo", description="", input_schema=schema),
            *DEFINITIONS[1:],
        ]


class AnswersNotJson(ReferenceSource):
    async def echo(self, input: at.JsonObject) -> at.JsonValue:
        return ("text", input["text"])  # type: ignore[return-value]


class AnswersAnotherCall(ReferenceSource):
    """Keeps the text of the last call on the source, where the next call overwrites it."""

    last: at.JsonValue = None

    async def echo(self, input: at.JsonObject) -> at.JsonValue:
        AnswersAnotherCall.last = input["text"]
        await anyio.sleep(0.01)
        return {"text": AnswersAnotherCall.last}


class FailureIsAnAnswer(ReferenceSource):
    async def call(self, tool: str, input: at.JsonObject) -> at.JsonValue:
        if tool == "failing" and self.state == "working":
            return {"error": "The tool failed."}
        return await super().call(tool, input)


class NamesAnotherSource(ReferenceSource):
    async def call(self, tool: str, input: at.JsonObject) -> at.JsonValue:
        try:
            return await super().call(tool, input)
        except at.CallFailedError as error:
            raise at.CallFailedError(source="http", message=error.message) from None


class StuckAfterAFailure(ReferenceSource):
    broken = False

    async def call(self, tool: str, input: at.JsonObject) -> at.JsonValue:
        if StuckAfterAFailure.broken:
            raise at.UnavailableError(source=self.name)
        try:
            return await super().call(tool, input)
        except at.CallFailedError:
            StuckAfterAFailure.broken = True
            raise


class RefusedCredentialsAreUnavailable(ReferenceSource):
    def reach(self) -> None:
        if self.state == "unauthorized":
            raise at.UnavailableError(source=self.name, message="401")
        super().reach()


class DiscoverIgnoresRefusal(ReferenceSource):
    """Asks the system for its tools, and answers none when it is refused."""

    async def discover(self) -> Sequence[at.ToolDefinition]:
        if self.state == "unauthorized":
            return []
        return await super().discover()


class DownIsNotRetryable(ReferenceSource):
    def reach(self) -> None:
        if self.state == "unavailable":
            raise at.InvalidResponseError(source=self.name, message="503")
        super().reach()


class UnreachableIsARawError(ReferenceSource):
    def reach(self) -> None:
        if self.state == "unreachable":
            raise ConnectionRefusedError(f"{ADDRESS}: connection refused")
        super().reach()


class UnreachableDiscoverIsADefect(ReferenceSource):
    async def discover(self) -> Sequence[at.ToolDefinition]:
        if self.state == "unreachable":
            raise at.UnknownError(source=self.name)
        return await super().discover()


class EchoTakesAnything(ReferenceSource):
    """Lists ``echo`` without its parameters, so a toolkit cannot refuse a bad input."""

    async def discover(self) -> Sequence[at.ToolDefinition]:
        echo = at.ToolDefinition(name="echo", description="", input_schema={"type": "object"})
        return [echo, *DEFINITIONS[1:]]

    async def echo(self, input: at.JsonObject) -> at.JsonValue:
        return {"text": str(input.get("text"))}


class NamesClashInAnAssembly(ReferenceSource):
    """Lists two more tools, whose distinct names become one model-facing name."""

    async def discover(self) -> Sequence[at.ToolDefinition]:
        clashing = [
            at.ToolDefinition(name=name, description="", input_schema={"type": "object"})
            for name in ("get.item", "get_item")
        ]
        return [*await super().discover(), *clashing]


class LifespanFails(ReferenceSource):
    @asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        if self.state == "working":
            raise at.UnavailableError(source=self.name, message="cannot start")
        yield
