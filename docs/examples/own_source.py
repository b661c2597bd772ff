"""A source of your own, in one class, and the conformance suites run against it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

import anyio
import anyio.lowlevel

import amends_toolkit as at
from amends_toolkit import conformance


# --8<-- [start:source]
class Notebook:
    """The three tools the suites call, kept in this process (a real source reaches a system)."""

    # A cancelled call ends at once: it may run inline, and its actor in the runtime's task group.
    honours_cancellation = True

    def __init__(self, name: str, log: conformance.BlockingLog) -> None:
        self.name = name
        self.log = log

    async def discover(self) -> Sequence[at.ToolDefinition]:
        await anyio.lowlevel.checkpoint()
        any_input: at.JsonObject = {"type": "object", "properties": {}}
        return [
            at.ToolDefinition(
                name="echo",
                description="Answers with the text it is given.",
                input_schema={
                    "type": "object",
                    "properties": {"text": {"type": "string"}},
                    "required": ["text"],
                    "additionalProperties": False,
                },
                annotations=at.Annotations(read_only=True),
            ),
            at.ToolDefinition(name="failing", description="Fails.", input_schema=any_input),
            at.ToolDefinition(name="blocking", description="Waits.", input_schema=any_input),
        ]

    async def call(self, tool: str, input: at.JsonObject) -> at.JsonValue:
        await anyio.lowlevel.checkpoint()
        if tool == "echo":
            return {"text": input["text"]}
        if tool == "failing":
            raise at.CallFailedError(source=self.name, message="the tool failed, as it does")
        if tool == "blocking":
            with self.log.call():  # the suites see it arrive, and stop when cancelled
                await anyio.sleep_forever()
        raise at.NotFoundError(source=self.name, message=f"no tool {tool!r}")


# --8<-- [end:source]


# --8<-- [start:fixture]
class NotebookFixture:
    """Makes the source in the states its system can be put in: here only "working"."""

    states: tuple[conformance.State, ...] = (
        "working",
    )  # the checks that need "unauthorized", "unavailable"... are skipped
    secrets = ("notebook-token",)  # what no model may read: credentials, addresses

    def __init__(self) -> None:
        self.log = conformance.BlockingLog()

    def blocking_calls(self) -> conformance.BlockingCalls:
        return self.log.counts()

    @asynccontextmanager
    async def source(self, state: conformance.State) -> AsyncIterator[at.ToolSource]:
        yield Notebook("notebook", self.log)


async def main() -> None:
    results = await conformance.run(NotebookFixture())  # AssertionError names each failure
    print(len(results.passed), "checks passed;", len(results.skipped), "skipped")


# --8<-- [end:fixture]


if __name__ == "__main__":
    anyio.run(main)
