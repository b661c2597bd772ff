"""In-process tool sources for the runtime's tests, each scripted by events, never by sleeps."""

from __future__ import annotations

from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

import anyio

import amends_toolkit as at
from amends_toolkit import JsonObject, JsonValue

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Sequence

SCHEMA: JsonObject = {"type": "object", "properties": {"text": {"type": "string"}}}


class Scripted:
    """``echo`` answers its text; ``wait`` waits for ``release``; ``boom`` is a defect;
    ``fail`` raises CallFailedError; ``stubborn`` ignores cancellation until ``release``. Each call
    records its tool, its text and the task it ran in."""

    def __init__(self, name: str = "scripted") -> None:
        self.name = name
        self.release = anyio.Event()
        self.started = 0
        self.cancelled = 0
        self.calls: list[str] = []
        self.texts: list[object] = []
        self.tasks: list[int] = []
        self.discovers = 0

    async def discover(self) -> Sequence[at.ToolDefinition]:
        self.discovers += 1
        return [
            at.ToolDefinition(name=tool, description=f"the {tool} tool", input_schema=SCHEMA)
            for tool in ("echo", "wait", "boom", "fail", "stubborn")
        ]

    async def call(self, tool: str, input: JsonObject) -> JsonValue:
        self.calls.append(tool)
        self.texts.append(input.get("text"))
        self.tasks.append(anyio.get_current_task().id)
        if tool == "echo":
            return {"text": input.get("text")}
        if tool == "wait":
            self.started += 1
            try:
                await self.release.wait()
            except anyio.get_cancelled_exc_class():
                self.cancelled += 1
                raise
            return "released"
        if tool == "boom":
            raise RuntimeError("a bug in the source")
        if tool == "fail":
            raise at.CallFailedError(source=self.name, message="it failed, as asked")
        if tool == "stubborn":
            self.started += 1
            with anyio.CancelScope(shield=True):
                await self.release.wait()
            return "late"
        raise at.NotFoundError(source=self.name, message=f"no tool {tool}")


class Honouring(Scripted):
    """A scripted source that declares it honours cancellation, as every built-in source does
    (its ``stubborn`` tool does not, for the tests of what a false declaration costs)."""

    honours_cancellation = True


class Crashing(Scripted):
    """A source whose lifespan runs a task that crashes when ``crash`` is set."""

    def __init__(self) -> None:
        super().__init__("crashing")
        self.crash = anyio.Event()
        self.entered = 0
        self.left = 0

    @asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        self.entered += 1
        self.crash = anyio.Event()

        async def watch() -> None:
            await self.crash.wait()
            raise OSError("the process died")

        try:
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(watch)
                yield
                tasks.cancel_scope.cancel()
        finally:
            self.left += 1


class Ending(Scripted):
    """A source whose lifespan ends by itself, normally (``NormalExit``) when ``end`` is set, or
    by a crash when ``crash`` is set; it counts its incarnations."""

    def __init__(self) -> None:
        super().__init__("ending")
        self.end = anyio.Event()
        self.crash = anyio.Event()
        self.entered = 0

    @asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        self.entered += 1
        self.end, self.crash = anyio.Event(), anyio.Event()

        async def watch() -> None:
            async with anyio.create_task_group() as either:

                async def ended() -> None:
                    await self.end.wait()
                    raise at.runtime.NormalExit

                async def crashed() -> None:
                    await self.crash.wait()
                    raise OSError("the process died")

                either.start_soon(ended)
                either.start_soon(crashed)

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(watch)
            yield
            tasks.cancel_scope.cancel()


class SlowToLeave(Scripted):
    """A source whose lifespan takes ``seconds`` to leave (shielded, as a bounded cleanup is),
    or never leaves until ``release`` is set when ``seconds`` is None."""

    def __init__(self, name: str, seconds: float | None) -> None:
        super().__init__(name)
        self.seconds = seconds
        self.left = False

    @asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        try:
            yield
        finally:
            with anyio.CancelScope(shield=True):
                if self.seconds is None:
                    await self.release.wait()
                else:
                    await anyio.sleep(self.seconds)
            self.left = True
