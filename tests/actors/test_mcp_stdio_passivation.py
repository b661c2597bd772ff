"""A passivated stdio source stops its server's process, and its next call starts another:
the scripted server (``servers/scripted_stdio_server.py``) as a real subprocess."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

import anyio
import pytest

import amends_toolkit as at

from .test_mcp_stdio import scripted

pytestmark = pytest.mark.anyio


class Watched:
    """A source over another whose lifespan tells when each incarnation has left it."""

    honours_cancellation = True

    def __init__(self, inner: at.ToolSource) -> None:
        self.inner = inner
        self.name = inner.name
        self.left: list[anyio.Event] = []

    async def discover(self) -> Sequence[at.ToolDefinition]:
        return await self.inner.discover()

    async def call(self, tool: str, input: at.JsonObject) -> at.JsonValue:
        return await self.inner.call(tool, input)

    @asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        left = anyio.Event()
        self.left.append(left)
        try:
            async with self.inner.lifespan():  # type: ignore[attr-defined]
                yield
        finally:
            left.set()


def pid_of(answer: at.JsonValue) -> int:
    assert isinstance(answer, dict)
    pid = answer["pid"]
    assert isinstance(pid, int)
    return pid


async def test_a_passivated_stdio_source_stops_its_process_and_its_next_call_starts_another() -> (
    None
):
    source = Watched(scripted())
    async with at.Runtime() as runtime:
        # Short, so the test waits little: what it waits for is the lifespan's end, not a time.
        ref = await runtime.spawn(source, idle_timeout=0.05)
        first = pid_of(await ref.call("pid", {}))
        with anyio.fail_after(30):  # a guard against a hang, not a measure
            await source.left[0].wait()
        await anyio.wait_all_tasks_blocked()
        assert ref.statistics().state == "passivated"
        # The process has ended and been waited for: its id names no process now.
        with pytest.raises(ProcessLookupError):
            os.kill(first, 0)
        second = pid_of(await ref.call("pid", {}))
        assert second != first
        stats = ref.statistics()
        assert (stats.restarts, stats.passivations, len(source.left)) == (0, 1, 2)
