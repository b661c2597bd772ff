"""An MCP source over HTTP relays ``notifications/tools/list_changed``, in both eras, from the
official SDK's server (``subscriptions/listen`` in 2026-07-28, a session's GET stream before)."""

from __future__ import annotations

import itertools
import json
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


def listening_peer(
    listen: httpx.Response | None, opened: list[float], enough: anyio.Event
) -> httpx.MockTransport:
    """A 2026-07-28 peer whose ``subscriptions/listen`` answers ``listen`` at once (``None``:
    the connection fails), noting the (virtual) time of each; scripted, as only the timing of
    the reopening is under test."""

    async def handle(request: httpx.Request) -> httpx.Response:
        method = request.headers.get("mcp-method")
        if method == "server/discover":
            body = json.loads(request.content)
            result = {"supportedVersions": ["2026-07-28"]}
            return httpx.Response(200, json={"jsonrpc": "2.0", "id": body["id"], "result": result})
        assert method == "subscriptions/listen"
        opened.append(anyio.current_time())
        if len(opened) == 5:
            enough.set()
        if listen is None:
            raise httpx.ConnectError("refused", request=request)
        return listen

    return httpx.MockTransport(handle)


@pytest.mark.virtual_clock
@pytest.mark.parametrize(
    ("listen", "waits"),
    [
        # a stream that ends is opened again after listen_retry
        (httpx.Response(200, headers={"content-type": "text/event-stream"}), [3, 3, 3, 3]),
        # one that fails, after a wait that doubles up to listen_retry_max
        (None, [6, 10, 10, 10]),
    ],
)
async def test_a_stream_is_opened_again_after_the_waits_the_source_was_given(
    listen: httpx.Response | None, waits: list[float]
) -> None:
    opened: list[float] = []
    enough = anyio.Event()
    transport = listening_peer(listen, opened, enough)
    async with httpx.AsyncClient(transport=transport) as client:
        source = at.mcp.http(
            name="peer",
            url="http://peer.test/mcp",
            client=client,
            on_list_changed=lambda: None,
            listen_retry=3.0,
            listen_retry_max=10.0,
        )
        with anyio.fail_after(100):
            async with source.lifespan():
                await enough.wait()
    assert [round(b - a, 3) for a, b in itertools.pairwise(opened)] == waits


@pytest.mark.parametrize(
    ("options", "problem"),
    [
        ({"listen_retry": 0}, "listen_retry must be a positive number of seconds"),
        ({"listen_retry_max": float("inf")}, "listen_retry_max must be a positive number"),
        ({"listen_retry": 5.0, "listen_retry_max": 2.0}, "must not be longer than"),
    ],
)
async def test_the_reopening_waits_are_checked(options: dict[str, float], problem: str) -> None:
    retry = {"listen_retry": 1.0, "listen_retry_max": 60.0} | options
    async with httpx.AsyncClient() as client:
        with pytest.raises(ValueError, match=problem):
            at.mcp.http(
                name="peer",
                url="http://peer.test/mcp",
                client=client,
                listen_retry=retry["listen_retry"],
                listen_retry_max=retry["listen_retry_max"],
            )
