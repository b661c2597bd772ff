"""What both MCP sources share (``actors/_mcp_core.py``): here, the holder's own exception of a
lifespan, which comes out as itself, not in the exception group of the task groups inside."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import httpx
import pytest

import amends_toolkit as at
from amends_toolkit.actors._mcp_core import raised_as_itself

pytestmark = [pytest.mark.anyio, pytest.mark.both_backends]

SERVERS = Path(__file__).parent / "servers"


async def test_the_holders_exception_comes_out_of_the_task_group_as_itself() -> None:
    with pytest.raises(at.UnavailableError), raised_as_itself() as holder:  # noqa: PT012 - raised inside the group
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(anyio.sleep_forever)
            with holder.hold(tasks):
                raise at.UnavailableError(source="demo", message="gone")


async def test_a_failing_task_is_what_comes_out() -> None:
    async def fail() -> None:
        raise ValueError("the task's own")

    with pytest.RaisesGroup(ValueError), raised_as_itself() as holder:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(fail)
            with holder.hold(tasks):
                await anyio.sleep_forever()


async def test_cancellation_goes_through_the_holder() -> None:
    with anyio.move_on_after(0) as scope, raised_as_itself() as holder:
        async with anyio.create_task_group() as tasks:
            with holder.hold(tasks):
                await anyio.sleep_forever()
    assert scope.cancelled_caught
    assert holder.raised is None


async def test_the_lifespans_tasks_are_cancelled_when_the_holder_leaves() -> None:
    # The bound only turns a broken rule (tasks left running) into a failure, not a hang.
    with anyio.fail_after(10), raised_as_itself() as holder:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(anyio.sleep_forever)
            with holder.hold(tasks):
                pass
    assert tasks.cancel_scope.cancel_called


async def test_the_http_sources_lifespan_raises_the_holders_exception_as_itself() -> None:
    def unused(request: httpx.Request) -> httpx.Response:
        raise AssertionError("the lifespan alone sends nothing")

    async with httpx.AsyncClient(transport=httpx.MockTransport(unused)) as client:
        source = at.mcp.http(name="demo", url="http://127.0.0.1:8000/mcp", client=client)
        with pytest.raises(at.UnavailableError):
            async with source.lifespan():
                raise at.UnavailableError(source="demo", message="gone")


async def test_the_stdio_sources_lifespan_raises_the_holders_exception_as_itself() -> None:
    source = at.mcp.stdio(
        name="scripted",
        command=sys.executable,
        args=[str(SERVERS / "scripted_stdio_server.py")],
        timeout=10.0,
    )
    with pytest.raises(at.UnavailableError):
        async with source.lifespan():
            raise at.UnavailableError(source="scripted", message="gone")
