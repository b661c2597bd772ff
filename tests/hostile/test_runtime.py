"""A caller that leaves, a source that will not stop: neither holds the process."""

from __future__ import annotations

import logging
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

import anyio
import pytest

import amends_toolkit as at

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Sequence

pytestmark = pytest.mark.anyio

SCHEMA: at.JsonObject = {"type": "object"}


class Writes:
    """``gate`` waits for ``release``; ``leave`` cancels ``leaving`` as it starts, which is the
    moment a worker has just taken it from the mailbox; ``write`` records that it ran."""

    name = "writes"

    def __init__(self) -> None:
        self.release = anyio.Event()
        self.leaving: anyio.CancelScope | None = None
        self.written: list[object] = []

    async def discover(self) -> Sequence[at.ToolDefinition]:
        return [
            at.ToolDefinition(name=name, description=name, input_schema=SCHEMA)
            for name in ("gate", "leave", "write")
        ]

    async def call(self, tool: str, input: at.JsonObject) -> at.JsonValue:
        if tool == "gate":
            await self.release.wait()
        elif tool == "leave":
            assert self.leaving is not None
            self.leaving.cancel()
        else:
            self.written.append(input.get("n"))
        return None


async def write(ref: at.ActorRef, scope: anyio.CancelScope, n: int) -> None:
    with scope:
        await ref.call("write", {"n": n})


async def cancel_callers_as_a_worker_takes_a_message(rounds: int) -> None:
    source = Writes()
    async with at.Runtime() as runtime:
        ref = await runtime.spawn(source, max_concurrency=1, mailbox_size=1)
        for n in range(rounds):
            source.release = anyio.Event()
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(ref.call, "gate", {})  # the one worker is busy
                await anyio.wait_all_tasks_blocked()
                tasks.start_soon(ref.call, "leave", {})  # the mailbox is full
                await anyio.wait_all_tasks_blocked()
                source.leaving = anyio.CancelScope()
                tasks.start_soon(write, ref, source.leaving, n)  # waits for room
                await anyio.wait_all_tasks_blocked()
                # The worker ends `gate`, takes `leave` (making room for `write`), and `leave`
                # cancels the caller of `write` before that caller runs again.
                source.release.set()
        await anyio.wait_all_tasks_blocked()
        assert ref.statistics().in_flight == 0
        assert ref.statistics().queued == 0
    assert source.written == []


@pytest.mark.virtual_clock
async def test_a_thousand_callers_cancelled_as_a_worker_takes_a_message_leave_no_call_running() -> (
    None
):
    await cancel_callers_as_a_worker_takes_a_message(1_000)


async def test_on_asyncio_callers_cancelled_as_a_worker_takes_a_message_leave_no_call_running() -> (
    None
):
    # anyio's wait_all_tasks_blocked polls every 0.1 s on asyncio: a few rounds only.
    await cancel_callers_as_a_worker_takes_a_message(5)


class Stubborn:
    """A source whose call and lifespan ignore cancellation until ``release``."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.release = anyio.Event()
        self.started = anyio.Event()

    async def discover(self) -> Sequence[at.ToolDefinition]:
        return []

    async def call(self, tool: str, input: at.JsonObject) -> at.JsonValue:
        self.started.set()
        with anyio.CancelScope(shield=True):
            await self.release.wait()
        return "late"

    @asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        try:
            yield
        finally:
            with anyio.CancelScope(shield=True):
                await self.release.wait()


@pytest.mark.virtual_clock
async def test_leaving_a_runtime_is_bounded_when_a_source_ignores_cancellation(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.ERROR, logger="amends_toolkit")
    stubborn, other = Stubborn("stubborn"), Stubborn("other")
    outcomes: list[str] = []

    async def call(ref: at.ActorRef) -> None:
        with pytest.raises(at.UnavailableError):
            await ref.call("wait", {})
        outcomes.append(ref.name)

    try:
        with anyio.fail_after(60):  # broken, the runtime would wait for ever: fail instead
            async with anyio.create_task_group() as callers:
                async with at.Runtime(grace=3.0) as runtime:
                    refs = [await runtime.spawn(stubborn), await runtime.spawn(other)]
                    for ref in refs:
                        callers.start_soon(call, ref)
                    await stubborn.started.wait()
                    await other.started.wait()
                    left_at = anyio.current_time()
                # Both were waited for at once, for the grace only; their callers are answered.
                assert anyio.current_time() - left_at == pytest.approx(3.0)
    finally:
        stubborn.release.set()
        other.release.set()
    assert sorted(outcomes) == ["other", "stubborn"]
    abandoned = [r for r in caplog.records if r.getMessage() == "actor.abandoned"]
    assert sorted(r.__dict__["source"] for r in abandoned) == ["other", "stubborn"]
    await anyio.wait_all_tasks_blocked()
