"""What hosts and source authors need to test code built on amends-toolkit, shipped with it
(as ``trio.testing`` and ``httpx.MockTransport`` are): in-process sources that record and
script their calls, a policy that allows every tool, and a virtual clock.

    from amends_toolkit.testing import Gate, RecordingSource, allow_all, define

    source = RecordingSource("db", {"slow": Gate()})
    toolkit = at.assemble([at.Member(source, await source.discover())], allow_all)
    assert await toolkit.call("db__read", {"id": 1}) == {"source": "db", "tool": "read", ...}

A timeout is tested in milliseconds on trio's virtual clock, through anyio's pytest plugin::

    @pytest.fixture
    def anyio_backend():
        return virtual_clock()
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final, TypeAlias

import anyio

from amends_toolkit._definitions import Annotations, ToolDefinition

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Sequence

    from amends_toolkit._definitions import Decision
    from amends_toolkit._json import JsonObject, JsonValue

__all__ = (
    "OPEN",
    "Behaviour",
    "Gate",
    "RecordingSource",
    "allow_all",
    "define",
    "raising",
    "virtual_clock",
)

OPEN: Final[JsonObject] = {"type": "object"}
"""An input schema that takes any object."""

Behaviour: TypeAlias = "Callable[[JsonObject], Awaitable[JsonValue]]"
"""What one tool of a :class:`RecordingSource` does with its input."""


def define(
    name: str,
    schema: JsonObject | None = None,
    *,
    description: str | None = None,
    read_only: bool | None = None,
) -> ToolDefinition:
    """A tool's definition: an open schema unless one is given, ``"the <name> tool"`` unless a
    description is."""
    return ToolDefinition(
        name=name,
        description=f"the {name} tool" if description is None else description,
        input_schema=OPEN if schema is None else schema,
        annotations=Annotations(read_only=read_only),
    )


class RecordingSource:
    """A source that records every call (``calls``, ``discovers``); a tool answers
    ``{"source", "tool", "input"}`` unless a behaviour is given for it (which may raise, or wait
    on events, see :class:`Gate`). It discovers one open tool per behaviour, or ``tools``.

    It declares ``honours_cancellation``, as every built-in source does, so that under a
    ``Runtime`` it runs as they do (its calls inline when the actor has room, its child in the
    Runtime's task group); the declaration holds while no behaviour shields itself from
    cancellation. ``honours_cancellation=False`` makes it a host's source that does not declare
    it (its calls through the mailbox, its child detached)."""

    def __init__(
        self,
        name: str,
        behaviours: dict[str, Behaviour] | None = None,
        *,
        tools: Sequence[ToolDefinition] | None = None,
        honours_cancellation: bool = True,
    ) -> None:
        self.name = name
        self.behaviours = behaviours or {}
        self.tools = tools
        self.honours_cancellation = honours_cancellation
        self.calls: list[tuple[str, JsonObject]] = []
        self.discovers = 0

    async def discover(self) -> Sequence[ToolDefinition]:
        self.discovers += 1
        if self.tools is not None:
            return self.tools
        return [define(tool) for tool in self.behaviours]

    async def call(self, tool: str, input: JsonObject) -> JsonValue:
        self.calls.append((tool, input))
        behaviour = self.behaviours.get(tool)
        if behaviour is None:
            return {"source": self.name, "tool": tool, "input": input}
        return await behaviour(input)


class Gate:
    """A behaviour that waits for ``release`` (an event), counting the calls running and those
    cancelled; ``started`` is set once a call began."""

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
    """A behaviour that raises ``error`` (a ``ToolSourceError`` reason, or a defect)."""

    async def behaviour(input: JsonObject) -> JsonValue:
        raise error

    return behaviour


def allow_all(source: str, definition: ToolDefinition) -> Decision:
    """A policy that allows every tool."""
    return "allow"


def virtual_clock() -> tuple[str, dict[str, object]]:
    """anyio's backend for a test on trio's virtual clock: time passes only while every task
    waits, at once (a minute's timeout ends in microseconds). Needs ``trio``.

    Return it from an ``anyio_backend`` fixture.
    """
    from trio.testing import MockClock

    return ("trio", {"clock": MockClock(autojump_threshold=0)})
