"""An MCP source over HTTP relays ``notifications/tools/list_changed``, in both eras, from the
official SDK's server (``subscriptions/listen`` in 2026-07-28, a session's GET stream before)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
import httpx
import pytest
import uvicorn
from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from starlette.types import ASGIApp

import amends_toolkit as at

from .test_mcp_http import sessions_only

pytestmark = pytest.mark.anyio


def growing_app(*, only_sessions: bool) -> ASGIApp:
    server = MCPServer("growing")

    @server.tool()
    async def grow(ctx: Context) -> str:
        """Add a tool and say that the tools changed."""

        def added() -> str:
            """A tool that was not there at first."""
            return "added"

        server.add_tool(added)
        await ctx.notify_tools_changed()  # 2026-07-28: subscriptions/listen streams
        await ctx.session.send_tool_list_changed()  # sessions: the standalone GET stream
        return "grown"

    app: ASGIApp = server.streamable_http_app()
    return sessions_only(app) if only_sessions else app


@pytest.fixture(params=["modern", "session"])
async def url(request: pytest.FixtureRequest) -> AsyncIterator[str]:
    """The server under uvicorn on 127.0.0.1 (streams need a real server, not ASGITransport)."""
    app = growing_app(only_sessions=request.param == "session")
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(server.serve)
        while not server.started:  # noqa: ASYNC110 - uvicorn offers no event to wait on
            await anyio.sleep(0.01)
        yield f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}/mcp"
        server.should_exit = True


async def test_the_source_tells_the_host_when_the_servers_tools_change(url: str) -> None:
    changed = anyio.Event()
    async with httpx.AsyncClient() as client, at.Runtime() as runtime:
        source = await runtime.spawn(
            at.mcp.http(name="growing", url=url, client=client, on_list_changed=changed.set)
        )
        assert [d.name for d in await source.discover()] == ["grow"]
        with anyio.fail_after(20):
            # The stream opens while the actor runs; a call made before it is open is not heard.
            while not changed.is_set():
                await source.call("grow", {})
                with anyio.move_on_after(0.5):
                    await changed.wait()
        assert "added" in [d.name for d in await source.discover()]


async def test_without_a_listener_the_source_opens_no_stream(url: str) -> None:
    requests: list[str] = []

    async def record(request: httpx.Request) -> None:
        requests.append(f"{request.method} {request.headers.get('mcp-method', '')}")

    async with (
        httpx.AsyncClient(event_hooks={"request": [record]}) as client,
        at.Runtime() as runtime,
    ):
        source = await runtime.spawn(at.mcp.http(name="growing", url=url, client=client))
        await source.discover()
    assert not any("subscriptions/listen" in r or r.startswith("GET") for r in requests)
